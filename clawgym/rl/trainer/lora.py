"""LoRA adapters via peft: wrap a model reproducibly, and export HF-named weights with the adapters merged."""

from __future__ import annotations

import torch
from torch import nn

from clawgym.rl.trainer.config import LoraSettings


def wrap_lora(model: nn.Module, lora: LoraSettings, seed: int) -> nn.Module:
    """``model`` with adapters on ``lora.target_modules``; their init is seeded, the global RNG left as it was."""
    from peft import LoraConfig, get_peft_model

    peft_config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        return get_peft_model(model, peft_config)


def merged_lora_state_dict(peft_model: nn.Module) -> dict[str, torch.Tensor]:
    """HF-named weights with W + scale * B @ A for every LoRA layer, computed without merging in place."""
    from peft.tuners.lora import LoraLayer

    base = peft_model.get_base_model()
    state = {}
    deltas: dict[str, torch.Tensor] = {}
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer):
            delta = sum(module.get_delta_weight(a) for a in module.active_adapters if a in module.lora_A)
            deltas[f"{name}.weight"] = delta
    for key, value in base.state_dict().items():
        if "lora_" in key:
            continue
        clean = key.replace(".base_layer.", ".")
        state[clean] = value + deltas[clean].to(value.dtype) if clean in deltas else value
    return state
