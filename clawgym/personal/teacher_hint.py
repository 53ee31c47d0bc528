"""What the OPD teacher of a chat turn reads besides the context: its hint and where it goes.

Shared by the personal trainer (a judged turn's sample) and hindsight groups (every member of a
hybrid group), so both build the teacher's prompt the same way.
"""

from __future__ import annotations

from typing import TypedDict

from clawgym.core.chat_protocol import is_internal_context
from clawgym.rl.types import JSONObject, Turn


def hint_with_wishes(hint: str | None, wishes: list[str]) -> str:
    """The teacher's hint: every remembered wish (oldest first, a contradicted one already replaced by the
    memory), then this turn's own hint unless a wish already says it."""
    said = [w.strip().rstrip(".") for w in wishes if w.strip()]
    parts = [f"{w[:1].upper()}{w[1:]}." for w in said]
    if hint and hint.strip() and not any(hint.strip().rstrip(".").lower() == w.lower() for w in said):
        parts.append(hint.strip())
    return " ".join(parts)


class TeacherContext(TypedDict, total=False):
    """What :func:`teacher_context` adds to a sample's metadata; a key is present only when known."""

    tools: list[JSONObject]  # the tool schemas the student read
    hint_at: int  # the index of the context message that holds the person's last words


def teacher_context(turn: Turn) -> TeacherContext:
    """What the OPD teacher needs besides the context: the tool schemas the student read (turns logged
    with tool names only have none) and which message holds the person's last words (OpenClaw sends
    its internal-context block as a user message after them; the hint goes next to the person's words)."""
    tools = [t for t in turn.info.get("tools") or [] if isinstance(t, dict)]
    people = [i for i, m in enumerate(turn.context) if m.get("role") == "user" and not is_internal_context(m)]
    return {**({"tools": tools} if tools else {}), **({"hint_at": people[-1]} if people else {})}
