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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawgym.rl.launch.placement import ModelSpec, Plan, in_process_judge, plan, sglang_model_path
from clawgym.rl.launch.schema import (
    ConfigError,
    JudgeSection,
    LoraSection,
    RunConfig,
    from_sections,
    judge_parts,
    uses_llm_judge,
)
from clawgym.rl.launch.teacher import trainer_teacher
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.methods import PROB_JUDGES, USES_HINTS
from clawgym.rl.trainer.config import LoraSettings, TrainerConfig
from clawgym.rl.warm_start.config import WarmStartConfig

if TYPE_CHECKING:  # the builder imports torch, the judges and the loop only when it builds
    from torch import nn
    from transformers import PreTrainedTokenizerBase

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
    # True: hindsight groups write prompted siblings (``clawgym serve`` with ``serve.hindsight_k``), so the plan's
    # ``prompted_model`` (``serve.hindsight_prompted_model``) is loaded too, unless it is the judge's model
    siblings: bool = False


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
    # who writes hindsight's prompted siblings when not the served policy (StackOptions.siblings): the judge
    # policy (closed with the stack), or a model of its own (closed by whoever samples from it)
    sibling_policy: Policy | None = None

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
    targets = lora_targets(t.lora, num_layers if t.lora.top_layers > 0 else None) if t.lora.enabled else ()
    teacher = trainer_teacher(config)
    correction = t.behavior_correction or ("tis" if config.policy.quantize != "none" else "none")
    lora = from_sections(LoraSettings, t.lora, target_modules=targets) if t.lora.enabled else None
    return from_sections(TrainerConfig, t, config.rollout, config, lora=lora, teacher=teacher,
                         behavior_correction=correction, seed=config.loop.seed)


def loop_config(config: RunConfig) -> LoopConfig:
    """The loop's config: the ``loop`` and ``rollout`` keys and ``judge.workers``."""
    return from_sections(LoopConfig, config.loop, config.rollout, config.judge)


def warm_start_config(config: RunConfig) -> WarmStartConfig:
    """The warm start's config: the ``warm_start`` keys."""
    return from_sections(WarmStartConfig, config.warm_start)


# ---- the stack: the plan's models loaded, then the policy, trainer, judges and weight transport put together ----


def build_stack(config: RunConfig, device: str = "cuda", options: StackOptions | None = None) -> Stack:
    """Serving policy, trainer, judges and weight transport for a validated config, placed by its plan.

    The config is read here into plain specs first (the plan's models, the trainer's config), then the models are
    loaded from those specs. ``device`` is where the partition's trainer and weight transport run: ``cuda`` on a GPU
    machine; ``cpu`` runs the very same partition code (torch trainer, tensor transport, NCCL path over gloo)
    against an SGLang-API server without a GPU, which is how the tests exercise it. ``options``: what
    ``clawgym serve`` needs differently (:class:`StackOptions`).
    """
    options = options or StackOptions()
    p = plan(config, device)
    in_process = p.placement in ("cpu", "one-gpu")
    if options.adapter_slots and not in_process:
        raise ConfigError("per-user adapters need the in-process hf policy (policy.backend: hf, gpu.enabled: false)")
    trains = options.trainer or options.adapter_slots > 0 or not in_process  # the partition always trains
    tcfg = trainer_config(config, p.num_layers) if trains else None
    if in_process:
        stack = _in_process(config, p, tcfg, options)
    else:
        assert tcfg is not None
        stack = _partition(config, p, tcfg, device)
    stack.judges = _make_judges(config.judge, stack.judge_policy)  # last: on what the LLM judges run on (or rules)
    return stack


def load_spec(spec: ModelSpec) -> tuple[nn.Module, PreTrainedTokenizerBase]:
    """One role's model and tokenizer, loaded as the plan resolved them (``quantize: int8``: int8 weights)."""
    import torch

    from clawgym.inference.models import load_model

    model, tokenizer = load_model(spec.name, device=spec.device, dtype=getattr(torch, spec.dtype), seed=spec.seed,
                                  context_window=spec.context_window)
    if spec.quantize == "int8":  # the served copy only; the trainer's copy keeps its own weights
        from clawgym.inference.int8 import quantize_linears

        quantize_linears(model)
    return model, tokenizer


def _in_process(config: RunConfig, p: Plan, tcfg: TrainerConfig | None, options: StackOptions) -> Stack:
    """The CPU / one-device placement: every model it holds is loaded first, in one pass from the plan's specs
    (:func:`load_in_process`), then the policies, the trainer and the judges are made on them: judges on the
    served policy, or on its base model (slot 0) with per-user adapters, or on a judge model of their own."""
    from clawgym.inference.hf import HFPolicy
    from clawgym.rl.trainer import TorchTrainer

    models = load_in_process(config, p, trains=tcfg is not None, siblings=options.siblings)
    tokenizer, adapter_slots = models.tokenizer, options.adapter_slots
    trainer = None if tcfg is None or models.trained is None else TorchTrainer(models.trained, tokenizer, tcfg)
    policy = _hf_policy(config, models.served, tokenizer, tcfg.lora if tcfg else None, adapter_slots)
    judge_policy = _judge_policy(config, policy.adapter(0) if adapter_slots else policy, models.judge)
    siblings = None
    if models.prompted is not None:  # a model of its own
        siblings = HFPolicy(*models.prompted, name=f"siblings:{models.prompted_name}")
    elif models.prompted_by_judge:
        siblings = judge_policy  # the judge's model: loaded once, closed by the stack
    if trainer is not None and trainer.config.teacher == "judge":  # the judge model is the OPD teacher
        trainer.teacher_model = judge_teacher(config, judge_policy, tokenizer)
    judges = _make_judges(config.judge, judge_policy)
    return Stack(p, policy, trainer, judges, judge_policy, tokenizer=tokenizer,
                 max_positions=policy.max_positions, sibling_policy=siblings)


@dataclass
class InProcessModels:
    """The in-process placement's models as loaded from the plan's specs (None: not held in this process)."""

    served: nn.Module
    tokenizer: PreTrainedTokenizerBase
    trained: nn.Module | None = None  # the trainer's own copy
    judge: tuple[nn.Module, PreTrainedTokenizerBase] | None = None  # a judge model of its own
    prompted: tuple[nn.Module, PreTrainedTokenizerBase] | None = None  # the prompted siblings' model of its own
    prompted_name: str = ""
    prompted_by_judge: bool = False  # the prompted siblings' model is the judge's (loaded once, as the judge)


def load_in_process(config: RunConfig, p: Plan, trains: bool = True, siblings: bool = False) -> InProcessModels:
    """Every model of the in-process placement, in one pass: the served copy (quantised as the plan says), the
    trainer's copy (``trains``), a judge model of its own, and (``siblings``) the plan's prompted-siblings model,
    which must share the policy's tokenizer and is the judge's own when ``judge.model`` names it."""
    served, trained, judge, prompted = p.served_model, p.trained_model, p.judge_model, p.prompted_model
    assert served is not None and trained is not None  # plan() resolves both
    serve_model, tokenizer = load_spec(served)
    models = InProcessModels(serve_model, tokenizer, load_spec(trained)[0] if trains else None,
                             load_spec(judge) if judge is not None else None)
    if siblings and prompted is not None:
        from clawgym.inference.models import load_tokenizer

        name = config.serve.hindsight_prompted_model
        if load_tokenizer(prompted.name).get_vocab() != tokenizer.get_vocab():
            raise ConfigError(f"serve.hindsight_prompted_model {name!r} has another tokenizer than the policy "
                              f"{config.policy.model!r}; its replies are trained as the policy's token ids")
        if judge is not None and config.judge.model == name:
            models.prompted_by_judge = True
        else:
            models.prompted, models.prompted_name = load_spec(prompted), prompted.name
    return models


def _hf_policy(config: RunConfig, model: nn.Module, tokenizer: PreTrainedTokenizerBase, lora: LoraSettings | None,
               adapter_slots: int) -> HFPolicy:
    """The in-process policy on the served model: one set of weights, or ``adapter_slots`` LoRA adapters shaped
    like the trainer's (``lora``). ``loop.seed`` seeds its sampling RNG: runs with another seed sample other
    replies."""
    from clawgym.inference.hf import HFPolicy

    name, batch, seed = config.policy.model, config.policy.max_batch_size, config.loop.seed
    if not adapter_slots:
        return HFPolicy(model, tokenizer, name=name, max_batch_size=batch, seed=seed)
    from clawgym.inference.multi_adapter import MultiAdapterHFPolicy

    if lora is None:
        raise ConfigError("per-user adapters are LoRA adapters: set trainer.lora.enabled: true")
    return MultiAdapterHFPolicy(model, tokenizer, slots=adapter_slots, r=lora.r, alpha=lora.alpha,
                                target_modules=lora.target_modules, name=name, max_batch_size=batch, seed=seed)


def build_judges(config: RunConfig, policy: Policy | None,
                 model: ModelSpec | None = None) -> tuple[list[Judge], Policy | None]:
    """Judges for the CPU / one-device placement: the serving policy, or a frozen hf copy of judge.model
    (``model``: the plan's ``judge_model``; None: resolved here the way the plan does)."""
    model = model or in_process_judge(config)
    judge_policy = _judge_policy(config, policy, load_spec(model) if model is not None else None)
    return _make_judges(config.judge, judge_policy), judge_policy


def _judge_policy(config: RunConfig, policy: Policy | None,
                  model: tuple[nn.Module, PreTrainedTokenizerBase] | None) -> Policy | None:
    """What the LLM judges run on in process (None: no LLM judge): an OpenAI endpoint, the serving policy, or
    ``model`` (the plan's judge model, loaded)."""
    judge = config.judge
    if not uses_llm_judge(config):
        return None
    if judge.backend == "hf" and judge.model == "policy":
        return policy
    if judge.backend == "hf":
        from clawgym.inference.hf import HFPolicy

        assert model is not None  # an hf judge model other than the policy
        return HFPolicy(*model, name=f"judge:{judge.model}")
    from clawgym.inference.openai import OpenAIPolicy  # a bigger local model or an API behind any OpenAI endpoint

    if not judge.base_url or judge.model == "policy":
        raise ConfigError("judge.backend openai needs judge.base_url and judge.model (the served model's name)")
    return OpenAIPolicy(judge.model, base_url=judge.base_url, api_key=judge.api_key)


def judge_teacher(config: RunConfig, judge_policy: Policy | None, tokenizer: PreTrainedTokenizerBase) -> nn.Module:
    """The judge model's torch module, the OPD teacher of ``trainer.teacher: judge`` (:func:`trainer_teacher`)."""
    module = getattr(judge_policy, "model", None)
    if module is None or not hasattr(judge_policy, "tokenizer"):
        raise ConfigError(f"trainer.teacher judge: the judge {config.judge.model!r} is not a local hf model; "
                          "use trainer.teacher initial or policy")
    if getattr(judge_policy, "tokenizer").get_vocab() != tokenizer.get_vocab():
        raise ConfigError(f"trainer.teacher judge: the judge model {config.judge.model!r} has another tokenizer than "
                          f"the policy {config.policy.model!r}; the OPD teacher scores the student's own token ids, "
                          "so it needs the same tokenizer (or use trainer.teacher initial / policy)")
    return module


def _make_judges(judge: JudgeSection, judge_policy: Policy | None) -> list[Judge]:
    """The judges of ``judge.type`` on ``judge_policy`` (rules need none)."""
    from clawgym.core.policy import SamplingParams
    from clawgym.rl.judge import make_judges

    parts = judge_parts(judge.type)
    sampling = SamplingParams(temperature=judge.temperature, max_tokens=judge.max_tokens)
    judges: list[Judge] = []
    for part in parts:
        if part == "rules":
            judges += make_judges("rules")
        elif part not in PROB_JUDGES:
            judges += make_judges(part, judge_policy, m=judge.votes, sampling=sampling, call_timeout_s=judge.timeout_s)
    prob = [p for p in parts if p in PROB_JUDGES]
    if prob:  # one call: prob and probhint share one batched scorer
        judges += make_judges(",".join(prob), judge_policy)
    return judges


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


def _partition(config: RunConfig, p: Plan, tcfg: TrainerConfig, device: str = "cuda") -> Stack:
    """The GPU partition: SGLang serves (and judges), the trainer trains on the actor GPUs, the plan's transport
    carries the weights. It always builds its trainer; it has no per-user adapters."""
    import torch

    from clawgym.inference.models import load_tokenizer
    from clawgym.inference.sglang import SGLangPolicy
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
    actor, rollout, judge = p.role("actor"), p.role("rollout"), p.role("judge")
    assert actor is not None
    # the checkpoint directories the servers read; an attached server (policy.base_url) already holds its model:
    # the name only picks tokenizer and trainer weights
    model_dir = served.name if config.policy.base_url else sglang_model_path(served.name)
    judge_dir = None
    if judge is not None:
        assert p.judge_model is not None  # the plan gives judge GPUs only to a judge model of its own
        judge_dir = sglang_model_path(p.judge_model.name)
    # then the servers: the policy's, and a judge's own
    policy = SGLangPolicy.on_gpus(model_dir, rollout.gpus if rollout else actor.gpus,
                                  [*gpu.sglang_args, *p.sglang_args], config.policy.base_url)
    judge_policy = policy
    if judge is not None and judge_dir is not None:
        judge_policy = SGLangPolicy.on_gpus(judge_dir, judge.gpus, gpu.sglang_args)
    if gpu.backend == "torch+sglang":
        from clawgym.rl.trainer import TorchTrainer

        trainer = TorchTrainer(*load_spec(replace(trained, name=model_dir)), tcfg)  # SGLang's YaRN window too
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
                                                 pipeline_parallel=gpu.pipeline_parallel, trainer=tcfg))
    trainer.export_device, trainer.export_dtype = device, torch.bfloat16  # SGLang takes bf16 from the GPU
    policy.transport = make_transport(p.transport, policy, bucket_bytes=gpu.bucket_mb << 20,
                                      sglang_ranks=len(rollout.gpus) if rollout else len(actor.gpus), device=device,
                                      adapter_dir=Path(config.loop.output_dir) / "adapters",
                                      lora=tcfg.lora, base_model=model_dir)
    hf_config = getattr(trainer, "hf_config", None) or getattr(getattr(trainer, "model", None), "config", None)
    return Stack(p, policy, trainer, [], judge_policy if uses_llm_judge(config) else None,
                 tokenizer=policy.tokenizer,
                 max_positions=int(getattr(hf_config, "max_position_embeddings", 0) or 1 << 30))


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
