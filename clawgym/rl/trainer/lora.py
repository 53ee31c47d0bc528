"""LoRA adapters via peft: wrap a model reproducibly, export HF-named weights with the adapters merged, and
write the adapters alone as a peft directory (what peft and SGLang's ``/load_lora_adapter`` read)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from clawgym.rl.trainer.config import LoraSettings

if TYPE_CHECKING:
    from clawgym.rl.types import JSONObject


def wrap_lora(model: nn.Module, lora: LoraSettings, seed: int, token_ids: Sequence[int] = ()) -> nn.Module:
    """``model`` with adapters on ``lora.target_modules`` (and trainable rows of the input embedding for
    ``token_ids``, tied to the output layer when the model ties them); their init is seeded, the global RNG left
    as it was."""
    from peft import LoraConfig, get_peft_model

    tokens = {}
    if token_ids:
        embedding = model.get_input_embeddings()
        name = next(n for n, m in model.named_modules() if m is embedding)
        tokens = {"trainable_token_indices": {name.rsplit(".", 1)[-1]: sorted(set(int(i) for i in token_ids))},
                  "ensure_weight_tying": True}
    peft_config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
        **tokens,
    )
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        return get_peft_model(model, peft_config)


def merged_lora_state_dict(peft_model: nn.Module) -> dict[str, torch.Tensor]:
    """HF-named weights with W + scale * B @ A for every LoRA layer, and the trained token rows written into the
    embedding (and tied output) weights, computed without merging in place."""
    from peft.tuners.lora import LoraLayer
    from peft.tuners.trainable_tokens.layer import TrainableTokensLayer

    base = peft_model.get_base_model()
    state = {}
    deltas: dict[str, torch.Tensor] = {}
    replaced: dict[str, torch.Tensor] = {}
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer):
            delta = sum(module.get_delta_weight(a) for a in module.active_adapters if a in module.lora_A)
            deltas[f"{name}.weight"] = delta
        elif isinstance(module, TrainableTokensLayer):
            replaced[f"{name.removesuffix('.token_adapter')}.weight"] = module.get_merged_weights(
                module.active_adapters)
    for key, value in base.state_dict().items():
        if "lora_" in key or "trainable_tokens_delta" in key:
            continue
        clean = key.replace(".base_layer.", ".").replace(".token_adapter.", ".")
        if clean in replaced:
            state[clean] = replaced[clean].to(value.dtype)
        else:
            state[clean] = value + deltas[clean].to(value.dtype) if clean in deltas else value
    return state


def peft_adapter_config(settings: LoraSettings, base_model: str) -> JSONObject:
    """An ``adapter_config.json`` that peft (and SGLang's LoRA loader) read for the exported adapters."""
    return {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base_model,
        "r": settings.r, "lora_alpha": settings.alpha, "lora_dropout": 0.0, "bias": "none",
        "target_modules": sorted(settings.target_modules), "fan_in_fan_out": False, "use_rslora": False,
        "init_lora_weights": True, "modules_to_save": None,
    }


def write_peft_adapters(directory: str | Path, adapters: Mapping[str, torch.Tensor], settings: LoraSettings,
                        base_model: str = "") -> Path:
    """``adapter_model.safetensors`` (peft names: ``...q_proj.lora_A.weight``) + ``adapter_config.json`` in
    ``directory``."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in adapters.items()},
              str(directory / "adapter_model.safetensors"))
    (directory / "adapter_config.json").write_text(
        json.dumps(peft_adapter_config(settings, base_model), indent=2) + "\n")
    return directory
