"""A reply that calls a tool the request does not offer is answered again, in words.

A small model under a long agent prompt (OpenClaw's default profile: ~12.5k tokens, 12 tools) often answers
a plain question with a tool call to a tool that does not exist (``{"name": "water_cactus", ...}`` for "how
often should I water a cactus?"), written as JSON. No client can run it, so the person gets JSON instead of
an answer. OpenAI's API never returns a call to an undeclared function; this guard keeps the same promise
for the models served here: when a reply is a call (tagged, bare or fenced JSON as
:func:`clawgym.core.messages.parse_action` reads it, or JSON call objects inside one tag such as ``<json>``)
naming a tool outside the request's ``tools``, or a call that cannot be read, and none of it has reached the
client yet, the same request is answered once more with ``SamplingParams.prose_only`` (tokens that would open
a tag, a JSON value or a code fence are masked until the first visible character). A call to an offered tool,
and any reply that begins in prose, pass untouched.

While a reply could still become a call (it begins with an opening, or nothing visible yet) its deltas are
held back, as the HTTP layer holds a JSON call back from streaming clients anyway; then they are released
or, on a retry, dropped. The answer sent is the one recorded and trained on (its own tokens and logprobs,
of the distribution it was drawn from); the rejected draft is named in ``Generation.metadata["call_guard"]``
and in the turn's ``info``. Backends without ``supports_prose_only`` (SGLang, a remote server) are not
guarded. ``serve.call_guard`` (on in every launcher) turns it off.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, AsyncIterator, Callable

from clawgym.core.messages import CALL_OPENINGS, offered_tool_names, parse_action, wrapped_json_calls
from clawgym.core.policy import Generation, SamplingParams
from clawgym.inference.streaming import StreamItem, TextDelta

logger = logging.getLogger(__name__)

Answer = Callable[[SamplingParams], AsyncIterator[StreamItem]]  # one attempt at the request, with these params


def unoffered_call(text: str, offered: set[str]) -> str | None:
    """Why ``text`` is a call no client can run (a tool outside ``offered``, or unreadable), else None."""
    _, calls = parse_action(text, lenient=True)
    for call in calls or wrapped_json_calls(text):
        if call.error is not None:
            return f"a tool call that cannot be read ({call.error[:120]})"
        if call.name not in offered:
            return f"a call to {call.name!r}, which the request does not offer"
    return None


def could_open_a_call(text: str) -> bool:
    """Whether a reply that begins with ``text`` may still turn out to be a call."""
    head = text.lstrip()
    return not head or head.startswith(CALL_OPENINGS) or any(opening.startswith(head) for opening in CALL_OPENINGS)


async def guarded(answer: Answer, tools: list[dict[str, Any]] | None, sampling: SamplingParams,
                  enabled: bool = True) -> AsyncIterator[StreamItem]:
    """The items of ``answer(sampling)``, or of one retry in words when the first reply is an unoffered call."""
    offered = offered_tool_names(tools)
    if not enabled or not offered or sampling.prose_only:
        async for item in answer(sampling):
            yield item
        return
    held: list[StreamItem] = []
    text, released = "", False
    async for item in answer(sampling):
        if isinstance(item, Generation):
            reason = None if released else unoffered_call(item.text, offered)
            if reason is None:
                for early in held:
                    yield early
                yield item
                return
            logger.info("the reply was %s: answering again in words", reason)
            async for retry in answer(dataclasses.replace(sampling, prose_only=True)):
                if isinstance(retry, Generation):
                    retry.metadata["call_guard"] = {"reason": reason, "rejected": item.text[:500]}
                yield retry
            return
        if released:
            yield item
            continue
        held.append(item)
        if isinstance(item, TextDelta):
            text += item.text
            if not could_open_a_call(text):
                released = True
                for early in held:
                    yield early
                held = []
