"""HF <-> Megatron weight conversion for Llama / Qwen2-style decoders: pure tensor code, no megatron import.

**HF <-> Megatron weight conversion** for Llama / Qwen2-style decoders (SmolLM2 is Llama): pure
   tensor code, no megatron import, tested on CPU. Names follow megatron-core's GPTModel with the
   local layer spec (``input_layernorm`` / ``pre_mlp_layernorm``) or the Transformer Engine spec
   (norms fused into ``linear_qkv.layer_norm_weight`` / ``linear_fc1.layer_norm_weight``).

   - QKV: Megatron stores one ``linear_qkv`` whose rows are grouped per KV head (GQA query group):
     ``[q_0 .. q_{h/g-1}, k, v]`` for group 0, then group 1, ... ; tensor parallelism splits that
     tensor into contiguous blocks of whole groups.
   - MLP: ``linear_fc1 = [gate; up]`` (megatron's GLU chunks the output in two: act(first) * second);
     under TP each rank holds ``[gate_r; up_r]``, so TP sharding splits gate and up separately.
   - RoPE: both HF Llama/Qwen2 and megatron use the non-interleaved rotate-half layout, so q/k rows
     need no permutation.
   - Vocab: megatron pads the vocabulary to a multiple of ``make_vocab_size_divisible_by * TP``;
     the padding rows are zeros going in and dropped coming out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import PretrainedConfig

_LAYER = re.compile(r"^decoder\.layers\.(\d+)\.")


@dataclass(frozen=True)
class ModelShape:
    """What the conversion needs to know about a Llama/Qwen2-style decoder."""

    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_hidden_size: int
    vocab_size: int
    tie_embeddings: bool
    qkv_bias: bool = False

    @classmethod
    def from_hf_config(cls, config: PretrainedConfig) -> "ModelShape":
        model_type = getattr(config, "model_type", "")
        if model_type not in ("llama", "qwen2", "mistral"):
            raise ValueError(f"HF <-> Megatron conversion supports llama/qwen2/mistral decoders, not {model_type!r}")
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        return cls(
            num_layers=config.num_hidden_layers,
            hidden_size=config.hidden_size,
            num_heads=heads,
            num_kv_heads=getattr(config, "num_key_value_heads", None) or heads,
            head_dim=head_dim,
            ffn_hidden_size=config.intermediate_size,
            vocab_size=config.vocab_size,
            tie_embeddings=bool(getattr(config, "tie_word_embeddings", False)),
            qkv_bias=model_type == "qwen2" or bool(getattr(config, "attention_bias", False)),
        )


def padded_vocab_size(vocab_size: int, divisible_by: int = 128, tp_size: int = 1) -> int:
    """Megatron's padded vocabulary: the next multiple of ``divisible_by * tp_size``."""
    multiple = divisible_by * tp_size
    return int(math.ceil(vocab_size / multiple) * multiple)


def fuse_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, shape: ModelShape) -> torch.Tensor:
    """HF q/k/v projections (weights ``[out, in]`` or biases ``[out]``) -> megatron ``linear_qkv``."""
    groups, per_group, d = shape.num_kv_heads, shape.num_heads // shape.num_kv_heads, shape.head_dim
    rest = q.shape[1:]
    q = q.reshape(groups, per_group * d, *rest)
    k = k.reshape(groups, d, *rest)
    v = v.reshape(groups, d, *rest)
    return torch.cat([q, k, v], dim=1).reshape(groups * (per_group + 2) * d, *rest)


def split_qkv(qkv: torch.Tensor, shape: ModelShape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Megatron ``linear_qkv`` -> HF q, k, v (inverse of :func:`fuse_qkv`)."""
    groups, per_group, d = shape.num_kv_heads, shape.num_heads // shape.num_kv_heads, shape.head_dim
    rest = qkv.shape[1:]
    grouped = qkv.reshape(groups, (per_group + 2) * d, *rest)
    q, k, v = torch.split(grouped, [per_group * d, d, d], dim=1)
    return (
        q.reshape(groups * per_group * d, *rest),
        k.reshape(groups * d, *rest),
        v.reshape(groups * d, *rest),
    )


def fuse_gate_up(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """HF gate_proj / up_proj -> megatron ``linear_fc1`` = [gate; up]."""
    return torch.cat([gate, up], dim=0)


def split_gate_up(fc1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    gate, up = torch.chunk(fc1, 2, dim=0)
    return gate, up


def _pad_rows(weight: torch.Tensor, rows: int) -> torch.Tensor:
    if weight.shape[0] > rows:
        raise ValueError(f"cannot pad {weight.shape[0]} vocabulary rows down to {rows}")
    if weight.shape[0] == rows:
        return weight
    return torch.cat([weight, weight.new_zeros(rows - weight.shape[0], *weight.shape[1:])], dim=0)


def _norm_names(layer: str, te_spec: bool) -> tuple[str, str]:
    if te_spec:
        return f"{layer}.self_attention.linear_qkv.layer_norm_weight", f"{layer}.mlp.linear_fc1.layer_norm_weight"
    return f"{layer}.input_layernorm.weight", f"{layer}.pre_mlp_layernorm.weight"


def hf_to_megatron(
    hf: Mapping[str, torch.Tensor], shape: ModelShape, te_spec: bool = False, padded_vocab: int | None = None
) -> dict[str, torch.Tensor]:
    """A full (unsharded) megatron GPTModel state dict from an HF Llama/Qwen2 state dict."""
    vocab_rows = padded_vocab or shape.vocab_size
    out: dict[str, torch.Tensor] = {
        "embedding.word_embeddings.weight": _pad_rows(hf["model.embed_tokens.weight"], vocab_rows),
        "decoder.final_layernorm.weight": hf["model.norm.weight"],
    }
    if not shape.tie_embeddings:
        out["output_layer.weight"] = _pad_rows(hf["lm_head.weight"], vocab_rows)
    for i in range(shape.num_layers):
        src, dst = f"model.layers.{i}", f"decoder.layers.{i}"
        attn_norm, mlp_norm = _norm_names(dst, te_spec)
        out[attn_norm] = hf[f"{src}.input_layernorm.weight"]
        out[mlp_norm] = hf[f"{src}.post_attention_layernorm.weight"]
        out[f"{dst}.self_attention.linear_qkv.weight"] = fuse_qkv(
            hf[f"{src}.self_attn.q_proj.weight"], hf[f"{src}.self_attn.k_proj.weight"],
            hf[f"{src}.self_attn.v_proj.weight"], shape
        )
        if shape.qkv_bias:
            out[f"{dst}.self_attention.linear_qkv.bias"] = fuse_qkv(
                hf[f"{src}.self_attn.q_proj.bias"], hf[f"{src}.self_attn.k_proj.bias"],
                hf[f"{src}.self_attn.v_proj.bias"], shape
            )
        out[f"{dst}.self_attention.linear_proj.weight"] = hf[f"{src}.self_attn.o_proj.weight"]
        out[f"{dst}.mlp.linear_fc1.weight"] = fuse_gate_up(hf[f"{src}.mlp.gate_proj.weight"],
                                                           hf[f"{src}.mlp.up_proj.weight"])
        out[f"{dst}.mlp.linear_fc2.weight"] = hf[f"{src}.mlp.down_proj.weight"]
    return out


def megatron_to_hf(mg: Mapping[str, torch.Tensor], shape: ModelShape, te_spec: bool = False) -> dict[str, torch.Tensor]:
    """An HF Llama/Qwen2 state dict from a full megatron state dict (vocab padding dropped)."""
    embed = mg["embedding.word_embeddings.weight"][: shape.vocab_size]
    out: dict[str, torch.Tensor] = {"model.embed_tokens.weight": embed,
                                    "model.norm.weight": mg["decoder.final_layernorm.weight"]}
    out["lm_head.weight"] = embed if shape.tie_embeddings else mg["output_layer.weight"][: shape.vocab_size]
    for i in range(shape.num_layers):
        src, dst = f"decoder.layers.{i}", f"model.layers.{i}"
        attn_norm, mlp_norm = _norm_names(src, te_spec)
        out[f"{dst}.input_layernorm.weight"] = mg[attn_norm]
        out[f"{dst}.post_attention_layernorm.weight"] = mg[mlp_norm]
        q, k, v = split_qkv(mg[f"{src}.self_attention.linear_qkv.weight"], shape)
        (out[f"{dst}.self_attn.q_proj.weight"], out[f"{dst}.self_attn.k_proj.weight"],
         out[f"{dst}.self_attn.v_proj.weight"]) = q, k, v
        if shape.qkv_bias:
            qb, kb, vb = split_qkv(mg[f"{src}.self_attention.linear_qkv.bias"], shape)
            (out[f"{dst}.self_attn.q_proj.bias"], out[f"{dst}.self_attn.k_proj.bias"],
             out[f"{dst}.self_attn.v_proj.bias"]) = qb, kb, vb
        out[f"{dst}.self_attn.o_proj.weight"] = mg[f"{src}.self_attention.linear_proj.weight"]
        gate, up = split_gate_up(mg[f"{src}.mlp.linear_fc1.weight"])
        out[f"{dst}.mlp.gate_proj.weight"], out[f"{dst}.mlp.up_proj.weight"] = gate, up
        out[f"{dst}.mlp.down_proj.weight"] = mg[f"{src}.mlp.linear_fc2.weight"]
    return out


_LAYER_PARTS = {
    "input_layernorm.weight": ["input_layernorm.weight"],
    "self_attention.linear_qkv.layer_norm_weight": ["input_layernorm.weight"],
    "pre_mlp_layernorm.weight": ["post_attention_layernorm.weight"],
    "mlp.linear_fc1.layer_norm_weight": ["post_attention_layernorm.weight"],
    "self_attention.linear_qkv.weight": ["self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                         "self_attn.v_proj.weight"],
    "self_attention.linear_qkv.bias": ["self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"],
    "self_attention.linear_proj.weight": ["self_attn.o_proj.weight"],
    "mlp.linear_fc1.weight": ["mlp.gate_proj.weight", "mlp.up_proj.weight"],
    "mlp.linear_fc2.weight": ["mlp.down_proj.weight"],
}


def megatron_tensor_to_hf(name: str, tensor: torch.Tensor, shape: ModelShape,
                          te_spec: bool = False) -> Iterator[tuple[str, torch.Tensor]]:
    """The HF ``(name, tensor)`` pairs of ONE full megatron tensor (global layer index), for streaming export.

    Gives the same tensors as :func:`megatron_to_hf` on the whole model, one parameter at a time.
    """
    del te_spec  # both norm spellings are recognised
    if name == "embedding.word_embeddings.weight":
        yield "model.embed_tokens.weight", tensor[: shape.vocab_size]
        if shape.tie_embeddings:
            yield "lm_head.weight", tensor[: shape.vocab_size]
        return
    if name == "output_layer.weight":
        yield "lm_head.weight", tensor[: shape.vocab_size]
        return
    if name == "decoder.final_layernorm.weight":
        yield "model.norm.weight", tensor
        return
    match = _LAYER.match(name)
    rest = name[match.end():] if match else ""
    if not match or rest not in _LAYER_PARTS:
        raise KeyError(f"no HF name for megatron tensor {name!r}")
    prefix = f"model.layers.{match.group(1)}."
    if "linear_qkv.weight" in rest or "linear_qkv.bias" in rest:
        parts = split_qkv(tensor, shape)
    elif rest == "mlp.linear_fc1.weight":
        parts = split_gate_up(tensor)
    else:
        parts = (tensor,)
    yield from ((prefix + hf, part) for hf, part in zip(_LAYER_PARTS[rest], parts))


# ---- tensor parallelism ---------------------------------------------------------------------

_COLUMN = ("linear_qkv.weight", "linear_qkv.bias", "word_embeddings.weight", "output_layer.weight")
_ROW = ("linear_proj.weight", "linear_fc2.weight")


def _tp_kind(name: str) -> str:
    if name.endswith("linear_fc1.weight"):
        return "fc1"
    if name.endswith(_COLUMN):
        return "column"
    if name.endswith(_ROW):
        return "row"
    return "replicated"  # norms (incl. TE's fused layer_norm_weight)


def tp_shard(name: str, tensor: torch.Tensor, rank: int, size: int, shape: ModelShape) -> torch.Tensor:
    """This TP rank's slice of a full megatron tensor (column-, row-parallel, GLU fc1, or replicated)."""
    kind = _tp_kind(name)
    if size == 1 or kind == "replicated":
        return tensor
    if "linear_qkv" in name and shape.num_kv_heads % size:
        raise ValueError(f"{name}: {shape.num_kv_heads} KV heads (query groups) do not split over TP={size}")
    if kind == "fc1":
        gate, up = split_gate_up(tensor)
        return torch.cat([_even_chunk(gate, rank, size, 0, name), _even_chunk(up, rank, size, 0, name)], dim=0)
    return _even_chunk(tensor, rank, size, 0 if kind == "column" else 1, name)


def tp_merge(name: str, shards: Sequence[torch.Tensor]) -> torch.Tensor:
    """The full tensor from all TP ranks' slices (inverse of :func:`tp_shard`)."""
    kind = _tp_kind(name)
    if len(shards) == 1 or kind == "replicated":
        return shards[0]
    if kind == "fc1":
        parts = [split_gate_up(s) for s in shards]
        return torch.cat([torch.cat([g for g, _ in parts]), torch.cat([u for _, u in parts])], dim=0)
    return torch.cat(list(shards), dim=0 if kind == "column" else 1)


def tp_merged_shape(name: str, shard_shape: Sequence[int], tp_size: int) -> tuple[int, ...]:
    """The shape :func:`tp_merge` gives for ``tp_size`` shards of ``shard_shape``."""
    merged = tp_merge(name, [torch.empty(shard_shape, device="meta")] * tp_size)
    return tuple(merged.shape)


def _even_chunk(tensor: torch.Tensor, rank: int, size: int, dim: int, name: str) -> torch.Tensor:
    if tensor.shape[dim] % size:
        raise ValueError(f"{name}: dimension {dim} of size {tensor.shape[dim]} does not split over TP={size}")
    return torch.chunk(tensor, size, dim=dim)[rank]


# ---- pipeline parallelism -------------------------------------------------------------------

def pp_layer_range(num_layers: int, pp_rank: int, pp_size: int) -> range:
    """Global layer indices held by one pipeline stage (megatron's even split)."""
    if num_layers % pp_size:
        raise ValueError(f"{num_layers} layers do not split evenly over PP={pp_size}")
    per_stage = num_layers // pp_size
    return range(pp_rank * per_stage, (pp_rank + 1) * per_stage)


def pp_stage_state(
    full: Mapping[str, torch.Tensor], num_layers: int, pp_rank: int, pp_size: int, tie_embeddings: bool
) -> dict[str, torch.Tensor]:
    """One stage's tensors with layer indices made local; embedding on the first stage, head/norm on the last.

    With tied embeddings and PP > 1 the last stage keeps its own ``output_layer.weight`` copy of the
    embedding (megatron keeps the two in sync through the embedding group).
    """
    layers = pp_layer_range(num_layers, pp_rank, pp_size)
    first, last = pp_rank == 0, pp_rank == pp_size - 1
    out: dict[str, torch.Tensor] = {}
    for name, tensor in full.items():
        match = _LAYER.match(name)
        if match:
            index = int(match.group(1))
            if index in layers:
                out[f"decoder.layers.{index - layers.start}." + name[match.end():]] = tensor
        elif name.startswith("embedding."):
            if first:
                out[name] = tensor
            if last and not first and tie_embeddings:
                out["output_layer.weight"] = tensor
        elif last:
            out[name] = tensor
    return out


def pp_to_global(stage: Mapping[str, torch.Tensor], num_layers: int, pp_rank: int,
                 pp_size: int) -> dict[str, torch.Tensor]:
    """A stage's tensors with global layer indices again (inverse of the renaming in :func:`pp_stage_state`)."""
    offset = pp_layer_range(num_layers, pp_rank, pp_size).start
    out = {}
    for name, tensor in stage.items():
        match = _LAYER.match(name)
        out[f"decoder.layers.{int(match.group(1)) + offset}." + name[match.end():] if match else name] = tensor
    return out
