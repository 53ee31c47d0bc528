"""ONE builder for every placement: policy (serving), weight transport, trainer, judges, then the loop.

The placement plan (:mod:`clawgym.rl.launch.placement`) decides where each process goes; this module
only follows it. The CPU run is the smallest placement (one process, hf policy, in-process copy), the
GPU partition swaps in SGLang servers, a GPU trainer and a transport, and nothing else changes.
:func:`build_stack` stops before the loop: ``clawgym serve`` builds its policy, trainer and judges with it too,
and says what it needs differently in :class:`StackOptions` (no trainer when it only serves; per-user
adapters), so which models are loaded, where, in which dtype, quantised or not, with which LoRA targets,
judges and OPD teacher is decided here once, for ``train`` and ``serve`` alike. The plain configs the trainer, the
loop and the warm start take are built here too (:func:`trainer_config`, :func:`loop_config`,
:func:`warm_start_config`), from the sections that took their fields (:func:`~clawgym.rl.launch.schema.from_sections`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from clawgym.rl.launch.placement import ModelSpec, Plan, Shape, in_process_judge, plan, sglang_model_path
from clawgym.rl.launch.schema import ConfigError, LoraSection, RunConfig, from_sections, judge_parts, uses_llm_judge
from clawgym.rl.launch.teacher import trainer_teacher
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.methods import PROB_JUDGES, USES_HINTS
from clawgym.rl.trainer.config import LoraSettings, TrainerConfig
from clawgym.rl.warm_start.config import WarmStartConfig

if TYPE_CHECKING:  # the builder imports torch, the judges and the loop only when it builds
    from clawgym.core.policy import Policy
    from clawgym.inference.hf import HFPolicy
    from clawgym.rl.judge import Judge
    from clawgym.rl.loop import AsyncRLLoop
    from clawgym.rl.trainer import Trainer


@dataclass(frozen=True)
class StackOptions:
    """What a caller needs of :func:`build_stack` beyond its config (``clawgym train`` takes the defaults)."""

    # False: no trainer and no trainer copy of the model (``clawgym serve`` with ``serve.train: false``); a GPU
    # partition builds its trainer regardless (its weight transport is made from the trainer's settings)
    trainer: bool = True
    # > 0: one LoRA adapter per user on the served model (``serve.adapters: per_user``, in-process only): a
    # MultiAdapterHFPolicy with this many slots, shaped like the trainer's LoRA; slot 0 is the base model, which
    # the judges read. The adapters are trained (and restored after a restart) by the trainer, so it is built.
    adapter_slots: int = 0


@dataclass
class Stack:
    """What serves, what trains, what judges, and how weights travel between them."""

    plan: Plan
    policy: Policy
    trainer: Trainer | None  # None only with StackOptions(trainer=False)
    judges: list[Judge]
    judge_policy: Policy | None = None  # what the LLM judges run on (None: no LLM judge)
    tokenizer: Any = None  # the served model's (the one prompts are counted in)
    max_positions: int = 1 << 30  # the served model's context window

    async def close(self) -> None:
        await self.policy.close()
        if self.judge_policy is not None and self.judge_policy is not self.policy:
            await self.judge_policy.close()


@dataclass
class Components:
    """A :class:`Stack` plus the loop; :meth:`close` releases the policies."""

    loop: AsyncRLLoop
    policy: Policy
    judge_policy: Policy | None = None

    async def close(self) -> None:
        await self.policy.close()
        if self.judge_policy is not None and self.judge_policy is not self.policy:
            await self.judge_policy.close()


# ---- the plain configs: the trainer's, the loop's and the warm start's, from the sections that took their fields

# the sub-block of a Llama / Qwen2 decoder layer each projection lives in (model.layers.N.<block>.<name>)
LAYER_BLOCK = {**{name: "self_attn" for name in ("q_proj", "k_proj", "v_proj", "o_proj")},
               **{name: "mlp" for name in ("gate_proj", "up_proj", "down_proj")}}


def lora_targets(lora: LoraSection, num_layers: int | None) -> tuple[str, ...]:
    """The module names LoRA wraps: the given suffixes, restricted to the top ``top_layers`` layers if set.

    peft matches a target against the end of each module name (the whole name, or after a "."), so
    ``layers.29.self_attn.q_proj`` selects that one projection in layer 29; ``layers.29.q_proj`` would
    match nothing. A name outside :data:`LAYER_BLOCK` is taken to sit directly in the layer.
    """
    if lora.top_layers <= 0:
        return tuple(lora.target_modules)
    if num_layers is None:
        raise ConfigError("trainer.lora.top_layers needs the model's layer count")
    first = max(0, num_layers - lora.top_layers)
    return tuple(f"layers.{i}.{LAYER_BLOCK[m] + '.' if m in LAYER_BLOCK else ''}{m}"
                 for i in range(first, num_layers) for m in lora.target_modules)


def trainer_config(config: RunConfig, num_layers: int | None = None) -> TrainerConfig:
    """The trainer's config; ``num_layers`` (the model's) places ``trainer.lora.top_layers``' adapters."""
    t = config.trainer
    lora = None
    if t.lora.enabled:
        lora = from_sections(LoraSettings, t.lora,
                             target_modules=lora_targets(t.lora, num_layers if t.lora.top_layers > 0 else None))
    correction = t.behavior_correction or ("tis" if config.policy.quantize != "none" else "none")
    return from_sections(TrainerConfig, t, config.rollout, config, lora=lora, teacher=trainer_teacher(config),
                         behavior_correction=correction, seed=config.loop.seed)


def loop_config(config: RunConfig) -> LoopConfig:
    """The loop's config: the ``loop`` and ``rollout`` keys and ``judge.workers``."""
    return from_sections(LoopConfig, config.loop, config.rollout, config.judge)


def warm_start_config(config: RunConfig) -> WarmStartConfig:
    """The warm start's config: the ``warm_start`` keys."""
    return from_sections(WarmStartConfig, config.warm_start)


# ---- the stack: policy, trainer, judges and weight transport, placed by the plan ----------------------------


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


@contextmanager
def visible_gpus(gpus: Sequence[tuple[int, int]]) -> Iterator[None]:
    """CUDA_VISIBLE_DEVICES for a child process started inside the block (local indices on node 0)."""
    old = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for _, i in gpus)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = old


def require_gpus(p: Plan, available: int | None = None) -> None:
    """Raise with what to change when this machine cannot host the plan (checked at build, not --check)."""
    if available is None:
        import torch

        available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    per_node = max((i + 1 for role in p.roles for _, i in role.gpus), default=0)
    if per_node == 0:
        return
    if available == 0:
        raise ConfigError(f"gpu.enabled is true, but this machine has no CUDA GPU; the placement needs {p.gpus_needed} "
                          "GPUs. Set gpu.enabled=false to train on CPU.")
    if available < per_node:
        raise ConfigError(f"the placement needs {per_node} GPUs on this node; this machine has {available}: "
                          "lower gpu.actor_gpus / rollout_gpus / judge_gpus")


def build_judges(config: RunConfig, policy: Policy | None,
                 model: ModelSpec | None = None) -> tuple[list[Judge], Policy | None]:
    """Judges for the CPU / one-device placement: the serving policy, or a frozen hf copy of judge.model
    (``model``: the plan's ``judge_model``; None: resolved here the way the plan does)."""
    from clawgym.core.policy import SamplingParams
    from clawgym.rl.judge import make_judges

    parts = judge_parts(config.judge.type)
    judge_policy = None
    if uses_llm_judge(config):
        if config.judge.backend == "openai":  # a bigger local model or an API behind any OpenAI endpoint
            from clawgym.inference.openai import OpenAIPolicy

            if not config.judge.base_url or config.judge.model == "policy":
                raise ConfigError("judge.backend openai needs judge.base_url and judge.model (the served model's name)")
            judge_policy = OpenAIPolicy(config.judge.model, base_url=config.judge.base_url,
                                        api_key=config.judge.api_key)
        elif config.judge.model == "policy":
            judge_policy = policy
        else:
            from clawgym.inference.hf import HFPolicy

            spec = model or in_process_judge(config)
            assert spec is not None  # an hf judge model other than the policy
            judge_policy = HFPolicy.from_pretrained(spec.name, device=spec.device, dtype=_dtype(spec.dtype),
                                                    name=f"judge:{spec.name}")
    return _make_judges(config, parts, judge_policy, make_judges, SamplingParams), judge_policy


def judge_teacher(config: Any, judge_policy: Any, tokenizer: Any) -> Any:
    """The judge model's torch module when it is the OPD teacher (:func:`trainer_teacher` is ``judge``), else None."""
    if trainer_teacher(config) != "judge":
        return None
    module = getattr(judge_policy, "model", None)
    if module is None or not hasattr(judge_policy, "tokenizer"):
        raise ConfigError(f"trainer.teacher judge: the judge {config.judge.model!r} is not a local hf model; "
                          "use trainer.teacher initial or policy")
    if judge_policy.tokenizer.get_vocab() != tokenizer.get_vocab():
        raise ConfigError(f"trainer.teacher judge: the judge model {config.judge.model!r} has another tokenizer than "
                          f"the policy {config.policy.model!r}; the OPD teacher scores the student's own token ids, "
                          "so it needs the same tokenizer (or use trainer.teacher initial / policy)")
    return module


def _make_judges(config: RunConfig, parts: list[str], judge_policy: Policy | None, make_judges: Any,
                 sampling_cls: Any) -> list[Judge]:
    sampling = sampling_cls(temperature=config.judge.temperature, max_tokens=config.judge.max_tokens)
    judges: list[Judge] = []
    for part in parts:
        if part == "rules":
            judges += make_judges("rules")
        elif part not in PROB_JUDGES:
            judges += make_judges(part, judge_policy, m=config.judge.votes, sampling=sampling,
                                  call_timeout_s=config.judge.timeout_s)
    prob = [p for p in parts if p in PROB_JUDGES]
    if prob:  # one call: prob and probhint share one batched scorer
        judges += make_judges(",".join(prob), judge_policy)
    return judges


def quantize_served(config: RunConfig, model: Any) -> None:
    """``policy.quantize: int8``: the served copy gets int8 weights; the trainer's copy keeps its own."""
    if config.policy.quantize == "int8":
        from clawgym.inference.int8 import quantize_linears

        quantize_linears(model)


def _in_process(config: RunConfig, p: Plan, options: StackOptions) -> Stack:
    """The CPU / one-device placement: the served model and the trainer's own copy, loaded alike (the plan's
    model, dtype and device, the policy's seed and context window; only the served copy is quantised); judges on
    the served policy, or on its base model (slot 0) with per-user adapters."""
    from clawgym.inference.models import load_model
    from clawgym.rl.trainer import TorchTrainer

    served, trained = p.served_model, p.trained_model
    assert served is not None and trained is not None  # plan() resolves both
    kwargs = dict(seed=config.policy.seed, context_window=config.policy.context_window)
    serve_model, tokenizer = load_model(served.name, device=served.device, dtype=_dtype(served.dtype), **kwargs)
    quantize_served(config, serve_model)
    trainer = None
    if options.trainer or options.adapter_slots:
        train_model, _ = load_model(trained.name, device=trained.device, dtype=_dtype(trained.dtype), **kwargs)
        trainer = TorchTrainer(train_model, tokenizer,
                               trainer_config(config, getattr(train_model.config, "num_hidden_layers", None)))
    policy = _hf_policy(config, serve_model, tokenizer, trainer, options.adapter_slots)
    judges, judge_policy = build_judges(config, policy.adapter(0) if options.adapter_slots else policy,
                                        p.judge_model)
    if trainer is not None:
        trainer.teacher_model = judge_teacher(config, judge_policy, tokenizer)  # trainer.teacher judge: its model
    return Stack(p, policy, trainer, judges, judge_policy, tokenizer=tokenizer, max_positions=policy.max_positions)


def _hf_policy(config: RunConfig, model: Any, tokenizer: Any, trainer: Trainer | None, adapter_slots: int) -> HFPolicy:
    """The in-process policy on the served model: one set of weights, or ``adapter_slots`` LoRA adapters shaped
    like the trainer's. ``loop.seed`` seeds its sampling RNG: runs with another seed sample other replies."""
    from clawgym.inference.hf import HFPolicy

    common: dict[str, Any] = dict(name=config.policy.model, max_batch_size=config.policy.max_batch_size,
                                  seed=config.loop.seed)
    if not adapter_slots:
        return HFPolicy(model, tokenizer, **common)
    from clawgym.inference.multi_adapter import MultiAdapterHFPolicy

    lora = trainer.config.lora if trainer is not None else None
    if lora is None:
        raise ConfigError("per-user adapters are LoRA adapters: set trainer.lora.enabled: true")
    return MultiAdapterHFPolicy(model, tokenizer, slots=adapter_slots, r=lora.r, alpha=lora.alpha,
                                target_modules=lora.target_modules, **common)


def _sglang_server(model: str, gpus: Sequence[tuple[int, int]], args: Sequence[str],
                   base_url: str | None = None) -> Any:
    from clawgym.inference.sglang import SGLangPolicy

    if base_url:
        return SGLangPolicy(model, base_url, tokenizer=model)
    with visible_gpus(gpus):
        return SGLangPolicy.launch(model, ["--tp-size", str(len(gpus)), *args])


def _partition(config: RunConfig, p: Plan, device: str = "cuda") -> Stack:
    """The GPU partition: SGLang serves (and judges), the trainer trains on the actor GPUs, the plan's transport
    carries the weights. It always builds its trainer; it has no per-user adapters."""
    from clawgym.core.policy import SamplingParams
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.judge import make_judges
    from clawgym.rl.trainer.transport import make_transport

    gpu = config.gpu
    if gpu.nodes > 1:
        raise ConfigError(f"gpu.nodes={gpu.nodes}: --check plans a multi-node placement, but starting SGLang and "
                          "trainer ranks on other nodes is not built; set gpu.nodes=1 (env workers can still spread "
                          "over a multi-node Ray cluster: rollout.executor=ray, ray.address=HEAD:6379)")
    if device == "cuda":
        require_gpus(p)
    served, trained = p.served_model, p.trained_model
    assert served is not None and trained is not None  # plan() resolves both
    # an attached server (policy.base_url) already holds its model: the name only picks tokenizer and trainer weights
    model_dir = served.name if config.policy.base_url else sglang_model_path(served.name)
    actor, rollout, judge = p.role("actor"), p.role("rollout"), p.role("judge")
    assert actor is not None
    policy = _sglang_server(model_dir, rollout.gpus if rollout else actor.gpus, [*gpu.sglang_args, *p.sglang_args],
                            config.policy.base_url)
    judge_policy = policy
    if judge is not None:
        assert p.judge_model is not None  # the plan gives judge GPUs only to a judge model of its own
        judge_policy = _sglang_server(sglang_model_path(p.judge_model.name), judge.gpus, gpu.sglang_args)
    if gpu.backend == "torch+sglang":
        from clawgym.inference.models import load_model
        from clawgym.rl.trainer import TorchTrainer

        train_model, tokenizer = load_model(model_dir, device=trained.device, dtype=_dtype(trained.dtype),
                                            seed=config.policy.seed,
                                            context_window=config.policy.context_window)  # SGLang's YaRN too
        trainer = TorchTrainer(train_model, tokenizer, trainer_config(config, train_model.config.num_hidden_layers))
    else:
        from clawgym.rl.trainer.megatron import MegatronConfig, MegatronTrainer, megatron_available

        ok, why = megatron_available()
        if not ok:
            raise ConfigError(f"gpu section: {why}")
        if len(actor.gpus) != 1 and os.environ.get("WORLD_SIZE") != str(len(actor.gpus)):
            raise ConfigError(f"gpu.actor_gpus={len(actor.gpus)}: the megatron trainer needs one "
                              "process per actor GPU: "
                              "start this launcher under torchrun --nproc-per-node "
                              f"{len(actor.gpus)} (or set gpu.actor_gpus=1)")
        model_dir = sglang_model_path(trained.name)  # megatron reads an HF checkpoint directory
        trainer = MegatronTrainer(model_dir, load_tokenizer(model_dir),
                                  MegatronConfig(tensor_parallel=gpu.tensor_parallel,
                                                 pipeline_parallel=gpu.pipeline_parallel,
                                                 trainer=trainer_config(config, Shape.of(model_dir).num_hidden_layers)))
    trainer.export_device, trainer.export_dtype = device, _dtype("bfloat16")  # SGLang takes bf16 from the GPU
    lora = (trainer.config.trainer if gpu.backend == "megatron+sglang" else trainer.config).lora
    policy.transport = make_transport(p.transport, policy, bucket_bytes=gpu.bucket_mb << 20,
                                      sglang_ranks=len(rollout.gpus) if rollout else len(actor.gpus), device=device,
                                      adapter_dir=Path(config.loop.output_dir) / "adapters",
                                      lora=lora, base_model=model_dir)
    judges = _make_judges(config, judge_parts(config.judge.type), judge_policy, make_judges, SamplingParams)
    hf_config = getattr(trainer, "hf_config", None) or getattr(getattr(trainer, "model", None), "config", None)
    return Stack(p, policy, trainer, judges, judge_policy if uses_llm_judge(config) else None,
                 tokenizer=policy.tokenizer,
                 max_positions=int(getattr(hf_config, "max_position_embeddings", 0) or 1 << 30))


def build_stack(config: RunConfig, device: str = "cuda", options: StackOptions | None = None) -> Stack:
    """Serving policy, trainer, judges and weight transport for a validated config, placed by its plan.

    ``device`` is where the partition's trainer and weight transport run: ``cuda`` on a GPU machine;
    ``cpu`` runs the very same partition code (torch trainer, tensor transport, NCCL path over gloo)
    against an SGLang-API server without a GPU, which is how the tests exercise it. ``options``: what
    ``clawgym serve`` needs differently (:class:`StackOptions`).
    """
    options = options or StackOptions()
    p = plan(config, device)
    if p.placement in ("cpu", "one-gpu"):
        return _in_process(config, p, options)
    if options.adapter_slots:
        raise ConfigError("per-user adapters need the in-process hf policy (policy.backend: hf, gpu.enabled: false)")
    return _partition(config, p, device)


def env_tools(config: RunConfig) -> list[dict[str, Any]] | None:
    """The env's tool schemas (OPD teacher prompts render them like the student's)."""
    import gymnasium as gym

    import clawgym  # noqa: F401

    env = gym.make(config.env.id, **config.env.kwargs)
    try:
        return list(getattr(env.unwrapped, "tools", None) or []) or None
    finally:
        env.close()


def executor_options(config: RunConfig) -> dict[str, Any] | None:
    """The Ray executor's options from the ``ray`` section (None for the in-process executors)."""
    if config.rollout.executor != "ray":
        return None
    return {"address": config.ray.address, "num_cpus": config.ray.num_cpus}


def build(config: RunConfig, on_step: Any = None) -> Components:
    """The whole run: :func:`build_stack` plus the async loop over the env."""
    from clawgym.rl.loop import AsyncRLLoop

    stack = build_stack(config)
    assert stack.trainer is not None  # the default options build one
    loop = AsyncRLLoop(
        config.env.id,
        stack.policy,
        stack.trainer,
        loop_config(config),
        judges=stack.judges,
        env_kwargs=dict(config.env.kwargs),
        eval_env_kwargs={**config.env.kwargs, **config.env.eval_kwargs},
        executor=config.rollout.executor,
        executor_options=executor_options(config),
        tools=env_tools(config) if config.method in USES_HINTS else None,
        warm_start=warm_start_config(config),
        on_step=on_step,
    )
    return Components(loop, stack.policy, stack.judge_policy)
