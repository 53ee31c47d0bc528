"""A scripted policy: a plain function answers, optionally after a fixed delay.

It implements the :class:`~clawgym.core.policy.Policy` protocol so that rollouts, judges, tests and
benchmarks can run without a model: ``ScriptedPolicy(lambda messages: "...", latency_s=0.01)``.
The function may be sync or async and returns raw assistant text (``<tool_call>`` blocks allowed) or
an OpenAI assistant dict. It must be deterministic in the messages for reproducible rollouts.

A scripted policy has no tokenizer, so by default its generations carry no token ids and the trainer
will refuse them. ``byte_tokens=True`` fills in UTF-8 bytes as ids with logprob 0.0 — a stand-in
for plumbing tests, never for learning.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Sequence

from clawgym.core.messages import Message, parse_action, text_of
from clawgym.core.policy import Generation, SamplingParams, VersionedPolicy

Responder = Callable[[list[Message]], Any]

DEFAULT_REPLY = "I have finished the task."


def replay(replies: Sequence[str | Message]) -> Responder:
    """A responder that gives the n-th reply at the episode's n-th assistant turn (the last one after)."""
    if not replies:
        raise ValueError("replay() needs at least one reply")
    replies = list(replies)

    def respond(messages: list[Message]) -> str | Message:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        return replies[min(turn, len(replies) - 1)]

    return respond


class ScriptedPolicy(VersionedPolicy):
    """Answers with ``respond(messages)``; ``latency_s`` simulates model time without using a CPU."""

    def __init__(
        self,
        respond: Responder | Sequence[str] | None = None,
        *,
        latency_s: float = 0.0,
        name: str = "scripted",
        byte_tokens: bool = False,
    ) -> None:
        if respond is None:
            respond = replay([DEFAULT_REPLY])
        elif not callable(respond):
            respond = replay(list(respond))
        if latency_s < 0:
            raise ValueError("latency_s must be >= 0")
        self.respond = respond
        self.latency_s = float(latency_s)
        self.name = name
        self.byte_tokens = byte_tokens
        self.calls = 0
        self._version = 0


    def set_version(self, version: int) -> None:
        """Stands in for a weight update, so version plumbing can be tested."""
        self._version = int(version)

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                       sampling: SamplingParams | None = None) -> Generation:
        self.calls += 1
        version = self._version
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        reply = self.respond(messages)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, (str, dict)):
            raise TypeError(f"a scripted responder must return str or an assistant dict, got {type(reply).__name__}")
        message, calls = parse_action(reply)
        text = reply if isinstance(reply, str) else text_of(reply)
        generation = Generation(
            text=text,
            message=message,
            tool_calls=calls,
            policy_version=version,
            finish_reason="tool_calls" if calls else "stop",
        )
        if self.byte_tokens:
            prompt = "".join(text_of(m) for m in messages)
            generation.prompt_ids = list(prompt.encode("utf-8"))
            generation.response_ids = list(text.encode("utf-8"))
            generation.response_logprobs = [0.0] * len(generation.response_ids)
        return generation

    async def close(self) -> None:
        return None
