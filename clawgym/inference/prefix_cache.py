"""Reuse of prompt KV caches across requests: only the tokens after the longest shared prefix are prefilled.

A chat client resends the whole conversation every turn, and OpenClaw's ~8-13k-token system prompt is
the same for every request of a session and across sessions. Prefilling that again each turn costs
tens of seconds on a CPU; with a cached prefix, a later turn only runs the new tokens.

Entries are prompts the engine prefilled (their token ids and per-layer keys/values). A lookup returns
the entry sharing the longest common token prefix with the new prompt — not only exact prefixes: turn
2's prompt diverges from turn 1's where the assistant's reply replaced OpenClaw's trailing
internal-context block, and everything before that point is reused. Keys and values depend on the
weights, so every entry is tagged with the weights that built it (the policy version, and the adapter
slot when adapters are served) and only matching entries are used; the policy discards the entries of
weights it replaces. The store is bounded by a token budget and evicts the least recently used entry
first. It is thread-safe (the decoding thread uses it, weight updates come from others).
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from typing import Callable, Hashable

import torch


@dataclass
class CachedPrefix:
    ids: list[int]
    keys: list[torch.Tensor]  # per layer, [1, kv_heads, len(ids), head_dim]
    values: list[torch.Tensor]
    weights: Hashable  # the weights that computed these keys/values


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    ta, tb = torch.tensor(a[:n]), torch.tensor(b[:n])
    diff = (ta != tb).nonzero()
    return int(diff[0]) if len(diff) else n


class PrefixCache:
    """An LRU store of prefilled prompts; see the module docstring."""

    def __init__(self, max_tokens: int = 32_768, min_prefix: int = 256) -> None:
        self.max_tokens = max_tokens
        self.min_prefix = min_prefix  # shorter prompts are cheap to prefill: not worth the memory
        self._entries: collections.OrderedDict[int, CachedPrefix] = collections.OrderedDict()
        self._next = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.reused_tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def tokens(self) -> int:
        return sum(len(e.ids) for e in self._entries.values())

    def lookup(self, ids: list[int], weights: Hashable) -> tuple[CachedPrefix | None, int]:
        """The entry with the longest shared prefix (at least ``min_prefix`` tokens) and its length.

        At most ``len(ids) - 1`` tokens are reused, so the last prompt token is always run (its logits
        choose the first answer token).
        """
        with self._lock:
            best, best_len, best_key = None, 0, None
            for key, entry in self._entries.items():
                if entry.weights != weights:
                    continue
                shared = min(common_prefix(entry.ids, ids), len(ids) - 1)
                if shared > best_len:
                    best, best_len, best_key = entry, shared, key
            if best is None or best_len < self.min_prefix:
                self.misses += 1
                return None, 0
            self._entries.move_to_end(best_key)
            self.hits += 1
            self.reused_tokens += best_len
            return best, best_len

    def store(self, ids: list[int], keys: list[torch.Tensor], values: list[torch.Tensor], weights: Hashable) -> None:
        """Keep a prefilled prompt (its tensors are copied); drops what it supersedes and the oldest over budget."""
        if len(ids) < self.min_prefix or len(ids) > self.max_tokens:
            return
        entry = CachedPrefix(list(ids), [k.clone() for k in keys], [v.clone() for v in values], weights)
        with self._lock:
            for key in [k for k, e in self._entries.items()
                        if e.weights == weights and len(e.ids) <= len(ids) and e.ids == ids[: len(e.ids)]]:
                del self._entries[key]  # a prefix of the new entry: the new one serves both
            self._entries[self._next] = entry
            self._next += 1
            while sum(len(e.ids) for e in self._entries.values()) > self.max_tokens:
                self._entries.popitem(last=False)

    def discard(self, stale: Callable[[Hashable], bool] = lambda weights: True) -> None:
        """Drop the entries whose weights tag is ``stale`` (all of them by default)."""
        with self._lock:
            for key in [k for k, e in self._entries.items() if stale(e.weights)]:
                del self._entries[key]
