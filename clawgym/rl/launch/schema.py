"""The launcher config schema: ONE pydantic model (a section per concern) and its cross-field checks.

pydantic does the typing (ints, floats, bools, lists, nested sections) so nothing here coerces by hand;
this module runs the cross-field checks that a single field cannot express (reading a YAML file and ``--set
a.b=c`` overrides, and turning pydantic's errors into one-line messages, is :mod:`~clawgym.rl.launch.loading`'s).
A key with a closed set of values has a ``Literal`` type, the one place its values are written: the section
takes any string for it and :func:`validate` checks the value against the type, so every problem of a config is
told at once. RunConfig's validators run the checks, so a RunConfig is a valid config; validated for ``clawgym
serve`` (``load_config(..., serving=True)``), they also check the serve section against the other sections
(:mod:`~clawgym.rl.launch.serve_rules`), which train does not read.

The keys that configure the loop, the trainer and LoRA are the fields of the plain configs those take
(:class:`~clawgym.rl.loop.LoopConfig`, :class:`~clawgym.rl.trainer.TrainerConfig`,
:class:`~clawgym.rl.trainer.LoraSettings`): each is declared there once, with its type and default, and a
section takes it with :func:`plain_fields`; a section declares only the keys that are the config's own.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from clawgym.inference.catalog import DEFAULT_MODEL, default_dtype
from clawgym.rl.launch.section import ConfigError, Section, choice_problem, choices, from_sections, plain_fields, taken
from clawgym.rl.launch.serve_rules import serve_problem
from clawgym.rl.launch.serve_section import Adapters, AlarmSection, Baseline, GateSection, ServeSection
from clawgym.rl.launch.teacher import canonical_teacher, teacher_problems
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.methods import JUDGE_TYPES, MODEL_JUDGES, PROB_JUDGES, USES_HINTS, canonical_method
from clawgym.rl.trainer.config import BehaviorCorrection, LoraSettings, TrainerConfig
from clawgym.rl.warm_start.config import WarmStartConfig

__all__ = ["Adapters", "AlarmSection", "Baseline", "ConfigError", "GateSection", "RunConfig", "Section", "ServeSection",
           "choice_problem", "choices", "from_sections", "plain_fields", "taken"]


class EnvSection(Section):
    id: str = "clawgym/ToolCall-v0"
    kwargs: dict[str, Any] = Field(default_factory=dict)
    eval_kwargs: dict[str, Any] = Field(default_factory=dict)


class PolicySection(Section):
    backend: Literal["hf", "sglang"] = "hf"  # a backend that can receive weights
    model: str = DEFAULT_MODEL  # a name from `clawgym models` (qwen2.5-coder-0.5b, ...) or an HF checkpoint dir
    device: str = "cpu"
    # empty: the model's own default on the computing device (catalog.default_dtype), set before validate sees it
    dtype: Literal["float32", "bfloat16", "float16"] = ""
    max_batch_size: int = 32
    base_url: str | None = None  # sglang: an already running server (else one is launched)
    seed: int = 0
    context_window: int | None = None  # above the model's own: extended with YaRN (models.extend_context)
    # int8: int8 weight-only serving weights on the CPU (clawgym/inference/int8.py)
    quantize: Literal["none", "int8"] = "none"


@plain_fields(LoopConfig, workers="judge_workers")  # concurrent judge calls; null: one per rollout worker
class JudgeSection(Section):
    type: str = "none"  # none, or parts of JUDGE_TYPES comma-joined
    votes: int = 3
    model: str = "policy"  # "policy": the serving policy itself; else a model alias or path, served frozen
    max_tokens: int = 1024  # room for a full vote (reasoning, then \boxed{}); shorter cuts votes off
    backend: Literal["hf", "openai"] = "hf"  # hf: judge.model loaded here; openai: served at judge.base_url
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float | None = None  # a judge call slower than this counts as the judge being down
    temperature: float = 0.6


# temperature: the trainer's logprobs' (TrainerConfig.temperature), which the loop's rollouts and the served
# requests that send none sample at
@plain_fields(TrainerConfig, "temperature")
@plain_fields(LoopConfig, "group_size", "top_p", "max_tokens", "episode_timeout_s", workers="num_workers")
class RolloutSection(Section):
    executor: Literal["local", "asyncio", "ray"] = "local"


@plain_fields(LoraSettings)
class LoraSection(Section):
    enabled: bool = False
    top_layers: int = 0  # >0: adapters only in the top N layers, so backward stops below them (~2x cheaper on CPU)
    # merged: W + BA sent as full weights; adapter: SGLang loads the adapters (gpu section)
    export: Literal["merged", "adapter"] = "merged"


# TrainerConfig's other fields: method (top level), temperature (rollout.temperature), seed (loop.seed); betas
# and topk are set in code only
@plain_fields(TrainerConfig, skip=("method", "temperature", "seed", "betas", "topk"))
class TrainerSection(Section):
    # TrainerConfig's, or empty (unlike its none): tis when policy.quantize makes the sampler's weights differ
    behavior_correction: Literal[""] | BehaviorCorrection = ""
    lora: LoraSection = Field(default_factory=LoraSection)  # enabled: TrainerConfig.lora (else None)


# LoopConfig's other fields: the rollout section's and judge.workers; eval_seed, export_final and
# switch_interval_s are set in code only
@plain_fields(LoopConfig, skip=(*taken(RolloutSection, JudgeSection), "eval_seed", "export_final", "switch_interval_s"))
class LoopSection(Section):
    torch_threads: int = 0  # intra-op threads per torch op; 0 = torch's default (1 suits a small shared CPU)


@plain_fields(WarmStartConfig)
class WarmStartSection(Section):
    """SFT on the setting's own solutions before RL (clawgym.rl.warm_start): ``enabled`` turns it on."""


GpuBackend = Literal["megatron+sglang", "torch+sglang"]  # megatron: TP/PP, full or LoRA; torch: one actor GPU
WeightTransport = Literal["auto", "tensor", "nccl", "disk"]  # tensor: colocated; nccl: own GPUs; disk: checkpoint dir
GPU_BACKENDS: tuple[str, ...] = typing.get_args(GpuBackend)


class GpuSection(Section):
    """The GPU partition (OpenClaw-RL's actor / rollout / judge split). Ignored unless ``enabled``.

    ``rollout_gpus: 0`` colocates SGLang with the trainer on the actor GPUs (weights travel as tensors on
    the serving device); otherwise SGLang has its own GPUs and weights travel over an NCCL group.
    """

    enabled: bool = False
    backend: GpuBackend = "megatron+sglang"
    nodes: int = 1
    gpus_per_node: int = 8
    actor_gpus: int = 1  # trainer ranks: tensor_parallel x pipeline_parallel x data parallel
    rollout_gpus: int = 1  # SGLang policy server; 0 = colocated on the actor GPUs
    judge_gpus: int = 0  # SGLang judge server; 0 = the judge shares the policy server (or runs rules only)
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    weight_transport: WeightTransport = "auto"
    bucket_mb: int = 512  # NCCL weight-update bucket size
    sglang_args: list[str] = Field(default_factory=list)  # passed through to sglang.launch_server


class RaySection(Section):
    """Where the Ray executor's env actors run (used when ``rollout.executor: ray``).

    ``address: null`` starts a private Ray instance on this machine. To spread env workers over several
    machines, start a cluster first (``ray start --head --port 6379`` on one node, ``ray start --address
    HEAD:6379`` on each other node, the same clawgym environment on all of them) and give its address:
    ``HEAD:6379``, ``auto`` (the cluster this machine joined) or ``ray://HEAD:10001`` (Ray client).
    """

    address: str | None = None
    num_cpus: int | None = None  # CPUs of the private instance (address: null); a cluster brings its own


@plain_fields(TrainerConfig, "method")
class RunConfig(Section):
    env: EnvSection = Field(default_factory=EnvSection)
    policy: PolicySection = Field(default_factory=PolicySection)
    judge: JudgeSection = Field(default_factory=JudgeSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    trainer: TrainerSection = Field(default_factory=TrainerSection)
    loop: LoopSection = Field(default_factory=LoopSection)
    warm_start: WarmStartSection = Field(default_factory=WarmStartSection)
    gpu: GpuSection = Field(default_factory=GpuSection)
    ray: RaySection = Field(default_factory=RaySection)
    serve: ServeSection = Field(default_factory=ServeSection)  # read by `clawgym serve`; unused by train

    @model_validator(mode="after")
    def _canonical_names(self) -> "RunConfig":
        """A method's or a teacher's older name -> its current one (the checks below read the current names)."""
        self.method = canonical_method(self.method)
        self.trainer.teacher = canonical_teacher(self.trainer.teacher)
        return self

    @model_validator(mode="after")
    def _model_dtype(self) -> "RunConfig":
        """policy.dtype empty: the model's own on the device that computes (the GPU partition's, if enabled)."""
        if not self.policy.dtype:
            device = "cuda" if self.gpu.enabled else self.policy.device
            # int8 serving weights multiply bfloat16 activations, whatever the CPU
            self.policy.dtype = ("bfloat16" if self.policy.quantize == "int8"
                                 else default_dtype(self.policy.model, device))
        return self

    @model_validator(mode="after")
    def _checks(self) -> "RunConfig":
        """The cross-field checks (:func:`validate`): every problem at once."""
        validate(self)
        return self

    @model_validator(mode="after")
    def _serve_rules(self, info: ValidationInfo) -> "RunConfig":
        """Validated for ``clawgym serve`` (context ``{"serving": True}``; train uses none of the section): the serve
        section against the others (:func:`~clawgym.rl.launch.serve_rules.serve_problem`): every rule broken, in
        one error."""
        if (info.context or {}).get("serving"):
            problem = serve_problem(self)
            if problem:
                raise ConfigError(problem)
        return self


def closed_keys(section: type[BaseModel] = RunConfig, prefix: str = "") -> dict[str, tuple[str, ...]]:
    """Every dotted config key with a ``Literal`` type -> its values (what :func:`validate` checks)."""
    found: dict[str, tuple[str, ...]] = {}
    for key, field in section.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            found.update(closed_keys(field.annotation, f"{prefix}{key}."))
        elif choices(field.annotation):
            found[f"{prefix}{key}"] = choices(field.annotation)
    return found


CLOSED_KEYS = closed_keys()


def judge_parts(spec: str) -> list[str]:
    spec = (spec or "none").strip()
    if spec in ("", "none"):
        return []
    return [p.strip() for p in spec.split(",") if p.strip()]


def uses_llm_judge(config: RunConfig) -> bool:
    return any(p in MODEL_JUDGES for p in judge_parts(config.judge.type))


def choice_problems(config: RunConfig) -> list[str]:
    """Each key with a ``Literal`` type (:data:`CLOSED_KEYS`) whose value is not one of the type's values."""
    problems = [choice_problem(key, functools.reduce(getattr, key.split("."), config), allowed)
                for key, allowed in CLOSED_KEYS.items()]
    bad = [p for p in judge_parts(config.judge.type) if p not in JUDGE_TYPES]
    if bad:
        problems.append(f"judge.type: unknown judge(s) {bad}; use {', '.join(('none', *JUDGE_TYPES))} (comma-joined)")
    return [problem for problem in problems if problem]


def validate(config: RunConfig) -> None:
    """Cross-field checks with clear messages (types were checked by pydantic and the names made current by
    RunConfig's validators, which run this one next)."""
    problems = choice_problems(config)
    if config.policy.quantize == "int8" and (config.policy.backend != "hf" or config.gpu.enabled
                                             or config.policy.dtype != "bfloat16"):
        problems.append("policy.quantize=int8 is the in-process CPU server's: it needs policy.backend hf, "
                        "gpu.enabled false and policy.dtype bfloat16")
    parts = judge_parts(config.judge.type)
    prob = any(p in PROB_JUDGES for p in parts)
    if config.judge.backend == "openai" and prob:
        problems.append("judge.type prob/probhint reads label probabilities from an hf model; with judge.backend "
                        "openai use prm,hint")
    elif config.judge.backend == "hf" and config.gpu.enabled and config.judge.model == "policy" and prob:
        problems.append("judge.type prob/probhint reads label probabilities from an in-process hf model, but on the "
                        "GPU partition judge.model: policy is the SGLang server; use judge.type prm,hint")
    if config.method in USES_HINTS and "hint" not in parts and "probhint" not in parts:
        problems.append(f"method {config.method!r} needs a hint judge: set judge.type to hint (or rules+prm,hint)")
    if config.method == "sft" and not config.warm_start.enabled:
        problems.append("method sft is the warm start alone (SFT on the setting's solutions, no RL steps): "
                        "set warm_start.enabled true")
    if config.judge.votes < 1:
        problems.append("judge.votes must be at least 1")
    if config.loop.batch_groups > config.loop.buffer_groups:
        problems.append("loop.buffer_groups must be >= loop.batch_groups")
    for name, value in (("rollout.workers", config.rollout.workers), ("rollout.group_size", config.rollout.group_size)):
        if value < 1:
            problems.append(f"{name} must be at least 1")
    problems += ray_problems(config)
    problems += lora_export_problems(config)
    problems += gpu_problems(config.gpu)
    problems += teacher_problems(config)
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))


def lora_export_problems(config: RunConfig) -> list[str]:
    """``trainer.lora.export``: merged weights go through every transport; adapters only to an SGLang server."""
    lora = config.trainer.lora
    if lora.export != "adapter":
        return []  # merged, or a value choice_problems reports
    if not lora.enabled:
        return ["trainer.lora.export adapter exports LoRA adapters, but trainer.lora.enabled is false: enable LoRA "
                "or set trainer.lora.export merged"]
    if lora.trainable_tokens:
        return ["trainer.lora.export adapter sends LoRA adapters alone, and trainer.lora.trainable_tokens trains "
                "embedding rows too: set trainer.lora.export merged"]
    if not config.gpu.enabled:
        return ["trainer.lora.export adapter hands the adapters to an SGLang server (the gpu section); the in-process "
                "hf policy takes merged weights: set gpu.enabled true, or trainer.lora.export merged"]
    if config.gpu.weight_transport != "auto":
        return [f"trainer.lora.export adapter sends the adapters as a peft directory (/load_lora_adapter), not through "
                f"gpu.weight_transport {config.gpu.weight_transport}: set gpu.weight_transport auto"]
    return []


def ray_problems(config: RunConfig) -> list[str]:
    """``ray.*`` only means something to the Ray executor, and a cluster address excludes a private instance."""
    ray, executor = config.ray, config.rollout.executor
    problems = []
    if executor != "ray" and (ray.address is not None or ray.num_cpus is not None):
        problems.append(f"ray.address / ray.num_cpus are set but rollout.executor is {executor!r}: "
                        "set rollout.executor=ray "
                        "(or remove the ray section)")
    if ray.address is not None and ray.num_cpus is not None:
        problems.append("ray.num_cpus sizes a private Ray instance; with ray.address the cluster's own CPUs are used: "
                        "remove ray.num_cpus")
    if ray.address is not None and not ray.address.strip():
        problems.append("ray.address is empty: give HEAD:6379, auto or ray://HEAD:10001 (or null "
                        "for a private instance)")
    if ray.num_cpus is not None and ray.num_cpus < 1:
        problems.append("ray.num_cpus must be at least 1")
    return problems


def gpu_problems(gpu: GpuSection) -> list[str]:
    """Static checks of the GPU section (whether or not it is enabled; its closed choices are in choice_problems);
    counts against GPUs are in placement."""
    problems = []
    if gpu.actor_gpus < 1:
        problems.append("gpu.actor_gpus must be at least 1")
    for name in ("rollout_gpus", "judge_gpus"):
        if getattr(gpu, name) < 0:
            problems.append(f"gpu.{name} must be >= 0")
    if gpu.nodes < 1 or gpu.gpus_per_node < 1:
        problems.append("gpu.nodes and gpu.gpus_per_node must be at least 1")
    if gpu.tensor_parallel < 1 or gpu.pipeline_parallel < 1:
        problems.append("gpu.tensor_parallel and gpu.pipeline_parallel must be at least 1")
    elif gpu.actor_gpus % (gpu.tensor_parallel * gpu.pipeline_parallel):
        problems.append(
            f"gpu.actor_gpus ({gpu.actor_gpus}) must be a multiple of tensor_parallel x pipeline_parallel "
            f"({gpu.tensor_parallel} x {gpu.pipeline_parallel}): set actor_gpus to "
            f"{gpu.tensor_parallel * gpu.pipeline_parallel * max(1, gpu.actor_gpus // (gpu.tensor_parallel * gpu.pipeline_parallel))}"  # noqa: E501  (one f-string field)
        )
    if gpu.backend == "torch+sglang" and (gpu.actor_gpus != 1 or gpu.tensor_parallel * gpu.pipeline_parallel != 1):
        problems.append(f"gpu.backend torch+sglang trains on one GPU: set gpu.actor_gpus=1 (got {gpu.actor_gpus}) "
                        "and tensor/pipeline_parallel=1, or use backend megatron+sglang for TP/PP")
    if gpu.bucket_mb < 1:
        problems.append("gpu.bucket_mb must be at least 1")
    return problems
