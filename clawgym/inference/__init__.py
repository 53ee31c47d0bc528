"""Inference: serving a model behind one interface (:class:`~clawgym.core.policy.Policy`), used by
``rl`` (rollouts, judges, weight updates) and ``serve`` (the deployed product) alike. It imports only
``core`` and itself.

Policy backends:

- ``hf``: in-process transformers, continuous batching, exact token ids + logprobs (CPU default).
- ``openai``: any OpenAI-compatible server (clawgym's own server returns token ids too).
- ``sglang``: an SGLang server through its native ``/generate`` and weight-update endpoints (GPU).

:func:`make_policy` builds one from a spec string; backends import lazily (no torch for ``openai``).

Around them: the engine's parts (``kv_buffer``, ``prefix_cache``, ``attention``, ``multi_lora`` and
``multi_adapter``, ``int8``, ``scoring``, ``chat_template``, ``streaming``), the model catalog and
loading (``catalog``, ``models``, ``packaged``), test policies (``scripted``, ``testing``) and
``server``: the OpenAI-compatible server over any policy (``clawgym serve-policy``).
"""

from __future__ import annotations

from typing import Any

from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.inference.streaming import TextDelta, stream_or_generate

__all__ = ["Generation", "Policy", "SamplingParams", "TextDelta", "make_policy", "stream_or_generate"]


def make_policy(backend: str, model: str, **kwargs: Any) -> Policy:
    """``make_policy("hf", "tiny-random")``, ``make_policy("openai", "gpt-x", base_url=...)``,
    ``make_policy("sglang", "path/or/name", base_url=...)``."""
    if backend == "hf":
        from clawgym.inference.hf import HFPolicy

        return HFPolicy.from_pretrained(model, **kwargs)
    if backend == "openai":
        from clawgym.inference.openai import OpenAIPolicy

        return OpenAIPolicy(model=model, **kwargs)
    if backend == "sglang":
        from clawgym.inference.sglang import SGLangPolicy

        return SGLangPolicy(model=model, **kwargs)
    raise ValueError(f"unknown policy backend {backend!r}: use 'hf', 'openai' or 'sglang'")
