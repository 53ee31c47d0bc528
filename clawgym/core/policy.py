"""The one interface every policy backend implements: ``await policy.generate(messages, tools, sampling)``.

A :class:`Generation` carries, beside the text and parsed tool calls, the exact prompt and response
token ids and the sampled tokens' logprobs, plus the policy version that produced them (token in,
token out). Backends that cannot return tokens (a remote OpenAI-compatible server without logprobs)
leave those lists empty; the trainer refuses such turns rather than re-tokenising them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from clawgym.core.messages import Message, ToolCall


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    # the reply may not open with a tool call or a JSON value: until its first visible character, tokens that
    # would begin one (a tag such as ``<tool_call>``, ``{``, ``[``, a code fence) are masked (backends with
    # ``supports_prose_only``; the serve gateway's call guard asks for it, clawgym/serve/call_guard.py)
    prose_only: bool = False


@dataclass
class Generation:
    text: str
    message: Message  # the assistant message (content + structured tool_calls) to send to env.step
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    response_logprobs: list[float] = field(default_factory=list)
    policy_version: int = 0
    finish_reason: str = "stop"  # "stop" | "length" | "tool_calls"
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Who answers. ``version`` increases every time new weights are loaded."""

    name: str

    @property
    def version(self) -> int: ...

    async def generate(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        sampling: SamplingParams | None = None,
    ) -> Generation: ...

    async def close(self) -> None: ...


class VersionedPolicy:
    """What every backend shares: ``version`` counts the weight updates it has served (set ``_version``)."""

    _version: int = 0

    @property
    def version(self) -> int:
        return self._version
