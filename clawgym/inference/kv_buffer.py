"""The running batch's keys and values, preallocated so that a decoding step writes in place.

transformers' ``DynamicCache`` grows by ``torch.cat`` at every step, and building one from existing
tensors copies them once more: two copies of the whole cache per generated token. At an OpenClaw
prompt of 4k tokens that copying, not the model, was most of a decoding step on a CPU (measured in
``benchmarks/decode_speed.py``). :class:`KVBuffer` keeps each layer's keys and values in a buffer with
spare columns; :meth:`KVBuffer.cache` hands the model a cache whose layers write the new column into
that spare room and return views of the filled part, so a step copies only the new token's keys and
values. Rows are merged (new requests joining) and selected (finished requests leaving) by copying
into fresh buffers, which happens only when the batch changes.

Layout: every row is left-padded to the common ``width``; ``mask`` ([rows, width], 1 = real token)
hides the padding, exactly as before.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.modeling_outputs import CausalLMOutputWithPast

# The model's keyword (and output field) for its KV cache: ``cache`` in newer transformers, where the old
# ``past_key_values`` still works but warns and is to be removed; decided once from the library itself.
CACHE_KWARG = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"

SPARE_COLUMNS = 256  # room for this many decoding steps before a buffer is reallocated


class KVBuffer:
    """Per-layer key/value buffers ``[rows, heads, capacity, head_dim]`` of which ``width`` columns are filled."""

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], mask: torch.Tensor) -> None:
        width = mask.shape[1]
        self.width = width
        self.mask = mask
        self._keys = [_with_room(k, width, width + SPARE_COLUMNS) for k in keys]
        self._values = [_with_room(v, width, width + SPARE_COLUMNS) for v in values]

    @property
    def rows(self) -> int:
        return self.mask.shape[0]

    def keys(self, layer: int) -> torch.Tensor:
        return self._keys[layer][:, :, : self.width]

    def values(self, layer: int) -> torch.Tensor:
        return self._values[layer][:, :, : self.width]

    def cache(self, new_tokens: int = 1) -> DynamicCache:
        """A cache for one forward pass of ``new_tokens`` per row; call :meth:`advance` after it."""
        if self.width + new_tokens > self._keys[0].shape[2]:
            capacity = self.width + new_tokens + SPARE_COLUMNS
            self._keys = [_with_room(k, self.width, capacity) for k in self._keys]
            self._values = [_with_room(v, self.width, capacity) for v in self._values]
        cache = DynamicCache()
        cache.layers = [_BufferLayer(self, index) for index in range(len(self._keys))]
        return cache

    def advance(self, new_tokens: int, new_mask: torch.Tensor) -> None:
        """Count the columns the last forward pass wrote; ``new_mask`` covers them."""
        self.width += new_tokens
        self.mask = new_mask

    def merge(self, keys: list[torch.Tensor], values: list[torch.Tensor], mask: torch.Tensor) -> "KVBuffer":
        """This batch followed by new rows (their own ``[rows, heads, T, dim]`` caches), left-padded to one width."""
        width = max(self.width, mask.shape[1])
        merged_mask = torch.cat([_pad_left_2d(self.mask, width), _pad_left_2d(mask, width)])
        return KVBuffer._assembled(width, merged_mask, [
            [self.keys(i), k] for i, k in enumerate(keys)], [[self.values(i), v] for i, v in enumerate(values)])

    def select(self, rows: torch.Tensor) -> "KVBuffer":
        """Only ``rows``, without the leading columns that are padding for all of them."""
        mask = self.mask.index_select(0, rows)
        first = int(mask.any(dim=0).nonzero()[0])
        return KVBuffer._assembled(self.width - first, mask[:, first:],
                                   [[self.keys(i)[:, :, first:].index_select(0, rows)] for i in range(len(self._keys))],
                                   [[self.values(i)[:, :, first:].index_select(0, rows)]
                                    for i in range(len(self._values))])

    @classmethod
    def _assembled(cls, width: int, mask: torch.Tensor, keys: list[list[torch.Tensor]],
                   values: list[list[torch.Tensor]]) -> "KVBuffer":
        """A buffer whose rows are the given parts stacked, each right-aligned at ``width``: one copy."""
        buffer = cls.__new__(cls)
        buffer.width, buffer.mask = width, mask
        buffer._keys = [_stacked(parts, width, width + SPARE_COLUMNS) for parts in keys]
        buffer._values = [_stacked(parts, width, width + SPARE_COLUMNS) for parts in values]
        return buffer


class _BufferLayer(DynamicLayer):
    """One layer of :meth:`KVBuffer.cache`: ``update`` writes into the buffer's spare columns."""

    def __init__(self, buffer: KVBuffer, index: int) -> None:
        super().__init__()
        self.buffer, self.index = buffer, index
        self.is_initialized = True
        self.dtype, self.device = buffer._keys[index].dtype, buffer._keys[index].device
        self.keys, self.values = buffer.keys(index), buffer.values(index)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        start, end = self.buffer.width, self.buffer.width + key_states.shape[2]
        self.buffer._keys[self.index][:, :, start:end].copy_(key_states)
        self.buffer._values[self.index][:, :, start:end].copy_(value_states)
        self.keys = self.buffer._keys[self.index][:, :, :end]
        self.values = self.buffer._values[self.index][:, :, :end]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.buffer.width


def _with_room(tensor: torch.Tensor, filled: int, capacity: int) -> torch.Tensor:
    """A ``[B, H, capacity, D]`` buffer whose first ``filled`` columns are ``tensor``'s."""
    batch, heads, _, dim = tensor.shape
    buffer = tensor.new_empty(batch, heads, capacity, dim)
    buffer[:, :, :filled].copy_(tensor[:, :, :filled])
    return buffer


def _stacked(parts: list[torch.Tensor], width: int, capacity: int) -> torch.Tensor:
    """``[sum rows, H, capacity, D]``: the parts' rows one after another, right-aligned at ``width``, zeros before."""
    rows = sum(part.shape[0] for part in parts)
    _, heads, _, dim = parts[0].shape
    buffer = parts[0].new_empty(rows, heads, capacity, dim)
    start = 0
    for part in parts:
        end, filled = start + part.shape[0], part.shape[2]
        buffer[start:end, :, : width - filled].zero_()  # left padding, hidden by the mask
        buffer[start:end, :, width - filled : width].copy_(part)
        start = end
    return buffer


def _pad_left_2d(mask: torch.Tensor, width: int) -> torch.Tensor:
    missing = width - mask.shape[1]
    if missing == 0:
        return mask
    return torch.cat([mask.new_zeros(mask.shape[0], missing), mask], dim=1)
