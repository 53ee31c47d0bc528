"""``clawgym train CONFIG --set key=value``: YAML launcher configs -> policy, judges, trainer, async loop.

A config has these sections (every key optional; see ``clawgym/launchers/*.yaml`` and :class:`RunConfig`)::

    method: grpo | opd | hybrid       (binary: the old name of grpo)
    env:     {id, kwargs, eval_kwargs}            # eval_kwargs are merged over kwargs for held-out evals
    policy:  {backend: hf | sglang, model, device, dtype, max_batch_size, base_url}
    judge:   {type: none | rules | prm | hint | rules+prm (comma-joined), votes, model, max_tokens}
    rollout: {workers, group_size, executor: local | ray, temperature, top_p, max_tokens, episode_timeout_s}
    trainer: {lr, eps_clip, eps_clip_high, kl_coef, micro_batch_size, grad_accum, advantage, w_rl, w_opd,
              lora: {enabled, r, alpha, dropout, target_modules}, ...}
    loop:    {steps, batch_groups, buffer_groups, max_staleness, staleness, reward, eval_every, eval_before,
              eval_after, eval_episodes, output_dir, checkpoint_every, resume, mode, seed}
    gpu:     {enabled, actor_gpus, rollout_gpus, judge_gpus, backend: megatron+sglang, tensor_parallel,
              pipeline_parallel, sglang_args}

``--set a.b=c`` overrides any key; values are parsed as YAML and coerced to the field's type
(``--set trainer.lr=1e-5``, ``--set loop.eval_before=true``, ``--set env.kwargs.personas=[student]``).
An unknown key, in the file or in ``--set``, is an error that lists the valid keys.

``gpu.enabled: true`` selects the GPU partition: the megatron trainer on the actor GPUs and SGLang
servers on the rollout (and judge) GPUs. It needs CUDA GPUs and says so when there are none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import types
import typing
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml

from clawgym.errors import UsageError
from clawgym.rl.methods import METHODS, canonical_method

logger = logging.getLogger(__name__)


class ConfigError(UsageError):
    """A launcher config (or a ``--set`` override) is invalid; the message says what and where."""


# ============================================================================================
# Schema
# ============================================================================================


@dataclass
class EnvSection:
    id: str = "clawgym/ToolCall-v0"
    kwargs: dict[str, Any] = field(default_factory=dict)
    eval_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class PolicySection:
    backend: str = "hf"  # hf | sglang
    model: str = "smollm2-135m"  # tiny-random | smollm2-135m | HF checkpoint directory
    device: str = "cpu"
    dtype: str = "float32"
    max_batch_size: int = 32
    base_url: str | None = None  # sglang: an already running server (else one is launched)
    seed: int = 0
    context_window: int | None = None  # above the model's own: extended with YaRN (models.extend_context)


@dataclass
class JudgeSection:
    type: str = "none"  # none | rules | prm | hint | rules+prm, comma-joined
    votes: int = 3
    model: str = "policy"  # "policy": the serving policy itself; else a model name/path, served frozen
    max_tokens: int = 256
    temperature: float = 0.6
    workers: int = 4


@dataclass
class RolloutSection:
    workers: int = 8
    group_size: int = 4
    executor: str = "local"  # local | ray
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    episode_timeout_s: float | None = None


@dataclass
class LoraSection:
    enabled: bool = False
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    top_layers: int = 0  # >0: adapters only in the top N decoder layers, so backward stops below them (~2x
    # cheaper steps on CPU); 0: every layer


@dataclass
class TrainerSection:
    lr: float = 1e-5
    weight_decay: float = 0.0
    eps_clip: float = 0.2
    eps_clip_high: float = 0.28
    kl_coef: float = 0.0
    w_rl: float = 1.0
    w_opd: float = 1.0
    micro_batch_size: int = 4
    grad_accum: int = 1
    max_grad_norm: float = 1.0
    aggregation: str = "token"
    advantage: str = "grpo"
    teacher: str = "initial"
    gradient_checkpointing: bool = False
    lora: LoraSection = field(default_factory=LoraSection)


@dataclass
class LoopSection:
    steps: int = 10
    max_minutes: float | None = None  # stop training after this much wall time (the step in flight finishes)
    batch_groups: int = 4
    buffer_groups: int = 8
    max_staleness: int = 2
    staleness: str = "drop"
    reward: str = "auto"
    prm_coef: float = 1.0
    drop_zero_advantage: bool = True
    eval_every: int = 0
    eval_before: bool = False
    eval_after: bool = False
    eval_episodes: int | None = None
    eval_temperature: float = 0.0
    checkpoint_every: int = 1
    resume: bool = True
    output_dir: str = "runs/train"
    mode: str = "async"
    seed: int = 0
    tensorboard: bool = True
    plot: bool = True
    torch_threads: int = 0  # intra-op threads per torch op; 0 = torch's default. 1 lets the serving and
    # training threads each own a core on a small CPU machine (and avoids OpenMP stalls on a loaded one)


GPU_BACKENDS = ("megatron+sglang",)


@dataclass
class GpuSection:
    """The GPU partition (OpenClaw-RL's actor / rollout / PRM split). Ignored unless ``enabled``."""

    enabled: bool = False
    actor_gpus: int = 4  # megatron trainer (TP x PP x DP)
    rollout_gpus: int = 2  # SGLang policy server(s)
    judge_gpus: int = 2  # SGLang judge server (PRM / hint), 0 to share the rollout server
    backend: str = "megatron+sglang"
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sglang_args: list[str] = field(default_factory=list)  # passed through to sglang.launch_server


@dataclass
class RunConfig:
    method: str = "grpo"
    env: EnvSection = field(default_factory=EnvSection)
    policy: PolicySection = field(default_factory=PolicySection)
    judge: JudgeSection = field(default_factory=JudgeSection)
    rollout: RolloutSection = field(default_factory=RolloutSection)
    trainer: TrainerSection = field(default_factory=TrainerSection)
    loop: LoopSection = field(default_factory=LoopSection)
    gpu: GpuSection = field(default_factory=GpuSection)
    serve: dict[str, Any] = field(default_factory=dict)  # read by `clawgym serve`; ignored by train


# ============================================================================================
# Loading, overrides, coercion
# ============================================================================================


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_optional(tp: Any) -> tuple[bool, Any]:
    args = typing.get_args(tp)
    if (typing.get_origin(tp) in (typing.Union, types.UnionType)) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return True, rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]
    return False, tp


def _coerce_number(value: Any, kind: type, where: str) -> Any:
    """An int or float from YAML or a ``--set`` string; bools and non-integral floats for ints are errors."""
    if not isinstance(value, bool):
        if isinstance(value, str):
            try:
                return kind(value)
            except ValueError:
                pass
        elif isinstance(value, int) or (isinstance(value, float) and (kind is float or value.is_integer())):
            return kind(value)
    raise ConfigError(f"{where}: expected {'an integer' if kind is int else 'a number'}, got {value!r}")


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """``value`` (parsed YAML) as type ``tp``; ints widen to float, strings parse to numbers."""
    optional, inner = _is_optional(tp)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{where}: null is not allowed (expected {getattr(inner, '__name__', inner)})")
    origin = typing.get_origin(inner)
    if inner is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            return value.lower() in ("true", "yes", "on", "1")
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if inner in (int, float):
        return _coerce_number(value, inner, where)
    if inner is str:
        if isinstance(value, (dict, list)):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    if origin is list:
        if isinstance(value, str):  # `--set a.b=x,y` or a single item
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = typing.get_args(inner) or (Any,)
        return [_coerce(v, item, f"{where}[{i}]") if item is not Any else v for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if dataclasses.is_dataclass(inner):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return _build(inner, value, where)
    return value


def _build(cls: type, data: dict[str, Any], where: str = "") -> Any:
    hints = _hints(cls)
    unknown = sorted(set(data) - set(hints))
    if unknown:
        prefix = f"{where}." if where else ""
        raise ConfigError(
            f"unknown config key(s) {', '.join(prefix + k for k in unknown)}; valid keys{(' under ' + where) if where else ''}: "
            f"{', '.join(sorted(hints))}"
        )
    values = {}
    for name, value in data.items():
        values[name] = _coerce(value, hints[name], f"{where}.{name}" if where else name)
    return cls(**values)


def _set_path(data: dict[str, Any], dotted: str, raw: str) -> None:
    """Set ``a.b.c`` in nested dicts, checking each key against the schema (free-form dicts excepted)."""
    keys = dotted.split(".")
    if not all(keys):
        raise ConfigError(f"--set {dotted}={raw}: empty key")
    cls: Any = RunConfig
    node = data
    for depth, key in enumerate(keys):
        where = ".".join(keys[: depth + 1])
        last = depth == len(keys) - 1
        if cls is not None:
            hints = _hints(cls)
            if key not in hints:
                parent = ".".join(keys[:depth]) or "the top level"
                raise ConfigError(f"--set {dotted}: unknown key {where!r}; valid keys under {parent}: {', '.join(sorted(hints))}")
            tp = _is_optional(hints[key])[1]
            cls = tp if dataclasses.is_dataclass(tp) else None  # below a plain dict, keys are free-form
        if last:
            try:
                node[key] = yaml.safe_load(raw) if raw != "" else ""
            except yaml.YAMLError:
                node[key] = raw
            return
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> RunConfig:
    """Read a YAML config, apply ``key=value`` overrides, and validate the result."""
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"config file {path} does not exist")
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            raise ConfigError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        data = loaded
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, raw = item.split("=", 1)
        _set_path(data, key.strip(), raw.strip())
    config = _build(RunConfig, data)
    validate(config)
    return config


def validate(config: RunConfig) -> None:
    """Cross-field checks with clear messages (types were checked while building)."""
    problems = []
    config.method = canonical_method(config.method)
    if config.method not in METHODS:
        problems.append(f"method must be grpo, opd or hybrid, got {config.method!r}")
    if config.policy.backend not in ("hf", "sglang"):
        problems.append(f"policy.backend must be hf or sglang (a backend that can receive weights), got {config.policy.backend!r}")
    if config.policy.dtype not in ("float32", "bfloat16", "float16"):
        problems.append(f"policy.dtype must be float32, bfloat16 or float16, got {config.policy.dtype!r}")
    if config.rollout.executor not in ("local", "ray"):
        problems.append(f"rollout.executor must be local or ray, got {config.rollout.executor!r}")
    parts = judge_parts(config.judge.type)
    bad = [p for p in parts if p not in ("rules", "prm", "hint", "rules+prm")]
    if bad:
        problems.append(f"judge.type: unknown judge(s) {bad}; use none, rules, prm, hint, rules+prm (comma-joined)")
    if config.method in ("opd", "hybrid") and "hint" not in parts:
        problems.append(f"method {config.method!r} needs a hint judge: set judge.type to hint (or rules+prm,hint)")
    if config.judge.votes < 1:
        problems.append("judge.votes must be at least 1")
    if config.loop.batch_groups > config.loop.buffer_groups:
        problems.append("loop.buffer_groups must be >= loop.batch_groups")
    for name, value in (("rollout.workers", config.rollout.workers), ("rollout.group_size", config.rollout.group_size)):
        if value < 1:
            problems.append(f"{name} must be at least 1")
    problems += gpu_problems(config.gpu)
    if problems:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(problems))


def judge_parts(spec: str) -> list[str]:
    spec = (spec or "none").strip()
    if spec in ("", "none"):
        return []
    return [p.strip() for p in spec.split(",") if p.strip()]


def gpu_problems(gpu: GpuSection) -> list[str]:
    """Static checks of the GPU section (whether or not it is enabled)."""
    problems = []
    if gpu.backend not in GPU_BACKENDS:
        problems.append(f"gpu.backend must be one of {GPU_BACKENDS}, got {gpu.backend!r}")
    for name in ("actor_gpus", "rollout_gpus"):
        if getattr(gpu, name) < 1:
            problems.append(f"gpu.{name} must be at least 1")
    if gpu.judge_gpus < 0:
        problems.append("gpu.judge_gpus must be >= 0")
    if gpu.tensor_parallel < 1 or gpu.pipeline_parallel < 1:
        problems.append("gpu.tensor_parallel and gpu.pipeline_parallel must be at least 1")
    elif gpu.actor_gpus % (gpu.tensor_parallel * gpu.pipeline_parallel):
        problems.append(
            f"gpu.actor_gpus ({gpu.actor_gpus}) must be a multiple of tensor_parallel x pipeline_parallel "
            f"({gpu.tensor_parallel} x {gpu.pipeline_parallel})"
        )
    return problems


@dataclass
class GpuPlan:
    actor: list[int]
    rollout: list[int]
    judge: list[int]


def gpu_plan(gpu: GpuSection, available: int | None = None) -> GpuPlan:
    """Assign GPU indices to the actor, rollout and judge roles; raise clearly when there are too few."""
    if available is None:
        import torch

        available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    need = gpu.actor_gpus + gpu.rollout_gpus + gpu.judge_gpus
    if available == 0:
        raise ConfigError(
            f"gpu.enabled is true, but this machine has no CUDA GPU. The gpu section selects the megatron "
            f"trainer ({gpu.actor_gpus} actor GPUs) and SGLang servers ({gpu.rollout_gpus} rollout + "
            f"{gpu.judge_gpus} judge GPUs): it needs {need} GPUs. Set gpu.enabled=false to train on CPU."
        )
    if available < need:
        raise ConfigError(f"the gpu section needs {need} GPUs (actor {gpu.actor_gpus} + rollout {gpu.rollout_gpus} + "
                          f"judge {gpu.judge_gpus}); this machine has {available}")
    actor = list(range(gpu.actor_gpus))
    rollout = list(range(gpu.actor_gpus, gpu.actor_gpus + gpu.rollout_gpus))
    judge = list(range(gpu.actor_gpus + gpu.rollout_gpus, need))
    return GpuPlan(actor, rollout, judge)


# ============================================================================================
# Building the run
# ============================================================================================


def lora_targets(lora: LoraSection, num_layers: int | None) -> tuple[str, ...]:
    """The module names LoRA wraps: the given suffixes, restricted to the top ``top_layers`` layers if set.

    peft matches a target against the end of each module name, so ``layers.29.self_attn.q_proj``
    selects that one projection in layer 29.
    """
    if lora.top_layers <= 0:
        return tuple(lora.target_modules)
    if num_layers is None:
        raise ConfigError("trainer.lora.top_layers needs the model's layer count")
    first = max(0, num_layers - lora.top_layers)
    return tuple(f"layers.{i}.{module}" for i in range(first, num_layers) for module in lora.target_modules)


def trainer_config(config: RunConfig, num_layers: int | None = None) -> Any:
    from clawgym.rl.trainer import LoraSettings, TrainerConfig

    t = config.trainer
    lora = None
    if t.lora.enabled:
        lora = LoraSettings(r=t.lora.r, alpha=t.lora.alpha, dropout=t.lora.dropout,
                            target_modules=lora_targets(t.lora, num_layers if t.lora.top_layers > 0 else None))
    return TrainerConfig(
        method=config.method,  # type: ignore[arg-type]
        lr=t.lr,
        weight_decay=t.weight_decay,
        eps_clip=t.eps_clip,
        eps_clip_high=t.eps_clip_high,
        kl_coef=t.kl_coef,
        w_rl=t.w_rl,
        w_opd=t.w_opd,
        micro_batch_size=t.micro_batch_size,
        grad_accum=t.grad_accum,
        max_grad_norm=t.max_grad_norm,
        lora=lora,
        aggregation=t.aggregation,  # type: ignore[arg-type]
        advantage=t.advantage,  # type: ignore[arg-type]
        teacher=t.teacher,  # type: ignore[arg-type]
        temperature=1.0,  # HFPolicy logprobs are at temperature 1 whatever the sampling temperature
        gradient_checkpointing=t.gradient_checkpointing,
        seed=config.loop.seed,
    )


def loop_config(config: RunConfig) -> Any:
    from clawgym.rl.loop import LoopConfig

    l, r = config.loop, config.rollout
    return LoopConfig(
        steps=l.steps,
        max_minutes=l.max_minutes,
        batch_groups=l.batch_groups,
        group_size=r.group_size,
        num_workers=r.workers,
        buffer_groups=l.buffer_groups,
        max_staleness=l.max_staleness,
        staleness=l.staleness,  # type: ignore[arg-type]
        reward=l.reward,  # type: ignore[arg-type]
        prm_coef=l.prm_coef,
        drop_zero_advantage=l.drop_zero_advantage,
        temperature=r.temperature,
        top_p=r.top_p,
        max_tokens=r.max_tokens,
        episode_timeout_s=r.episode_timeout_s,
        judge_workers=config.judge.workers,
        eval_every=l.eval_every,
        eval_before=l.eval_before,
        eval_after=l.eval_after,
        eval_episodes=l.eval_episodes,
        eval_temperature=l.eval_temperature,
        checkpoint_every=l.checkpoint_every,
        resume=l.resume,
        output_dir=l.output_dir,
        mode=l.mode,  # type: ignore[arg-type]
        seed=l.seed,
        tensorboard=l.tensorboard,
        plot=l.plot,
    )


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


@dataclass
class Components:
    """Everything :func:`build` made; :meth:`close` releases the policies."""

    loop: Any
    policy: Any
    judge_policy: Any = None

    async def close(self) -> None:
        await self.policy.close()
        if self.judge_policy is not None and self.judge_policy is not self.policy:
            await self.judge_policy.close()


def _env_tools(config: RunConfig) -> list[dict[str, Any]] | None:
    """The env's tool schemas (OPD teacher prompts render them like the student's)."""
    import gymnasium as gym

    import clawgym  # noqa: F401

    env = gym.make(config.env.id, **config.env.kwargs)
    try:
        return list(getattr(env.unwrapped, "tools", None) or []) or None
    finally:
        env.close()


def build_judges(config: RunConfig, policy: Any) -> tuple[list[Any], Any]:
    from clawgym.rl.judge import make_judges
    from clawgym.core.policy import SamplingParams

    parts = judge_parts(config.judge.type)
    if not parts:
        return [], None
    judge_policy = None
    if any(p in ("prm", "hint", "rules+prm") for p in parts):
        if config.judge.model == "policy":
            judge_policy = policy
        else:
            from clawgym.rl.policy.hf import HFPolicy

            judge_policy = HFPolicy.from_pretrained(config.judge.model, device=config.policy.device, name=f"judge:{config.judge.model}")
    sampling = SamplingParams(temperature=config.judge.temperature, max_tokens=config.judge.max_tokens)
    judges = []
    for part in parts:
        if part == "rules":
            judges += make_judges("rules")
        else:
            judges += make_judges(part, judge_policy, m=config.judge.votes, sampling=sampling)
    return judges, judge_policy


def build(config: RunConfig, on_step: Any = None) -> Components:
    """Policy (serving), judges, trainer and the loop for a validated config (CPU / one device path)."""
    from clawgym.rl.loop import AsyncRLLoop

    if config.gpu.enabled:
        return _build_gpu(config, on_step)
    if config.policy.backend != "hf":
        raise ConfigError(f"policy.backend {config.policy.backend!r} needs the gpu section (gpu.enabled: true); "
                          "without GPUs use backend hf")
    from clawgym.rl.policy.hf import HFPolicy
    from clawgym.rl.policy.models import load_model
    from clawgym.rl.trainer import TorchTrainer

    dtype = _dtype(config.policy.dtype)
    serve_model, tokenizer = load_model(config.policy.model, device=config.policy.device, dtype=dtype, seed=config.policy.seed,
                                        context_window=config.policy.context_window)
    train_model, _ = load_model(config.policy.model, device=config.policy.device, dtype=dtype, seed=config.policy.seed,
                                context_window=config.policy.context_window)
    policy = HFPolicy(serve_model, tokenizer, name=config.policy.model, max_batch_size=config.policy.max_batch_size, seed=config.loop.seed)
    num_layers = getattr(train_model.config, "num_hidden_layers", None)
    trainer = TorchTrainer(train_model, tokenizer, trainer_config(config, num_layers))
    judges, judge_policy = build_judges(config, policy)
    tools = _env_tools(config) if config.method in ("opd", "hybrid") else None
    eval_kwargs = {**config.env.kwargs, **config.env.eval_kwargs}
    loop = AsyncRLLoop(
        config.env.id,
        policy,
        trainer,
        loop_config(config),
        judges=judges,
        env_kwargs=dict(config.env.kwargs),
        eval_env_kwargs=eval_kwargs,
        executor=config.rollout.executor,
        tools=tools,
        on_step=on_step,
    )
    return Components(loop, policy, judge_policy)


@contextmanager
def _visible_gpus(indices: Sequence[int]) -> Iterator[None]:
    old = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in indices)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = old


def _build_gpu(config: RunConfig, on_step: Any = None) -> Components:
    """The GPU partition: megatron trainer on the actor GPUs, SGLang servers for rollout and judge."""
    from clawgym.rl.loop import AsyncRLLoop

    gpu = config.gpu
    plan = gpu_plan(gpu)  # raises clearly without enough CUDA GPUs
    from clawgym.rl.policy.models import load_tokenizer, smollm2_checkpoint_dir
    from clawgym.rl.policy.sglang import SGLangPolicy
    from clawgym.rl.trainer.megatron import MegatronConfig, MegatronTrainer, megatron_available

    ok, why = megatron_available()
    if not ok:
        raise ConfigError(f"gpu section: {why}")
    model_dir = str(smollm2_checkpoint_dir()) if config.policy.model == "smollm2-135m" else config.policy.model
    if not Path(model_dir).is_dir():
        raise ConfigError(f"gpu section: policy.model must be an HF checkpoint directory for megatron + SGLang, got {model_dir!r}")
    if len(plan.actor) != 1 and os.environ.get("WORLD_SIZE") != str(len(plan.actor)):
        raise ConfigError(
            f"gpu.actor_gpus={len(plan.actor)}: the megatron trainer needs one process per actor GPU; this launcher "
            "drives a single in-process trainer rank (actor_gpus: 1). For more actor GPUs run the trainer under "
            "torchrun (python -m clawgym.rl.trainer.megatron) and feed it the loop's pending.jsonl."
        )
    if config.policy.base_url:
        policy = SGLangPolicy(model_dir, config.policy.base_url, tokenizer=model_dir)
    else:
        with _visible_gpus(plan.rollout):
            policy = SGLangPolicy.launch(model_dir, ["--tp-size", str(len(plan.rollout)), *gpu.sglang_args])
    judge_policy = None
    judges: list[Any] = []
    if any(p in ("prm", "hint", "rules+prm") for p in judge_parts(config.judge.type)):
        if plan.judge and config.judge.model != "policy":
            with _visible_gpus(plan.judge):
                judge_policy = SGLangPolicy.launch(config.judge.model, ["--tp-size", str(len(plan.judge)), *gpu.sglang_args])
        else:
            judge_policy = policy
    if judge_parts(config.judge.type):
        from clawgym.rl.judge import make_judges

        for part in judge_parts(config.judge.type):
            judges += make_judges(part, judge_policy, m=config.judge.votes) if part != "rules" else make_judges("rules")
    with _visible_gpus(plan.actor):
        trainer = MegatronTrainer(
            model_dir,
            load_tokenizer(model_dir),
            MegatronConfig(tensor_parallel=gpu.tensor_parallel, pipeline_parallel=gpu.pipeline_parallel, trainer=trainer_config(config)),
        )
    loop = AsyncRLLoop(
        config.env.id,
        policy,
        trainer,
        loop_config(config),
        judges=judges,
        env_kwargs=dict(config.env.kwargs),
        eval_env_kwargs={**config.env.kwargs, **config.env.eval_kwargs},
        executor=config.rollout.executor,
        tools=_env_tools(config) if config.method in ("opd", "hybrid") else None,
        on_step=on_step,
    )
    return Components(loop, policy, judge_policy)


async def run_config(config: RunConfig, on_step: Any = None) -> Any:
    """Build and run one training run; returns the :class:`~clawgym.rl.loop.LoopResult`."""
    if config.loop.torch_threads > 0:
        import torch

        torch.set_num_threads(config.loop.torch_threads)
    components = await asyncio.to_thread(build, config, on_step)
    try:
        return await components.loop.run()
    finally:
        await components.close()


def format_summary(result: Any) -> str:
    lines = [f"trained {result.steps} steps (policy version {result.version}); output in {result.output_dir}"]
    if result.history:
        first, last = result.history[0], result.history[-1]
        lines.append(f"train reward (batch mean): first step {first['reward_mean']:.3f}, last step {last['reward_mean']:.3f}")
    if result.eval_before is not None or result.eval_after is not None:
        before = result.eval_before or {}
        after = result.eval_after or {}
        lines.append(
            f"held-out eval reward: {before.get('eval_reward', float('nan')):.3f} -> {after.get('eval_reward', float('nan')):.3f}; "
            f"success: {before.get('eval_success', float('nan')):.3f} -> {after.get('eval_success', float('nan')):.3f}"
        )
    refused = {k: v for k, v in result.counters.items() if k.startswith("refused/")}
    if refused:
        lines.append("refused / dropped: " + ", ".join(f"{k[8:]}={int(v)}" for k, v in sorted(refused.items())))
    if result.curve_path is not None:
        lines.append(f"learning curve: {result.curve_path}")
    return "\n".join(lines)


def main_train(args: Any) -> int:
    """The body of ``clawgym train CONFIG --set k=v``; a ConfigError reaches the CLI (one line, exit 2)."""
    config = load_config(getattr(args, "config", None), list(getattr(args, "set", None) or []))
    result = asyncio.run(run_config(config))
    print(format_summary(result))
    return 0
