"""Fitting a client's request into the model's window, by a fixed and documented policy.

A client may send more than the served model can read: OpenClaw's default request is ~13.3k
SmolLM2 tokens against a native window of 8,192 (extend it with ``policy.context_window``, see
docs/serving.md). When the rendered prompt plus a reply reserve does not fit, these steps run in order, each
only if still needed, and each one logged as a warning with what it removed:

1. drop OpenClaw's internal-context blocks (``<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>``: runtime state
   such as active exec sessions, not the person's words);
2. drop the descriptions of tools and of their parameters (names and schemas stay, so the model can
   still call every tool);
3. drop the oldest conversation turns, whole: an assistant message with its tool results goes
   together, and the latest user message and the latest tool result are never dropped;
4. cut the middle of the system prompt (its head and tail stay, with a marker saying how much
   was left out).

Never dropped: the person's latest words and the latest tool result. If the request still does not
fit, it is refused with HTTP 400 saying by how much (nothing is cut silently). The turn is recorded with
the prompt the model actually read (token in, token out), so training sees what was sampled.
"""

from __future__ import annotations

import copy
import logging
import re
from dataclasses import dataclass, field
from typing import Callable

from clawgym.core.chat_protocol import is_internal_context
from clawgym.core.messages import Message, text_of
from clawgym.rl.types import JSONObject

logger = logging.getLogger(__name__)

Tools = list[JSONObject] | None  # a request's tool schemas (OpenAI function objects), if any
MIN_REPLY_TOKENS = 256  # the reply room a fitted prompt always leaves (or the request's max_tokens if smaller)


@dataclass
class FitReport:
    original_tokens: int
    tokens: int
    steps: list[str] = field(default_factory=list)

    @property
    def fitted(self) -> bool:
        return bool(self.steps)


class ContextTooLong(ValueError):
    """Even after every allowed cut, the request does not fit the window."""


class ContextFitter:
    def __init__(self, count: Callable[[list[Message], Tools], int], window: int) -> None:
        self.count = count  # prompt tokens of (messages, tools) as the model will read them
        self.window = window

    def fit(self, messages: list[Message], tools: Tools, max_tokens: int) -> tuple[list[Message], Tools, FitReport]:
        budget = self.window - min(max_tokens, MIN_REPLY_TOKENS)
        tokens = self.count(messages, tools)
        report = FitReport(tokens, tokens)
        if tokens <= budget:
            return messages, tools, report
        messages, tools = copy.deepcopy(messages), copy.deepcopy(tools)
        for name, step in (("internal context", _drop_internal_context), ("tool descriptions", _drop_tool_descriptions),
                           ("oldest turns", _drop_oldest_turns), ("system prompt middle", _cut_system_middle)):
            while tokens > budget:
                changed = step(messages, tools, tokens - budget)
                if not changed:
                    break
                messages, tools, what = changed
                before, tokens = tokens, self.count(messages, tools)
                report.steps.append(f"{name}: {what} (-{before - tokens} tokens)")
                if tokens >= before:  # this step can take nothing more
                    break
        report.tokens = tokens
        if report.steps:
            logger.warning("request of %d tokens cut to %d to fit the %d-token window: %s",
                           report.original_tokens, tokens, self.window, "; ".join(report.steps))
        if tokens > budget:
            raise ContextTooLong(f"the prompt has {report.original_tokens} tokens; "
                                 "even after dropping what may be dropped "
                                 f"({'; '.join(report.steps) or 'nothing droppable'}) it has {tokens}, over the "
                                 f"{budget} that fit the model's {self.window}-token window with room for a reply")
        return messages, tools, report


def _drop_internal_context(messages: list[Message], tools: Tools, excess: int):
    kept = [m for m in messages if not is_internal_context(m)]
    if len(kept) == len(messages):
        return None
    return kept, tools, f"{len(messages) - len(kept)} block(s)"


def _drop_tool_descriptions(messages: list[Message], tools: Tools, excess: int):
    if not tools:
        return None
    removed = 0
    for tool in tools:
        function = tool.get("function", {})
        removed += len(function.pop("description", "") or "")
        for prop in (function.get("parameters", {}).get("properties") or {}).values():
            if isinstance(prop, dict):
                removed += len(prop.pop("description", "") or "")
    return (messages, tools, f"{removed} characters from {len(tools)} tools") if removed else None


def _protected(messages: list[Message]) -> set[int]:
    """Indexes never dropped: system prompts, the latest user message, the latest tool result and the
    assistant message that called it."""
    keep = {i for i, m in enumerate(messages) if m.get("role") == "system"}
    users = [i for i, m in enumerate(messages) if m.get("role") == "user" and not is_internal_context(m)]
    tools = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if users:
        keep.add(users[-1])
    if tools:
        keep.add(tools[-1])
        callers = [i for i in range(tools[-1])
                   if messages[i].get("role") == "assistant" and messages[i].get("tool_calls")]
        if callers:
            keep.add(callers[-1])
    return keep


def _drop_oldest_turns(messages: list[Message], tools: Tools, excess: int):
    protected = _protected(messages)
    for i, message in enumerate(messages):
        if i in protected or message.get("role") == "system":
            continue
        end = i + 1  # an assistant message takes its tool results with it
        if message.get("role") == "assistant":
            while end < len(messages) and messages[end].get("role") == "tool":
                end += 1
        if any(j in protected for j in range(i, end)):
            continue
        return messages[:i] + messages[end:], tools, f"{end - i} message(s) from position {i}"
    return None


_OMITTED = re.compile(r"\n\[\.\.\. (\d+) characters of the system prompt omitted to fit the model's context \.\.\.\]\n")


def _cut_system_middle(messages: list[Message], tools: Tools, excess: int):
    index = next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)
    if index is None:
        return None
    text = text_of(messages[index])
    found = _OMITTED.search(text)  # cut before: widen the same gap
    head, tail = ((text[:found.start()], text[found.end():])
                  if found else (text[: len(text) // 2], text[len(text) // 2:]))
    omitted = int(found.group(1)) if found else 0
    cut = min(max(0, len(head) - 1000) + max(0, len(tail) - 1000), max(excess * 5, 200))  # ~4 characters a token
    if cut <= 0:
        return None  # 1000 characters at each end always stay
    from_head = min(cut // 2 + max(0, cut // 2 - max(0, len(tail) - 1000)), max(0, len(head) - 1000))
    from_tail = cut - from_head
    marker = f"\n[... {omitted + cut} characters of the system prompt omitted to fit the model's context ...]\n"
    messages = list(messages)
    messages[index] = {**messages[index], "content": head[: len(head) - from_head] + marker + tail[from_tail:]}
    return messages, tools, f"{cut} characters"
