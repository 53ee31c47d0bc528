"""Decoding attention that reads the key/value heads as they are (grouped-query attention).

SmolLM2 has 9 query heads and 3 key/value heads. When a padding mask is present, transformers' SDPA
path repeats (or packs) the keys and values to the query heads; at a decoding step over a 4k-token
OpenClaw prompt that costs more than the attention itself. ``torch``'s SDPA attends the query heads to
the shared key/value heads directly (``enable_gqa``), with the same result (checked in
``tests/test_kv_buffer.py``; ``benchmarks/decode_speed.py`` measures it). Only single-token steps
without gradients take this path; everything else (prefill, training) is transformers' own SDPA.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

GQA_DECODE = "clawgym_gqa_decode"


def gqa_decode_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                         is_causal: bool | None = None, **kwargs):
    groups = getattr(module, "num_key_value_groups", 1)
    if query.shape[2] != 1 or groups == 1 or torch.is_grad_enabled() or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    output = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling, enable_gqa=True)
    return output.transpose(1, 2).contiguous(), None


AttentionInterface.register(GQA_DECODE, gqa_decode_attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(GQA_DECODE, sdpa_mask)


def use_gqa_decode(model: torch.nn.Module) -> bool:
    """Switch a model that uses SDPA to :data:`GQA_DECODE`; returns whether it did."""
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return False
    model.set_attn_implementation(GQA_DECODE)
    return model.config._attn_implementation == GQA_DECODE
