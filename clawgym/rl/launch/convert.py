"""Config sections -> the trainer's and the loop's own config objects (kept apart so both stay plain)."""

from __future__ import annotations

import dataclasses
from typing import Any

from clawgym.rl.launch.schema import ConfigError, LoraSection, RunConfig
from clawgym.rl.launch.teacher import trainer_teacher


def from_sections(target: type, *sections: Any, **given: Any) -> Any:
    """Build the dataclass ``target``: ``given`` values, then same-named fields of ``sections`` (first wins).

    The config sections use the plain objects' own field names, so a field added to both travels
    without touching this module; a field only the plain object has keeps its default.
    """
    values = dict(given)
    for field in dataclasses.fields(target):
        if field.name not in values:
            source = next((section for section in sections if field.name in type(section).model_fields), None)
            if source is not None:
                values[field.name] = getattr(source, field.name)
    return target(**values)


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


def trainer_config(config: RunConfig, num_layers: int | None = None) -> Any:
    from clawgym.rl.trainer import LoraSettings, TrainerConfig

    t = config.trainer
    lora = None
    if t.lora.enabled:
        lora = LoraSettings(r=t.lora.r, alpha=t.lora.alpha, dropout=t.lora.dropout,
                            target_modules=lora_targets(t.lora, num_layers if t.lora.top_layers > 0 else None))
    correction = t.behavior_correction or ("tis" if config.policy.quantize != "none" else "none")
    return from_sections(TrainerConfig, t, method=config.method, lora=lora, teacher=trainer_teacher(config),
                         temperature=config.rollout.temperature,  # rollout logprobs are at the sampling temperature
                         behavior_correction=correction, seed=config.loop.seed)


def loop_config(config: RunConfig) -> Any:
    from clawgym.rl.loop import LoopConfig

    return from_sections(LoopConfig, config.loop, config.rollout, num_workers=config.rollout.workers,
                         judge_workers=config.judge.workers)
