"""Config sections -> the trainer's and the loop's own config objects (kept apart so both stay plain).

The sections take their keys from those objects (:func:`~clawgym.rl.launch.schema.plain_fields`), so a field
is declared once, on the plain object, and travels here without touching this module.
"""

from __future__ import annotations

from typing import Any

from clawgym.rl.launch.schema import ConfigError, LoraSection, RunConfig
from clawgym.rl.launch.teacher import trainer_teacher
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.trainer.config import LoraSettings, TrainerConfig
from clawgym.rl.warm_start.config import WarmStartConfig


def from_sections(target: type, *sections: Any, **given: Any) -> Any:
    """Build the plain config ``target``: the ``given`` values, then the values of the keys the ``sections``
    took from ``target`` (their ``plain_keys``; the first section wins). A field no key sets keeps its default.
    """
    values = dict(given)
    for section in sections:
        for key, (plain, name) in type(section).plain_keys.items():
            if plain is target and name not in values:
                values[name] = getattr(section, key)
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


def trainer_config(config: RunConfig, num_layers: int | None = None) -> TrainerConfig:
    t = config.trainer
    lora = None
    if t.lora.enabled:
        lora = from_sections(LoraSettings, t.lora,
                             target_modules=lora_targets(t.lora, num_layers if t.lora.top_layers > 0 else None))
    correction = t.behavior_correction or ("tis" if config.policy.quantize != "none" else "none")
    return from_sections(TrainerConfig, t, config, lora=lora, teacher=trainer_teacher(config),
                         temperature=config.rollout.temperature,  # rollout logprobs are at the sampling temperature
                         behavior_correction=correction, seed=config.loop.seed)


def loop_config(config: RunConfig) -> LoopConfig:
    return from_sections(LoopConfig, config.loop, config.rollout, config.judge)


def warm_start_config(config: RunConfig) -> WarmStartConfig:
    return from_sections(WarmStartConfig, config.warm_start)
