"""What the real OpenClaw client sends, and how to read it (see shared/reference/openclaw-client.md).

A contract like the messages it reads: the gateway (``serve``) and the personal learner (``personal``) both
read a conversation this way, so it sits below both.

- The last user message of every request is OpenClaw's internal-context block
  (``<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>``), not the person's text: it is never a next state (and the
  gateway has the model read it before the person's message: :func:`person_last`).
- The session id reaches us only in the body (``prompt_cache_key: "<sessionId>:0"``) and in a
  ``Runtime: … sessionId=…`` suffix of the session's first user message; no header is sent.
- Earlier turns are resent on the next request, with tool-call ids rewritten (``call_abc`` ->
  ``callabc``) and content ``None`` vs ``""`` varying, so history is compared on a normal form.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clawgym.core.messages import Message, text_of

INTERNAL_CONTEXT_MARKER = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
RUNTIME_SESSION = re.compile(r"\bsessionId=([^\s|]+)")
TIMESTAMP_PREFIX = re.compile(r"^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})? [A-Z]+\]\s*")
RUNTIME_SUFFIX = re.compile(r"\n+Runtime: .*\Z", re.DOTALL)


def is_internal_context(message: Message) -> bool:
    return message.get("role") == "user" and text_of(message).lstrip().startswith(INTERNAL_CONTEXT_MARKER)


def conversation(messages: list[Message]) -> list[Message]:
    """The messages of the conversation proper: OpenClaw's internal-context blocks removed."""
    return [m for m in messages if not is_internal_context(m)]


def person_last(messages: list[Message]) -> list[Message]:
    """``messages`` with a trailing internal-context block read before the person's message it follows.

    OpenClaw sends its runtime state ("Active exec sessions: none", ...) as a user message *after* the person's;
    a small model answers the last message it reads, so it answers the block (measured on the default model
    under OpenClaw's default profile: "### Active Subagents\nNone" to a question about a cactus). The same
    words in the other order leave the person's message last. Only a block that directly follows a user message
    moves (after a tool result it stays: the result must follow its call)."""
    if len(messages) >= 2 and is_internal_context(messages[-1]) and messages[-2].get("role") == "user" \
            and not is_internal_context(messages[-2]):
        return [*messages[:-2], messages[-1], messages[-2]]
    return messages


def runtime_session_id(messages: list[Message]) -> str | None:
    """The ``sessionId=`` of OpenClaw's Runtime suffix on a session's first user message, if any."""
    for message in messages:
        if message.get("role") == "user":
            match = RUNTIME_SESSION.search(text_of(message))
            if match:
                return match.group(1)
    return None


def user_text(message: Message) -> str:
    """The person's words: OpenClaw's timestamp prefix and Runtime suffix removed."""
    text = RUNTIME_SUFFIX.sub("", text_of(message))
    return TIMESTAMP_PREFIX.sub("", text).strip()


def _call_signature(call: dict[str, Any]) -> tuple[str, str]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    return str(function.get("name", "")), json.dumps(arguments, sort_keys=True)


def normal_form(message: Message) -> tuple:
    """A comparable form of a message that ignores what clients rewrite (ids, None vs "")."""
    role = message.get("role", "")
    calls = tuple(_call_signature(c) for c in message.get("tool_calls") or [])
    text = text_of(message).strip()
    if role == "user":
        text = user_text(message)
    return role, text, calls


def is_prefix(prefix: list[Message], messages: list[Message]) -> bool:
    """Whether ``messages`` continues ``prefix`` (system prompts excluded: clients re-render them)."""
    a = [normal_form(m) for m in prefix if m.get("role") != "system"]
    b = [normal_form(m) for m in messages if m.get("role") != "system"]
    return len(a) <= len(b) and b[: len(a)] == a
