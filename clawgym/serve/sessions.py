"""Recognise sessions and main-line turns without any help from the client.

OpenClaw-RL trusts an ``X-Session-Id`` header that the real client never sends, so every turn became
"side" and nothing trained (its issues #31, #36). Here a request's session is, in order:

1. the ``X-Session-Id`` header (OpenClaw-RL's plugin) or a ``session_id`` body field;
2. the body's ``prompt_cache_key`` (OpenClaw sends ``"<sessionId>:0"`` when the provider allows it);
3. the body's ``user`` field (the OpenAI convention);
4. the ``sessionId=`` in OpenClaw's Runtime suffix of the first user message;
5. the open session whose recorded history the request's messages continue (longest match);
6. otherwise a new session.

Main vs side: ``X-Turn-Type`` / ``turn_type`` when present; otherwise a request is *side* when its
last real user message or its system prompt matches a side pattern (heartbeats, memory flushes,
cron runs, title generation). Side turns are answered but never recorded and never change a
session's history. The next request of a session carries the next state of its previous turn: the
messages after that turn's action (tool results, the person's reply), never the internal-context
block.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from clawgym.core.chat_protocol import conversation, is_prefix, runtime_session_id
from clawgym.core.messages import Message, text_of

if TYPE_CHECKING:
    from clawgym.rl.types import JSONObject

DEFAULT_SIDE_PATTERNS = (
    # heartbeat runs: OpenClaw's default heartbeat prompt, and the legacy HEARTBEAT.md / HEARTBEAT_OK ones
    r"Follow the heartbeat monitor scratch context|HEARTBEAT",
    # memory flush before compaction (memory-core's DEFAULT_MEMORY_FLUSH_PROMPT / system prompt)
    r"(?i)pre-compaction memory flush",
    # cron / automation runs are prefixed "[cron:<job id>]"
    r"\[cron:[^\]]+\]",
    # title generation for a conversation
    r"(?i)\b(generate|write|create|suggest) (a |an )?(short |concise |brief )?(title|name) for (this|the) "
    r"(conversation|chat|session)",
)


@dataclass
class Session:
    id: str
    source: str  # how it was recognised: header, prompt_cache_key, user, runtime, history, new
    history: list[Message] = field(default_factory=list)  # conversation up to and including the last action
    last_turn_id: str | None = None
    turns: int = 0
    last_seen: float = 0.0


@dataclass
class RequestView:
    """What the gateway needs to know about one incoming request."""

    session_id: str
    source: str
    main: bool
    done: bool
    conversation: list[Message]  # the request's messages without OpenClaw's internal-context blocks
    previous_turn_id: str | None = None  # the turn whose next state this request carries
    next_state: list[Message] = field(default_factory=list)
    user: str = "default"  # who is asking (clawgym.serve.users); picks the adapter in per-user mode


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    value = lowered.get(name.lower())
    return value.strip() if isinstance(value, str) and value.strip() else None


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "done")


class SessionTracker:
    def __init__(
        self,
        idle_timeout_s: float = 1800.0,
        side_patterns: tuple[str, ...] = DEFAULT_SIDE_PATTERNS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.side_patterns = [re.compile(p, re.MULTILINE) for p in side_patterns]
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ classification
    def is_side(self, headers: Mapping[str, str], body: JSONObject, messages: list[Message]) -> bool:
        declared = _header(headers, "X-Turn-Type") or body.get("turn_type")
        if declared:
            return str(declared).strip().lower() != "main"
        users = [m for m in messages if m.get("role") == "user"]
        if not users:
            return True  # no person spoke: a background run
        probes = [text_of(users[-1])] + [text_of(m) for m in messages if m.get("role") == "system"][:1]
        last_user = probes[0]
        if any(p.search(last_user) for p in self.side_patterns):
            return True
        system_text = probes[1] if len(probes) > 1 else ""
        return bool(system_text) and len(system_text) < 2000 and any(p.search(system_text) for p in self.side_patterns)

    def _explicit_id(self, headers: Mapping[str, str], body: JSONObject,
                     messages: list[Message]) -> tuple[str | None, str]:
        value = _header(headers, "X-Session-Id") or body.get("session_id")
        if value:
            return str(value), "header"
        key = body.get("prompt_cache_key")
        if isinstance(key, str) and key.strip():
            return key.strip(), "prompt_cache_key"
        if isinstance(body.get("user"), str) and body["user"].strip():
            return body["user"].strip(), "user"
        runtime = runtime_session_id(messages)
        if runtime:
            return runtime, "runtime"
        return None, ""

    # ------------------------------------------------------------------ requests
    def identify(self, headers: Mapping[str, str], body: JSONObject) -> RequestView:
        """Find (or open) the session of a request and the next state it carries."""
        messages = conversation(list(body.get("messages") or []))
        main = not self.is_side(headers, body, messages)
        done = _truthy(_header(headers, "X-Session-Done") or body.get("session_done") or "")
        with self._lock:
            session_id, source = self._explicit_id(headers, body, messages)
            if session_id is None and main:
                match = self._match_history(messages)
                if match is not None:
                    session_id, source = match.id, "history"
            if session_id is None:
                session_id, source = uuid.uuid4().hex[:16], "new"
            view = RequestView(session_id=session_id, source=source, main=main, done=done, conversation=messages)
            if not main:
                return view
            session = self.sessions.get(session_id)
            if session is None:
                session = self.sessions[session_id] = Session(id=session_id, source=source)
            session.last_seen = self.clock()
            if session.last_turn_id and is_prefix(session.history, messages):
                known = len([m for m in session.history if m.get("role") != "system"])
                rest = [m for m in messages if m.get("role") != "system"][known:]
                view.previous_turn_id = session.last_turn_id
                view.next_state = rest
            elif session.last_turn_id:
                view.previous_turn_id = session.last_turn_id  # history diverged: no next state known
            return view

    def _match_history(self, messages: list[Message]) -> Session | None:
        candidates = [s for s in self.sessions.values() if s.history and is_prefix(s.history, messages)]
        return max(candidates, key=lambda s: len(s.history), default=None)

    def record_action(self, session_id: str, context: list[Message], action: Message, turn_id: str) -> None:
        """A main-line turn was answered: its session's history now ends with that action."""
        with self._lock:
            session = self.sessions.setdefault(session_id, Session(id=session_id, source="restored"))
            session.history = conversation(context) + [action]
            session.last_turn_id = turn_id
            session.turns += 1
            session.last_seen = self.clock()

    def close(self, session_id: str) -> Session | None:
        with self._lock:
            return self.sessions.pop(session_id, None)

    def idle_sessions(self) -> list[Session]:
        """Remove and return the sessions nobody has spoken in for ``idle_timeout_s``."""
        now = self.clock()
        with self._lock:
            idle = [s for s in self.sessions.values() if now - s.last_seen >= self.idle_timeout_s]
            for session in idle:
                del self.sessions[session.id]
        return idle
