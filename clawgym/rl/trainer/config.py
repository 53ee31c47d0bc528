"""What a trainer step depends on: ``TrainerConfig`` (method, optimiser, clipping, KL, OPD weights) and
``LoraSettings``; shared by the torch and Megatron trainers and by the launch configs, whose ``trainer``,
``trainer.lora``, ``method`` and ``rollout.temperature`` keys are these fields (types and defaults defined here
only; see :func:`clawgym.rl.launch.schema.plain_fields`)."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from clawgym.rl.methods import Method, Teacher, canonical_method, canonical_teacher

if TYPE_CHECKING:
    from clawgym.rl.types import JSONObject

# none: the sampler's logprobs are the old policy's; tis: they come from other (quantised) serving
# weights, corrected by truncated importance sampling (TorchTrainer._behavior)
BehaviorCorrection = Literal["none", "tis"]


@dataclass
class LoraSettings:
    """LoRA adapters (peft) on the named linear layers; only they are trained."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    # tokens whose embedding rows are trained too (input and tied output): a model whose tool-call tokens were
    # never trained (Qwen2.5-Coder-0.5B's <tool_call> row equals its padding rows) cannot emit them otherwise
    trainable_tokens: tuple[str, ...] = ()


@dataclass
class TrainerConfig:
    """Everything a train step depends on. Defaults follow OpenClaw-RL's launch scripts where they exist."""

    method: Method = "grpo"  # clawgym.rl.methods
    lr: float = 1e-5
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.98)
    eps_clip: float = 0.2
    eps_clip_high: float = 0.28
    kl_coef: float = 0.0
    # report the k3 KL to the initial weights (metric "kl") even when kl_coef is 0: one more forward pass a
    # micro-batch, read by the personal trainer's collapse alarm (serve.alarms.max_kl)
    monitor_kl: bool = False
    w_rl: float = 1.0
    w_opd: float = 1.0
    topk: int = 50
    micro_batch_size: int = 4
    grad_accum: int = 1
    max_grad_norm: float = 1.0
    lora: LoraSettings | None = None
    aggregation: Literal["token", "sequence"] = "token"
    advantage: Literal["grpo", "raw"] = "grpo"
    teacher: Teacher = "initial"  # see clawgym.rl.launch.teacher
    # header (OpenClaw-RL's) | inline: how the OPD teacher sees the hint (trainer/samples.py)
    hint_format: Literal["header", "inline"] = "header"
    # the sampling temperature: the old logprobs were computed at it, and the loop's rollouts sample at it
    temperature: float = 1.0
    gradient_checkpointing: bool = False
    # with gradient_checkpointing, only micro-batches that forward more tokens than this are checkpointed
    # (0: all); a smaller one keeps its activations (~3 MB a token for a 0.5B model) and runs no second forward
    checkpoint_above_tokens: int = 0
    # torch trainer: a GRPO group's prompt (a micro-batch's shared beginning) runs once, not once a sample;
    # the same loss and gradients for fewer tokens (not inside a checkpointed micro-batch)
    shared_prefix: bool = True
    # torch trainer: a micro-batch's shared beginning (one row: its prompt) of at least this many tokens runs
    # without gradients, once per set of weights, its keys and values reused (rl/trainer/frozen_prompt.py:
    # exact loss, the gradient through the prompt's keys and values left out); 0: off
    frozen_prompt_above: int = 0
    behavior_correction: BehaviorCorrection = "none"
    tis_cap: float = 2.0
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.lora, dict):
            self.lora = LoraSettings(**self.lora)
        if self.lora is not None:
            self.lora.target_modules = tuple(self.lora.target_modules)
            self.lora.trainable_tokens = tuple(self.lora.trainable_tokens)
        self.betas = tuple(self.betas)  # type: ignore[assignment]
        self.method = canonical_method(self.method)  # type: ignore[assignment]
        self.teacher = canonical_teacher(self.teacher)  # type: ignore[assignment]
        checks = {
            **{name: getattr(self, name) in values for name, values in _CHOICES.items()},
            "micro_batch_size": self.micro_batch_size >= 1,
            "grad_accum": self.grad_accum >= 1,
            "checkpoint_above_tokens": self.checkpoint_above_tokens >= 0,
            "frozen_prompt_above": self.frozen_prompt_above >= 0,
            "temperature": self.temperature > 0,
            "tis_cap": self.tis_cap > 0,
            "lr": self.lr >= 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"invalid TrainerConfig fields: {', '.join(f'{n}={getattr(self, n)!r}' for n in bad)}")

    def to_dict(self) -> JSONObject:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> "TrainerConfig":
        return cls(**data)


# the values of each Literal field, read from its type
_CHOICES = {name: typing.get_args(hint) for name, hint in typing.get_type_hints(TrainerConfig).items()
            if typing.get_origin(hint) is Literal}
