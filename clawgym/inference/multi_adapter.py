"""An HF policy that serves one LoRA adapter per user from one base model, in shared batches.

``policy.adapter(slot)`` is an ordinary :class:`~clawgym.core.policy.Policy` whose requests decode with
adapter ``slot`` (0 is the base model). Requests of different adapters join the same continuous batch:
before each forward pass the engine tells the :class:`~clawgym.inference.multi_lora.AdapterBank` which
slot every row uses. Publishing a user's newly trained adapter (:meth:`MultiAdapterHFPolicy.load_adapter`)
copies it into its slot between two decoding steps and bumps that adapter's version only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterable, Mapping

import torch

from clawgym.core.messages import Message
from clawgym.core.policy import Generation, SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.inference.multi_lora import AdapterBank
from clawgym.inference.streaming import StreamItem

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class AdapterSampling(SamplingParams):
    """Sampling settings that also name the adapter slot a request decodes with."""

    adapter_slot: int = 0


def _slot(request: Any) -> int:
    return getattr(request.sampling, "adapter_slot", 0)


class MultiAdapterHFPolicy(HFPolicy):
    """:class:`HFPolicy` with an adapter bank; see the module docstring."""

    def __init__(self, model: Any, tokenizer: Any, *, slots: int = 16, r: int = 16, alpha: float = 32,
                 target_modules: Iterable[str] = DEFAULT_TARGETS, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        self.bank = AdapterBank(self.model, slots=slots, r=r, alpha=alpha, target_modules=target_modules,
                                lock=self._weights_lock)
        self.adapter_versions = [0] * slots

    def adapter(self, slot: int) -> "AdapterPolicy":
        if not 0 <= slot < self.bank.slots:
            raise ValueError(f"adapter slot must be in 0..{self.bank.slots - 1}, got {slot}")
        return AdapterPolicy(self, slot)

    def load_adapter(self, slot: int, state: Mapping[str, torch.Tensor]) -> int:
        """Publish a trained adapter into ``slot`` between two decoding steps; returns its new version."""
        self.bank.load(slot, state)
        self.adapter_versions[slot] += 1
        self.prefix_cache.discard(lambda weights: weights[1] == slot)  # that adapter's old keys and values
        return self.adapter_versions[slot]

    def clear_adapter(self, slot: int) -> None:
        """Return ``slot`` to the base model (a forgotten user, or a slot being reused)."""
        self.bank.clear(slot)
        self.adapter_versions[slot] = 0
        self.prefix_cache.discard(lambda weights: weights[1] == slot)

    # the engine's two forward passes, routed per row
    def _admit(self, requests: list[Any]) -> None:
        self.bank.route([_slot(r) for r in requests])
        super()._admit(requests)

    def _admit_cached(self, request: Any, entry: Any, shared: int) -> None:
        self.bank.route([_slot(request)])
        super()._admit_cached(request, entry, shared)

    def _weights_tag(self, request: Any, version: int | None = None) -> Any:
        """A prompt's keys and values depend on the base weights and on the request's adapter."""
        slot = _slot(request)
        return (super()._weights_tag(request, version), slot, self.adapter_versions[slot])

    def _decode_step(self) -> None:
        self.bank.route([_slot(r) for r in self._rows])
        super()._decode_step()


class AdapterPolicy:
    """One adapter of a :class:`MultiAdapterHFPolicy`, as a Policy of its own."""

    def __init__(self, owner: MultiAdapterHFPolicy, slot: int) -> None:
        self.owner, self.slot = owner, slot
        self.name = f"{owner.name}#{slot}"
        self.tokenizer = owner.tokenizer

    @property
    def version(self) -> int:
        return self.owner.adapter_versions[self.slot]

    def _sampling(self, sampling: SamplingParams | None) -> AdapterSampling:
        base = sampling or SamplingParams()
        return AdapterSampling(**dataclasses.asdict(base) | {"adapter_slot": self.slot})

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                       sampling: SamplingParams | None = None) -> Generation:
        version = self.version
        return self._stamp(await self.owner.generate(messages, tools, self._sampling(sampling)), version)

    async def generate_ids(self, prompt_ids: list[int], sampling: SamplingParams | None = None) -> Generation:
        version = self.version
        return self._stamp(await self.owner.generate_ids(prompt_ids, self._sampling(sampling)), version)

    async def stream(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                     sampling: SamplingParams | None = None) -> AsyncIterator[StreamItem]:
        version = self.version
        async for item in self.owner.stream(messages, tools, self._sampling(sampling)):
            yield self._stamp(item, version) if isinstance(item, Generation) else item

    def _stamp(self, generation: Generation, version: int) -> Generation:
        """The adapter's version when the request started (conservative for staleness, like HFPolicy)."""
        generation.policy_version = version
        generation.metadata["adapter_slot"] = self.slot
        return generation

    async def close(self) -> None:  # the owner is shared; closing one user's view closes nothing
        return None
