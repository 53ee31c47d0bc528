"""LoRA adapters on megatron-core's tensor-/pipeline-parallel linear layers (our own code, not peft's).

Why a module of its own: megatron fuses HF's q/k/v into ``linear_qkv`` and gate/up into ``linear_fc1``, and
splits every linear over the TP ranks. To train *the same* adapters as peft on the HF model (one A/B pair
per HF projection), each fused linear gets one A/B pair per HF part, and their outputs are laid out the way
megatron lays out the fused output (q/k/v interleaved per query group; ``[gate; up]``).

Sharding, for ``y = W x + scale * B (A x)``:

- column-parallel base (``linear_qkv``, ``linear_fc1``; ``W`` split on its output rows): ``A`` is whole on
  every TP rank, ``B`` is split along its output dim like ``W``. ``A x`` passes megatron's
  ``copy_to_tensor_model_parallel_region`` (identity forward, all-reduce backward), so every rank's grad of
  ``A`` is the full one.
- row-parallel base (``linear_proj``, ``linear_fc2``; ``W`` split on its input columns): ``A`` is split
  along its input dim like ``W``, ``B`` is whole. ``A_local x_local`` passes
  ``reduce_from_tensor_model_parallel_region`` (all-reduce forward) before ``B``.

This assumes ``sequence_parallel=False`` (what :func:`~clawgym.rl.trainer.megatron_setup.transformer_config_from_hf`
sets): with sequence parallelism the column-parallel input would arrive split along the sequence.
Whole tensors carry no ``tensor_model_parallel`` flag, so megatron counts them once in the grad norm.
Adapters sit beside their linear (``self_attention.linear_qkv_lora``) and act through a forward hook, so
the base weights keep their names and their sharded checkpoint layout. HF/peft names
(``base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight``) are used for import and export.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
from torch import nn

from clawgym.rl.trainer.lora import peft_adapter_config  # noqa: F401  (re-exported)
from clawgym.rl.trainer.megatron_convert import ModelShape

if TYPE_CHECKING:
    from clawgym.rl.trainer.config import LoraSettings

# megatron linear (relative to a TransformerLayer) -> (parallel kind, {part: HF module relative to the layer})
LORA_LINEARS: dict[str, tuple[str, dict[str, str]]] = {
    "self_attention.linear_qkv": ("column",
                                  {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj"}),
    "self_attention.linear_proj": ("row", {"o": "self_attn.o_proj"}),
    "mlp.linear_fc1": ("column", {"gate": "mlp.gate_proj", "up": "mlp.up_proj"}),
    "mlp.linear_fc2": ("row", {"down": "mlp.down_proj"}),
}
PEFT_PREFIX = "base_model.model.model.layers."
_ADAPTER_NAME = re.compile(r"^decoder\.layers\.(\d+)\.(self_attention|mlp)\.(linear_\w+)_lora\.([AB])_(\w+)$")
_PEFT_NAME = re.compile(r"^base_model\.model\.model\.layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])(?:\.default)?\.weight$")


def parse_targets(target_modules: Iterable[str]) -> dict[str, set[int] | None]:
    """HF module name -> the global layers it is adapted in (None: all). ``layers.29.q_proj`` (what the launcher's
    ``top_layers`` produces, peft's suffix match) names one layer; a bare ``q_proj`` every layer."""
    out: dict[str, set[int] | None] = {}
    for target in target_modules:
        match = re.fullmatch(r"(?:.*\.)?layers\.(\d+)\.(?:\w+\.)?(\w+)", target)
        if match is None:
            out[target.split(".")[-1]] = None
        elif out.get(match.group(2), set()) is not None:
            out.setdefault(match.group(2), set()).add(int(match.group(1)))  # type: ignore[union-attr]
    return out


def check_lora_settings(settings: LoraSettings, transformer_engine: bool) -> None:
    """Refuse what these adapters do not implement, with what to change."""
    unknown = set(parse_targets(settings.target_modules)) - {hf.split(".")[1] for _, parts in LORA_LINEARS.values()
                                                             for hf in parts.values()}
    if unknown:
        raise ValueError(f"LoRA target_modules {sorted(unknown)} are not linears of a Llama/Qwen2 layer")
    if settings.dropout:
        raise ValueError("the megatron trainer's LoRA has no dropout: set lora.dropout to 0")
    if transformer_engine:
        raise ValueError("LoRA on the megatron trainer needs the local layer spec (transformer_engine: false): "
                         "TE fuses the input norm into linear_qkv/linear_fc1, so the adapter "
                         "cannot see the normed input")
    if settings.r < 1:
        raise ValueError(f"lora.r must be >= 1, got {settings.r}")


class LoraAdapter(nn.Module):
    """The A/B pairs of one megatron linear's HF parts, holding this TP rank's shards."""

    def __init__(self, kind: str, part_shapes: Mapping[str, tuple[int, int]],
                 chosen: Iterable[str], r: int, scale: float,
                 qkv_groups: tuple[int, int, int] | None, dtype: torch.dtype,
                 device: torch.device, tp_size: int) -> None:
        super().__init__()
        self.kind, self.scale, self.tp_size = kind, scale, tp_size
        self.all_parts = tuple(part_shapes)  # every HF part of the fused output, in megatron's order
        self.out_sizes = {p: out for p, (out, _) in part_shapes.items()}  # local output rows per part
        self.qkv_groups = qkv_groups  # (local query groups, q rows per group, head_dim) for linear_qkv
        self.enabled = True
        self.parts = list(chosen)  # the parts that carry an adapter; the others add nothing
        self.split_dims: dict[str, int] = {}  # param name -> TP split dim; absent = whole on every rank
        for part in self.parts:
            out_local, in_local = part_shapes[part]
            setattr(self, f"A_{part}", nn.Parameter(torch.zeros(r, in_local, dtype=dtype, device=device)))
            setattr(self, f"B_{part}", nn.Parameter(torch.zeros(out_local, r, dtype=dtype, device=device)))
            self.split_dims[f"B_{part}" if kind == "column" else f"A_{part}"] = 0 if kind == "column" else 1
        from megatron.core import tensor_parallel

        for name, param in self.named_parameters():
            if name in self.split_dims and tp_size > 1:
                tensor_parallel.set_tensor_model_parallel_attributes(param, True, self.split_dims[name], 1)
            else:
                tensor_parallel.set_defaults_if_not_set_tensor_model_parallel_attributes(param)

    def _fuse_last(self, pieces: Mapping[str, torch.Tensor], like: torch.Tensor) -> torch.Tensor:
        """Per-part outputs ``[..., out_p]`` -> the fused local output ``[..., out]`` in megatron's layout."""
        full = [pieces[p] if p in pieces else like.new_zeros(*like.shape[:-1], self.out_sizes[p])
                for p in self.all_parts]
        if self.qkv_groups is None:
            return torch.cat(full, dim=-1)
        groups, q_rows, d = self.qkv_groups
        lead = like.shape[:-1]
        q, k, v = (t.reshape(*lead, groups, -1) for t in full)
        return torch.cat([q, k, v], dim=-1).reshape(*lead, groups * (q_rows + 2 * d))

    def delta_output(self, x: torch.Tensor) -> torch.Tensor:
        from megatron.core import tensor_parallel

        pieces = {}
        for part in self.parts:
            a, b = getattr(self, f"A_{part}"), getattr(self, f"B_{part}")
            h = torch.nn.functional.linear(x, a)
            if self.tp_size > 1:
                h = (tensor_parallel.copy_to_tensor_model_parallel_region(h) if self.kind == "column"
                     else tensor_parallel.reduce_from_tensor_model_parallel_region(h))
            pieces[part] = torch.nn.functional.linear(h, b) * self.scale
        like = pieces[self.parts[0]]
        return self._fuse_last(pieces, like)

    def hook(self, module: nn.Module, args: tuple, output: tuple[torch.Tensor, torch.Tensor | None]
             ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Forward hook on the base linear: megatron linears return ``(output, bias)``."""
        if not self.enabled:
            return output
        out, bias = output
        return out + self.delta_output(args[0]).to(out.dtype), bias

    @torch.no_grad()
    def delta_weight(self) -> torch.Tensor:
        """``scale * B @ A`` for this rank's slice of the base weight, in the fused layout."""
        pieces = {p: (getattr(self, f"B_{p}") @ getattr(self, f"A_{p}")).T * self.scale for p in self.parts}
        return self._fuse_last(pieces, pieces[self.parts[0]]).T

    def sharded_state_dict(self, prefix: str = "", sharded_offsets: tuple = (), metadata: dict | None = None) -> dict:
        """Dist-checkpoint layout: split tensors sharded on their TP dim, whole ones replicated."""
        from megatron.core.transformer.utils import make_sharded_tensors_for_checkpoint

        return make_sharded_tensors_for_checkpoint(self.state_dict(prefix="", keep_vars=True), prefix,
                                                   self.split_dims, sharded_offsets)


def _part_sizes(linear: str, shape: ModelShape) -> dict[str, tuple[int, int]]:
    """Full (out, in) of every HF part of a megatron linear."""
    h, d = shape.hidden_size, shape.head_dim
    q, kv, ffn = shape.num_heads * d, shape.num_kv_heads * d, shape.ffn_hidden_size
    return {
        "self_attention.linear_qkv": {"q": (q, h), "k": (kv, h), "v": (kv, h)},
        "self_attention.linear_proj": {"o": (h, q)},
        "mlp.linear_fc1": {"gate": (ffn, h), "up": (ffn, h)},
        "mlp.linear_fc2": {"down": (h, ffn)},
    }[linear]


def _submodule(root: nn.Module, dotted: str) -> nn.Module:
    for attr in dotted.split("."):
        root = getattr(root, attr)
    return root


def attach_lora(model: nn.Module, settings: LoraSettings, shape: ModelShape, tp_rank: int, tp_size: int,
                layer_offset: int, seed: int) -> dict[str, LoraAdapter]:
    """Freeze ``model`` (a GPTModel stage) and add adapters on the targeted linears of every local layer.

    A is drawn like peft's default (Kaiming-uniform, a=sqrt(5)) from a generator seeded by ``seed`` and the
    global layer and part, in full, so every TP rank slices the same tensor; B starts at zero.
    Returns the adapters by their local module name.
    """
    model.requires_grad_(False)
    targets = parse_targets(settings.target_modules)
    scale = settings.alpha / settings.r
    adapters: dict[str, LoraAdapter] = {}
    for local_index, layer in enumerate(model.decoder.layers):
        for linear_name, (kind, hf_parts) in LORA_LINEARS.items():
            global_index = layer_offset + local_index
            chosen = [p for p, hf in hf_parts.items() if hf.split(".")[1] in targets
                      and (targets[hf.split(".")[1]] is None or global_index in targets[hf.split(".")[1]])]
            if not chosen:
                continue
            base = _submodule(layer, linear_name)
            sizes = _part_sizes(linear_name, shape)
            local = {p: (o // tp_size, i) if kind == "column" else (o, i // tp_size) for p, (o, i) in sizes.items()}
            groups = None
            if linear_name.endswith("linear_qkv"):
                groups = (shape.num_kv_heads // tp_size,
                          (shape.num_heads // shape.num_kv_heads) * shape.head_dim, shape.head_dim)
            weight = base.weight
            adapter = LoraAdapter(kind, local, chosen, settings.r, scale, groups, weight.dtype, weight.device, tp_size)
            with torch.no_grad():
                for p in chosen:
                    generator = torch.Generator().manual_seed(_stable_seed(seed, global_index, linear_name, p))
                    full_a = torch.empty(settings.r, sizes[p][1])
                    bound = 1.0 / math.sqrt(sizes[p][1])  # kaiming_uniform_(a=sqrt(5)) on fan_in
                    full_a.uniform_(-bound, bound, generator=generator)
                    a = full_a if kind == "column" else full_a.chunk(tp_size, dim=1)[tp_rank]
                    getattr(adapter, f"A_{p}").copy_(a)
            parent_name, _, leaf = linear_name.rpartition(".")
            _submodule(layer, parent_name).add_module(f"{leaf}_lora", adapter)
            base.register_forward_hook(adapter.hook)
            adapters[f"decoder.layers.{local_index}.{linear_name}_lora"] = adapter
    if not adapters and layer_offset == 0 and len(model.decoder.layers) == shape.num_layers:
        raise ValueError(f"LoRA target_modules {sorted(settings.target_modules)} match no linear of the model")
    return adapters


def _stable_seed(seed: int, layer: int, linear: str, part: str) -> int:
    """A seed that does not depend on Python's hash randomisation (every rank must agree)."""
    key = f"{seed}/{layer}/{linear}/{part}".encode()
    value = 0
    for byte in key:
        value = (value * 131 + byte) % (2**61 - 1)
    return value


@contextmanager
def adapters_disabled(adapters: Mapping[str, LoraAdapter]) -> Iterator[None]:
    """The base model alone (the initial weights: KL reference and 'initial' teacher)."""
    for adapter in adapters.values():
        adapter.enabled = False
    try:
        yield
    finally:
        for adapter in adapters.values():
            adapter.enabled = True


@torch.no_grad()
def merged_local_state(model: nn.Module, adapters: Mapping[str, LoraAdapter]) -> dict[str, torch.Tensor]:
    """This rank's base tensors with ``scale * B @ A`` added to every adapted weight; adapter tensors left out."""
    state = {k: v for k, v in model.state_dict().items() if not k.endswith("_extra_state") and "_lora." not in k}
    for name, adapter in adapters.items():
        key = name[: -len("_lora")] + ".weight"
        state[key] = state[key] + adapter.delta_weight().to(state[key].dtype)
    return state


def adapter_local_state(adapters: Mapping[str, LoraAdapter]) -> dict[str, torch.Tensor]:
    """This rank's adapter shards under their megatron (stage-local) names."""
    return {f"{name}.{p}": t.detach() for name, adapter in adapters.items() for p, t in adapter.named_parameters()}


def lora_tp_merge(name: str, shards: list[torch.Tensor]) -> torch.Tensor:
    """The whole adapter tensor from the TP ranks' shards (B of column-, A of row-parallel linears are split)."""
    dim = _split_dim(name)
    return shards[0] if dim is None or len(shards) == 1 else torch.cat(shards, dim=dim)


def _split_dim(name: str) -> int | None:
    match = _ADAPTER_NAME.match(name)
    if match is None:
        raise KeyError(f"{name} is not a LoRA adapter tensor")
    kind = LORA_LINEARS[f"{match.group(2)}.{match.group(3)}"][0]
    if kind == "column":
        return 0 if match.group(4) == "B" else None
    return 1 if match.group(4) == "A" else None


def lora_merged_shape(name: str, shard_shape: tuple[int, ...], tp_size: int) -> tuple[int, ...]:
    dim = _split_dim(name)
    if dim is None:
        return tuple(shard_shape)
    return tuple(s * tp_size if i == dim else s for i, s in enumerate(shard_shape))


def megatron_to_peft_name(name: str) -> str:
    """``decoder.layers.3.self_attention.linear_qkv_lora.A_q`` (global index) -> peft's adapter key."""
    match = _ADAPTER_NAME.match(name)
    if match is None:
        raise KeyError(f"{name} is not a LoRA adapter tensor")
    layer, block, linear, ab, part = match.groups()
    hf = LORA_LINEARS[f"{block}.{linear}"][1][part]
    return f"{PEFT_PREFIX}{layer}.{hf}.lora_{ab}.weight"


@torch.no_grad()
def load_peft_adapters(adapters: Mapping[str, LoraAdapter], state: Mapping[str, torch.Tensor],
                       tp_rank: int, tp_size: int, layer_offset: int) -> None:
    """Copy whole peft-named adapter tensors (``.default`` allowed) into this rank's shards; every adapter must
    be given."""
    wanted = {}
    for name, adapter in adapters.items():
        local_layer = int(name.split(".")[2])
        global_name = name.replace(f"layers.{local_layer}.", f"layers.{local_layer + layer_offset}.", 1)
        for p, param in adapter.named_parameters():
            wanted[megatron_to_peft_name(f"{global_name}.{p}")] = (f"{global_name}.{p}", param)
    given = {re.sub(r"\.lora_([AB])\.default\.weight$", r".lora_\1.weight", k): v for k, v in state.items()}
    given = {k: v for k, v in given.items()
             if _PEFT_NAME.match(k) and int(_PEFT_NAME.match(k).group(1)) in _layers_of(wanted)}
    missing, extra = sorted(set(wanted) - set(given)), sorted(set(given) - set(wanted))
    if missing:
        raise KeyError(f"adapter tensors missing for {len(missing)} parameters, e.g. {missing[:3]}")
    if extra:
        raise KeyError(f"{len(extra)} adapter tensors are not targeted by this trainer's LoRA "
                       f"settings, e.g. {extra[:3]}")
    for key, (megatron_name, param) in wanted.items():
        tensor = given[key]
        dim = _split_dim(megatron_name)
        if dim is not None and tp_size > 1:
            tensor = tensor.chunk(tp_size, dim=dim)[tp_rank]
        if tuple(tensor.shape) != tuple(param.shape):
            raise ValueError(f"{key}: shape {tuple(tensor.shape)} does not fit this rank's {tuple(param.shape)}")
        param.copy_(tensor.to(param.dtype))


def _layers_of(wanted: Mapping[str, object]) -> set[int]:
    return {int(_PEFT_NAME.match(k).group(1)) for k in wanted}
