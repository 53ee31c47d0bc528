"""Policy backends behind one interface (:class:`~clawgym.core.policy.Policy`).

- ``hf``: in-process transformers, continuous batching, exact token ids + logprobs (CPU default).
- ``openai``: any OpenAI-compatible server (clawgym's own server returns token ids too).
- ``sglang``: an SGLang server through its native ``/generate`` and weight-update endpoints (GPU).

:func:`make_policy` builds one from a spec string; backends import lazily (no torch for ``openai``).
"""

from __future__ import annotations

from typing import Any

from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.rl.policy.streaming import TextDelta, stream_or_generate

__all__ = ["Generation", "Policy", "SamplingParams", "TextDelta", "make_policy", "stream_or_generate"]


def make_policy(backend: str, model: str, **kwargs: Any) -> Policy:
    """``make_policy("hf", "tiny-random")``, ``make_policy("openai", "gpt-x", base_url=...)``,
    ``make_policy("sglang", "path/or/name", base_url=...)``."""
    if backend == "hf":
        from clawgym.rl.policy.hf import HFPolicy

        return HFPolicy.from_pretrained(model, **kwargs)
    if backend == "openai":
        from clawgym.rl.policy.openai import OpenAIPolicy

        return OpenAIPolicy(model=model, **kwargs)
    if backend == "sglang":
        from clawgym.rl.policy.sglang import SGLangPolicy

        return SGLangPolicy(model=model, **kwargs)
    raise ValueError(f"unknown policy backend {backend!r}: use 'hf', 'openai' or 'sglang'")
