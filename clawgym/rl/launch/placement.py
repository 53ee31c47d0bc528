"""The placement plan: which process gets which GPUs, how weights travel, and what each GPU holds.

Computed from the config alone (no GPU, no model download), so ``clawgym train CONFIG --check`` can
validate a GPU launcher on a laptop. The builder places processes from the same plan, so what
``--check`` prints is what runs. The CPU run is the smallest placement: one process, no GPU. Each role's
model (the served policy, the trainer's copy, a judge of its own) is resolved here once, with its dtype and
device (:class:`ModelSpec`), and the builder loads what the plan says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clawgym.inference.catalog import DEFAULT_MODEL, MODELS, default_dtype
from clawgym.rl.launch.schema import ConfigError, RunConfig, uses_llm_judge

GIB = 1024**3

# The published configs of the names clawgym.inference.models knows (no file needed to size them).
KNOWN_SHAPES: dict[str, dict[str, Any]] = {name: dict(info.shape) for name, info in MODELS.items()}


@dataclass
class Shape:
    """Enough of an HF config to count parameters."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    tie_word_embeddings: bool
    qkv_bias: bool = False  # Qwen2 has biases on q/k/v


    @classmethod
    def of(cls, model: str) -> "Shape":
        """The shape of a model alias or an HF checkpoint directory (its config.json)."""
        if model in KNOWN_SHAPES:
            return cls(**KNOWN_SHAPES[model])
        config_file = Path(model) / "config.json"
        if not config_file.is_file():
            raise ConfigError(f"model {model!r}: not a known name ({', '.join(KNOWN_SHAPES)}) and no config.json "
                              "found there; give an HF checkpoint directory")
        raw = json.loads(config_file.read_text())
        raw = raw.get("text_config", raw)
        try:
            return cls(**{name: raw.get(name, raw.get("num_attention_heads") if name == "num_key_value_heads" else None)
                          for name in cls.__dataclass_fields__ if name not in ("tie_word_embeddings", "qkv_bias")},
                       tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
                       qkv_bias=raw.get("model_type") == "qwen2")
        except TypeError as exc:
            raise ConfigError(f"{config_file}: cannot size the model ({exc})") from None

    def linear_params(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer in one decoder layer, by HF module name."""
        h, f = self.hidden_size, self.intermediate_size
        kv = h // self.num_attention_heads * self.num_key_value_heads
        return {"q_proj": (h, h), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (h, h),
                "gate_proj": (h, f), "up_proj": (h, f), "down_proj": (f, h)}

    def params(self) -> int:
        linear = self.linear_params()
        biases = sum(linear[name][1] for name in ("q_proj", "k_proj", "v_proj")) if self.qkv_bias else 0
        per_layer = sum(i * o for i, o in linear.values()) + 2 * self.hidden_size + biases
        embed = self.vocab_size * self.hidden_size
        return self.num_hidden_layers * per_layer + embed * (1 if self.tie_word_embeddings else 2) + self.hidden_size

    def lora_params(self, r: int, targets: list[str]) -> int:
        wanted = {t.split(".")[-1] for t in targets}
        return self.num_hidden_layers * sum(r * (i + o)
                                            for name, (i, o) in self.linear_params().items() if name in wanted)


# What the SGLang launch needs to stretch a known model's window: (max_position_embeddings, rope_theta).
KNOWN_ROPE: dict[str, tuple[int, float]] = {name: (info.context_window, info.rope_theta)
                                             for name, info in MODELS.items() if info.has_checkpoint}


def rope_of(model: str) -> tuple[int, float]:
    """(native window, RoPE base) of a model alias or an HF checkpoint directory (its config.json)."""
    if model in KNOWN_ROPE:
        return KNOWN_ROPE[model]
    config_file = Path(model) / "config.json"
    if not config_file.is_file():
        raise ConfigError(f"policy.context_window: cannot read the native window of {model!r} (no config.json there)")
    raw = json.loads(config_file.read_text())
    raw = raw.get("text_config", raw)
    theta = (raw.get("rope_parameters") or {}).get("rope_theta") or raw.get("rope_theta") or 10000.0
    return int(raw["max_position_embeddings"]), float(theta)


def sglang_policy_args(config: RunConfig) -> list[str]:
    """What the policy server's launch adds to ``gpu.sglang_args`` (SGLang 0.5.23's server arguments):
    LoRA serving when ``trainer.lora.export`` is adapter, and the YaRN window of ``policy.context_window``
    (the same rope settings the hf policy uses, :func:`~clawgym.inference.models.extend_context`)."""
    args: list[str] = []
    lora = config.trainer.lora
    if lora.enabled and lora.export == "adapter":
        targets = sorted({t.split(".")[-1] for t in lora.target_modules})
        args += ["--enable-lora", "--max-lora-rank", str(lora.r), "--lora-target-modules", *targets]
    window = config.policy.context_window
    if window:
        native, theta = rope_of(config.policy.model)
        if window > native and config.gpu.backend == "megatron+sglang":
            raise ConfigError(f"policy.context_window={window} stretches the model's {native}-token window with YaRN, "
                              "which the megatron trainer does not apply (its logprobs would not match the server's): "
                              "use gpu.backend torch+sglang, or drop policy.context_window")
        if window > native:  # within the native window there is nothing to stretch (as for the hf policy)
            from clawgym.inference.models import yarn_rope_parameters

            override = {"max_position_embeddings": int(window),
                        "rope_scaling": yarn_rope_parameters(theta, native, window)}
            args += ["--context-length", str(window), "--json-model-override-args",
                     json.dumps(override, separators=(",", ":"))]
    clash = sorted({a for a in args if a.startswith("--")} & set(config.gpu.sglang_args))
    if clash:
        raise ConfigError(f"gpu.sglang_args sets {', '.join(clash)}, which the launch derives from trainer.lora / "
                          "policy.context_window: remove it from gpu.sglang_args")
    return args


@dataclass
class Role:
    """One kind of process and the GPUs it owns (``(node, local index)``)."""

    name: str
    what: str
    gpus: list[tuple[int, int]] = field(default_factory=list)
    memory_gib: float = 0.0
    memory_note: str = ""


@dataclass(frozen=True)
class ModelSpec:
    """A model as one role holds it, resolved once from the config by :func:`plan` and passed down to whoever
    loads it: ``name`` (a catalog name or an HF checkpoint directory; ``judge.model: policy`` is already the
    policy's), ``dtype`` (a torch dtype's name) and ``device`` (where an in-process copy is loaded; an SGLang
    server's GPUs are its role's)."""

    name: str
    dtype: str
    device: str
    seed: int = 0  # the weights of a random-init test model (policy.seed); a checkpoint's are its own
    context_window: int | None = None  # policy.context_window: above the model's own, stretched with YaRN
    quantize: str = "none"  # policy.quantize of the served in-process copy (int8); the trainer's keeps its own


@dataclass
class Plan:
    placement: str  # cpu | one-gpu | partition | multi-node
    roles: list[Role]
    transport: str  # inproc | tensor | nccl | disk | adapter (trainer.lora.export: adapter)
    transport_note: str
    model: str
    params: int
    gpus_needed: int
    num_layers: int  # the policy's decoder layers (where trainer.lora.top_layers places its adapters)
    notes: list[str] = field(default_factory=list)
    sglang_args: list[str] = field(default_factory=list)  # the policy server's, beyond gpu.sglang_args and --tp-size
    served_model: ModelSpec | None = None  # the policy as served: the hf policy's, or the SGLang server's
    trained_model: ModelSpec | None = None  # the trainer's copy of the policy
    judge_model: ModelSpec | None = None  # a judge model of its own (None: the policy judges, an API does, or none)
    # what writes hindsight's prompted siblings, in process (serve.hindsight_prompted_model; None: the served policy)
    prompted_model: ModelSpec | None = None

    def role(self, name: str) -> Role | None:
        return next((r for r in self.roles if r.name == name), None)


def resolve_model(config: RunConfig, name: str) -> str:
    """``policy`` -> the policy's model name."""
    if name == "policy":
        name = config.policy.model
    return name


def serves_in_process(config: RunConfig) -> bool:
    """Whether the policy is served by the in-process hf model (else by an SGLang server the builder places)."""
    return not (config.gpu.enabled or config.policy.backend != "hf")


def in_process_judge(config: RunConfig) -> ModelSpec | None:
    """The judge model the in-process placement loads beside the policy (``judge.backend: hf`` and a
    ``judge.model`` other than ``policy``), in the model's own dtype on the policy's device; else None."""
    return _beside_policy(config)[0]


def _beside_policy(config: RunConfig) -> tuple[ModelSpec | None, ModelSpec | None]:
    """(judge, prompted): the models the in-process placement may load beside the policy, each in its own dtype
    on the policy's device: a judge model of its own (``judge.backend: hf``, a ``judge.model`` other than
    ``policy``) and the one that writes hindsight's prompted siblings (``serve.hindsight_prompted_model`` with
    ``serve.hindsight_prompted`` set); None where there is none."""
    serve, judge, device = config.serve, config.judge, config.policy.device
    prompted = resolve_model(config, serve.hindsight_prompted_model) if serve.hindsight_prompted else ""
    own = judge.model if uses_llm_judge(config) and judge.backend != "openai" and judge.model != "policy" else ""
    return (ModelSpec(own, default_dtype(own, device), device) if own else None,
            ModelSpec(prompted, default_dtype(prompted, device), device) if prompted else None)


def sglang_model_path(name: str) -> str:
    """What SGLang's ``--model-path`` gets for a model name: a checkpoint directory."""
    if name in MODELS and MODELS[name].has_checkpoint:
        from clawgym.inference.models import checkpoint_dir

        return str(checkpoint_dir(name))
    if name in MODELS:
        raise ConfigError(f"model {name!r} exists only in process; SGLang needs a checkpoint directory "
                          f"(policy.model / judge.model: {DEFAULT_MODEL}, another packaged model, or a path)")
    return name


def _trainer_bytes_per_param(config: RunConfig, trained: ModelSpec) -> tuple[float, float, str]:
    """(bytes per frozen param, bytes per trained param, what they hold)."""
    if config.gpu.enabled and config.gpu.backend == "megatron+sglang":
        return 2.0, 18.0, "bf16 weights, fp32 grads + master + Adam"
    width = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0}[trained.dtype]
    return width, width * 2 + 8.0, f"{trained.dtype} weights + grads, fp32 Adam"


def _models(config: RunConfig, device: str) -> dict[str, ModelSpec | None]:
    """The plan's models by field: served, trained, judge (and in process the prompted siblings'). In process both
    copies of the policy are loaded alike (``policy.dtype`` on ``policy.device``). On the GPU partition SGLang serves
    bfloat16, the torch trainer loads ``policy.dtype`` on the first actor GPU of ``device`` and megatron-core holds
    bfloat16 weights; a judge server serves bfloat16."""
    policy = config.policy
    loaded = dict(seed=policy.seed, context_window=policy.context_window)  # both in-process copies load alike
    if not config.gpu.enabled:
        trained = ModelSpec(policy.model, policy.dtype, policy.device, **loaded)
        judge, prompted = _beside_policy(config)
        return dict(served_model=replace(trained, quantize=policy.quantize), trained_model=trained, judge_model=judge,
                    prompted_model=prompted)
    trainer_device = f"{device}:0" if device == "cuda" else device
    trained_dtype = policy.dtype if config.gpu.backend == "torch+sglang" else "bfloat16"
    judge = None
    if uses_llm_judge(config) and config.judge.model != "policy":
        judge = ModelSpec(config.judge.model, "bfloat16", device)
    trained = ModelSpec(policy.model, trained_dtype, trainer_device, **loaded)
    return dict(served_model=ModelSpec(policy.model, "bfloat16", device), trained_model=trained, judge_model=judge)


def plan(config: RunConfig, device: str = "cuda") -> Plan:
    """The placement for a validated config; raises ConfigError with what to change when it cannot run.

    ``device``: where the GPU partition's trainer and weight transport run (``cuda``; the tests build the same
    partition on ``cpu``); each role's model, dtype and device are resolved here (:class:`ModelSpec`).
    """
    gpu = config.gpu
    models = _models(config, device)
    served_model, trained_model, judge_model = models["served_model"], models["trained_model"], models["judge_model"]
    assert served_model is not None and trained_model is not None  # every placement serves and trains the policy
    shape = Shape.of(served_model.name)
    n = shape.params()
    lora = config.trainer.lora
    trained = shape.lora_params(lora.r, lora.target_modules) if lora.enabled else n
    frozen_b, trained_b, holds = _trainer_bytes_per_param(config, trained_model)
    if not gpu.enabled:
        if config.policy.backend != "hf":
            raise ConfigError(f"policy.backend {config.policy.backend!r} needs the gpu section (gpu.enabled: true); "
                              "without it use backend hf")
        on_gpu = served_model.device.startswith("cuda")
        serve_bytes = n * {"float32": 4, "bfloat16": 2, "float16": 2}[served_model.dtype]
        train_bytes = (n - trained) * frozen_b + trained * trained_b if lora.enabled else n * trained_b
        where = [(0, 0)] if on_gpu else []
        role = Role("actor", f"one process on {served_model.device}: hf policy (serving) + torch trainer"
                    + (" + judge (same model)" if uses_llm_judge(config) else ""), where,
                    (serve_bytes + train_bytes) / GIB, f"serving copy + trainer ({holds}) + activations")
        return Plan("one-gpu" if on_gpu else "cpu", [role], "inproc",
                    "in-process copy into the hf policy between two decoding steps", config.policy.model, n,
                    1 if on_gpu else 0, shape.num_hidden_layers,
                    [ray_note(config)] if config.rollout.executor == "ray" else [], **models)

    tp, pp = gpu.tensor_parallel, gpu.pipeline_parallel
    # the partition always serves with SGLang: policy.backend / device only choose the in-process placement
    colocated = gpu.rollout_gpus == 0
    transport = gpu.weight_transport
    if lora.enabled and lora.export == "adapter":
        transport = "adapter"  # the schema has checked weight_transport is auto
    elif transport == "auto":
        transport = "tensor" if colocated else "nccl"
    if transport == "tensor" and not colocated:
        raise ConfigError("gpu.weight_transport=tensor sends weights as tensors on the serving device, so SGLang must "
                          "share the actor GPUs: set gpu.rollout_gpus=0, or weight_transport=nccl")
    if transport == "nccl" and colocated:
        raise ConfigError("gpu.weight_transport=nccl needs SGLang on its own GPUs (gpu.rollout_gpus >= 1); "
                          "colocated (rollout_gpus: 0) use weight_transport=tensor")
    if judge_model is not None and gpu.judge_gpus == 0:
        raise ConfigError(f"judge.model {config.judge.model!r} is a separate model: give it GPUs (gpu.judge_gpus >= 1) "
                          "or set judge.model=policy to judge with the policy server")
    if gpu.judge_gpus and not uses_llm_judge(config):
        raise ConfigError(f"gpu.judge_gpus={gpu.judge_gpus} but judge.type {config.judge.type!r} runs no model: "
                          "set gpu.judge_gpus=0")
    need = gpu.actor_gpus + gpu.rollout_gpus + gpu.judge_gpus
    have = gpu.nodes * gpu.gpus_per_node
    if need != have:
        raise ConfigError(
            f"the GPU partition uses {need} GPUs (actor {gpu.actor_gpus} + rollout {gpu.rollout_gpus} + judge "
            f"{gpu.judge_gpus}) but gpu.nodes x gpu.gpus_per_node = {gpu.nodes} x {gpu.gpus_per_node} = {have}: "
            f"set the counts to add up to {have}, or "
            f"gpu.gpus_per_node={need // gpu.nodes if need % gpu.nodes == 0 else need}"
            + (" with gpu.nodes=1" if need % gpu.nodes else ""))
    if tp > gpu.gpus_per_node:
        raise ConfigError(f"gpu.tensor_parallel={tp} spans more than one node ({gpu.gpus_per_node} "
                          "GPUs): TP groups must "
                          "stay inside a node; lower tensor_parallel or use pipeline_parallel across nodes")
    slots = [(g // gpu.gpus_per_node, g % gpu.gpus_per_node) for g in range(have)]
    actor_gpus, rest = slots[: gpu.actor_gpus], slots[gpu.actor_gpus:]
    rollout_gpus, judge_gpus = rest[: gpu.rollout_gpus], rest[gpu.rollout_gpus:]
    dp = gpu.actor_gpus // (tp * pp)
    train_per_gpu = ((n - trained) * frozen_b + trained * trained_b) / (tp * pp)
    sglang_tp = max(1, len(rollout_gpus)) if not colocated else tp
    serve_per_gpu = 2.0 * n / sglang_tp
    trainer = "megatron-core" if gpu.backend == "megatron+sglang" else "torch (HF)"
    actor = Role("actor",
                 f"{trainer} trainer, TP={tp} PP={pp} DP={dp}" + (", LoRA r=%d" % lora.r if lora.enabled else "")
                 + (" + SGLang policy server (colocated)" if colocated else ""), actor_gpus,
                 (train_per_gpu + (serve_per_gpu if colocated else 0)) / GIB,
                 f"trainer: {holds}" + (f" for the {trained / 1e6:.1f}M adapter params, frozen base "
                                        f"{frozen_b:.0f} B/param" if lora.enabled else "") + " + activations"
                 + ("; SGLang bf16 weights + KV cache (mem-fraction-static)" if colocated else ""))
    roles = [actor]
    if not colocated:
        roles.append(Role("rollout", f"SGLang policy server, --tp-size {len(rollout_gpus)}", rollout_gpus,
                          serve_per_gpu / GIB, "bf16 weights; the rest of --mem-fraction-static is KV cache"))
    if judge_gpus:
        assert judge_model is not None  # judge_gpus without a model judge was refused above
        judge_shape = Shape.of(judge_model.name)
        roles.append(Role("judge",
                          f"SGLang judge server ({judge_model.name}, frozen), --tp-size {len(judge_gpus)}", judge_gpus,
                          2.0 * judge_shape.params() / len(judge_gpus) / GIB, "bf16 weights + KV cache"))
    notes = []
    if uses_llm_judge(config) and not judge_gpus:
        notes.append("the judge queries the policy server (judge.model: policy)")
    if gpu.nodes > 1 and config.rollout.executor != "ray":
        raise ConfigError(f"gpu.nodes={gpu.nodes}: several nodes need Ray: set rollout.executor=ray")
    if gpu.nodes > 1 and config.ray.address is None:
        raise ConfigError(f"gpu.nodes={gpu.nodes}: the env workers must join the Ray cluster that "
                          "spans the nodes: start it "
                          "(ray start --head --port 6379 on node 0, ray start --address NODE0:6379 "
                          "on the others) and set "
                          "ray.address=NODE0:6379 (or auto)")
    if config.rollout.executor == "ray":
        notes.append(ray_note(config))
    bucket = f"{gpu.bucket_mb} MB buckets"
    transport_note = {
        "tensor": "bf16 tensors on the serving GPU, SGLang /update_weights_from_tensor (CUDA IPC, no copy to host)",
        "nccl": f"bf16 over an NCCL group trainer rank 0 -> SGLang (/init_weights_update_group + "
                f"/update_weights_from_distributed), {bucket}",
        "disk": "HF checkpoint directory written by the trainer, SGLang /update_weights_from_disk",
        "adapter": f"LoRA adapters only ({trained / 1e6:.1f}M params, r={lora.r}): a peft directory per version under "
                   f"{config.loop.output_dir}/adapters, SGLang /load_lora_adapter as clawgym-v<version>, /generate "
                   "routed to it (lora_path), the previous one unloaded; the base weights never move",
    }[transport]
    if lora.enabled and transport != "adapter":
        transport_note += "; LoRA adapters merged into the base weights before sending"
    sglang_args = sglang_policy_args(config)
    if sglang_args and config.policy.base_url:
        notes.append(f"policy.base_url: the attached server must have been started with {' '.join(sglang_args)}")
    return Plan("multi-node" if gpu.nodes > 1 else "partition", roles, transport, transport_note,
                config.policy.model, n, need, shape.num_hidden_layers, notes, sglang_args, **models)


def ray_note(config: RunConfig) -> str:
    """Where the env actors go, for the plan's notes."""
    address = config.ray.address
    if address == "auto":
        where = "the Ray cluster this machine has joined (ray.address: auto)"
    elif address:
        where = f"the Ray cluster at {address}"
    else:
        where = "a private Ray instance on this machine" + (f" ({config.ray.num_cpus} CPUs)"
                                                            if config.ray.num_cpus else "")
    return f"env workers run as Ray actors in {where} (rollout.executor: ray); they need no GPU"


def format_plan(p: Plan) -> str:
    lines = [f"placement: {p.placement}; model {p.model} ({p.params / 1e6:,.1f}M parameters); "
             f"GPUs: {p.gpus_needed or 'none'}"]
    for role in p.roles:
        gpus = ", ".join(f"node{n}:gpu{i}" for n, i in role.gpus) or "no GPU"
        lines.append(f"  {role.name:<8} [{gpus}] {role.what}")
        lines.append(f"  {'':<8} memory ~{role.memory_gib:,.2f} GiB per {'GPU' if role.gpus else 'process'} "
                     f"({role.memory_note})")
    lines.append(f"  weights  {p.transport}: {p.transport_note}")
    if p.sglang_args:
        lines.append(f"  sglang   policy server also gets: {' '.join(p.sglang_args)}")
    lines += [f"  note     {n}" for n in p.notes]
    return "\n".join(lines)
