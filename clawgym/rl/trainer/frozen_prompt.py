"""A long prompt's keys and values, computed once per set of weights and without gradients.

An OpenClaw turn on its default profile is a ~12.5k-token prompt (its system prompt and tools, the same in
every turn of a day) and a reply of a few hundred tokens. Trained on whole, every sample runs a forward and
a backward pass over all of it (with activation checkpointing two forwards): tens of minutes a step on 2
CPU cores. With ``trainer.frozen_prompt_above: N``, a micro-batch's beginning of at least N tokens that all
its rows share (a hindsight group's prompt; for one row, its own prompt) runs without gradients, and its keys
and values serve every micro-batch of the optimiser step that begins the same way: the longest beginning
already run that it shares is extended, so a second turn pays only for its tokens after OpenClaw's system prompt.

What this changes: the loss, the ratio and the teacher's and reference's log-probs are exactly those of the
whole sequence; the gradient leaves out the path through the prompt's keys and values (every adapter still
trains through the reply's own positions). The cache of the trained weights is cleared after each optimiser
step; that of frozen weights (the initial weights of the OPD teacher and the KL reference) lives on.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from transformers import DynamicCache

KeysValues = list[tuple[torch.Tensor, torch.Tensor]]


class PromptKV:
    """Keys and values of the prompt beginnings a set of weights has run, newest last (at most ``max_entries``)."""

    def __init__(self, min_tokens: int, max_entries: int = 4) -> None:
        if min_tokens < 1:
            raise ValueError(f"min_tokens must be at least 1, got {min_tokens}")
        self.min_tokens = min_tokens
        self.max_entries = max_entries
        self.entries: OrderedDict[tuple[int, ...], KeysValues] = OrderedDict()
        self.run_tokens = 0  # prompt tokens run to fill the cache
        self.reused_tokens = 0  # prompt tokens served from it

    def clear(self) -> None:
        """Forget every entry: the weights changed."""
        self.entries.clear()

    def keys_values(self, decoder: nn.Module, ids: torch.Tensor) -> KeysValues:
        """Per layer ``(keys, values)`` ``[1, kv_heads, len(ids), head_dim]`` of the 1-d token ids ``ids``."""
        key = tuple(int(t) for t in ids.tolist())
        if key in self.entries:
            self.entries.move_to_end(key)
            self.reused_tokens += len(key)
            return self.entries[key]
        start, source = max(((common_length(k, key), k) for k in self.entries), default=(0, ()))
        cache = as_cache([(k[:, :, :start], v[:, :, :start]) for k, v in self.entries[source]], 1) if start \
            else DynamicCache()
        positions = torch.arange(start, len(key), device=ids.device)[None]
        from clawgym.inference.kv_buffer import CACHE_KWARG

        with torch.no_grad():  # the caller runs it with checkpointing off (checkpointed layers drop the cache)
            out = decoder(input_ids=ids[None, start:], position_ids=positions, use_cache=True,
                          **{CACHE_KWARG: cache})
        layers = [(layer.keys, layer.values) for layer in getattr(out, CACHE_KWARG).layers]
        self.run_tokens += len(key) - start
        self.reused_tokens += start
        self.entries[key] = layers
        while len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)
        return layers


def common_length(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many leading tokens ``a`` and ``b`` share, short of all of ``b`` (its last one is always run)."""
    limit = min(len(a), len(b) - 1)
    if limit <= 0:
        return 0
    differs = (torch.tensor(a[:limit]) != torch.tensor(b[:limit])).nonzero()
    return int(differs[0]) if len(differs) else limit


def token_counts(*caches: PromptKV | None) -> tuple[int, int]:
    """(tokens run, tokens reused) over the given caches (None: a cache that is off)."""
    present = [kv for kv in caches if kv is not None]
    return sum(kv.run_tokens for kv in present), sum(kv.reused_tokens for kv in present)


def as_cache(keys_values: KeysValues, rows: int) -> DynamicCache:
    """A fresh cache holding ``keys_values`` for ``rows`` rows (the forward pass appends to its own copy)."""
    cache = DynamicCache()
    for index, (keys, values) in enumerate(keys_values):
        cache.update(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1), index)
    return cache
