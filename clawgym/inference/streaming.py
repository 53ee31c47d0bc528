"""Token streaming as a policy capability: backends that can stream expose ``stream()``; others don't.

``stream(messages, tools, sampling)`` yields :class:`TextDelta` items while tokens are generated and
then exactly one :class:`~clawgym.core.policy.Generation` (the same one ``generate`` would have
returned). :func:`stream_or_generate` gives every backend that shape, falling back to one delta with
the whole text for backends without a streaming path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from clawgym.core.messages import Message
from clawgym.core.policy import Generation, Policy, SamplingParams


@dataclass
class TextDelta:
    """New response text since the previous delta, with the tokens that produced it."""

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


StreamItem = TextDelta | Generation


async def stream_or_generate(
    policy: Policy,
    messages: list[Message],
    tools: list[dict[str, Any]] | None = None,
    sampling: SamplingParams | None = None,
) -> AsyncIterator[StreamItem]:
    """Stream from ``policy`` if it can, else yield its whole answer as one delta, then the Generation."""
    stream = getattr(policy, "stream", None)
    if stream is not None:
        async for item in stream(messages, tools, sampling):
            yield item
        return
    generation = await policy.generate(messages, tools, sampling)
    yield TextDelta(generation.text, list(generation.response_ids), list(generation.response_logprobs))
    yield generation


def streamable_prefix(text: str, stops: list[str]) -> str:
    """The prefix of ``text`` safe to stream: no half-decoded character, no possible stop-string start."""
    end = len(text)
    while end > 0 and text[end - 1] == "\ufffd":
        end -= 1
    text = text[:end]
    hold = 0
    for stop in stops:
        for size in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:size]):
                hold = max(hold, size)
                break
    return text[: len(text) - hold]
