"""What each person asked for, remembered across conversations: their wishes.

A wish is a short request in the person's own words ("address the student by name"), made from a
correction by :func:`clawgym.personal.wishes.wishes_from_correction` (a message that asks for several
things leaves one wish per thing). Two sources, nothing else:

- the person's next message, when the judge read it as a correction (a verdict below zero);
- an explicit correction sent with ``POST /v1/feedback``.

The rules, in one place:

- **per user**, in the order they were first asked; a person's wishes never score another's replies;
- **deduplicated**: a repeat or a rephrasing of a remembered wish updates it (the later wording,
  ``times`` + 1) and keeps its id;
- **the later wish wins**: a wish that contradicts a remembered one ("no lists" after "use bullet
  points") replaces it, and says which it replaced;
- **nothing from noise**: thanks, statements and long messages give no wish (the normaliser returns
  None), so a person who never corrects anything has no wishes, and nothing is scored against them;
- **durable**: every wish that was asked for is a ``wish`` event in the turn log, and a removal a
  ``wish_removed`` event; a restart replays them through the same rules;
- **visible and removable**: ``GET /v1/wishes`` and ``DELETE /v1/wishes/{id}`` (the person's own key),
  and the dashboard; **forget-me** (``DELETE /v1/users/{id}``) erases them with the rest;
- **a compiled check kept with its wish** (:mod:`clawgym.personal.wish_checks`, ``serve.wish_checks``): a
  ``wish_check`` event holds the code (or why none was kept) for the wish's wording at the time; a rephrasing
  drops it (the new words are compiled again), removing or forgetting the wish drops it, and the person can take
  the check alone back (``DELETE /v1/wishes/{id}/check``: a ``wish_check_removed`` event; the wish then stays
  with the model's question and is not compiled again).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, Literal, Protocol, TypedDict

from clawgym.core.chat_protocol import is_internal_context, user_text
from clawgym.core.messages import text_of
from clawgym.personal.wishes import relation, wishes_from_correction
from clawgym.rl.types import JSONObject, Turn, new_id

SOURCES = ("reply", "feedback")
MAX_SAID_CHARS = 500
MAX_REPLACED = 5


class WishEvent(TypedDict):
    """A ``wish`` event in the turn log: one wish taken from what the person ``said`` (a reply or feedback)."""

    event: Literal["wish"]
    id: str  # "wish:<turn id>:<source>[:<index>]"
    user: str
    turn_id: str
    source: str  # one of SOURCES
    said: str  # the person's words, at most MAX_SAID_CHARS
    wish: str
    at: float  # unix time


class WishRemovedEvent(TypedDict):
    """A ``wish_removed`` event in the turn log: the person took wish ``wish_id`` back."""

    event: Literal["wish_removed"]
    id: str  # "wish_removed:<wish id>"
    user: str
    wish_id: str
    at: float


class WishCheckEvent(TypedDict):
    """A ``wish_check`` event: wish ``wish_id``, worded ``wish``, was compiled into ``code`` ("": refused)."""

    event: Literal["wish_check"]
    id: str  # "wish_check:<wish id>:<a new id>"
    user: str
    wish_id: str
    wish: str  # the wording the code was written for
    code: str
    note: str  # what its test showed, or why no code was kept
    at: float


class WishCheckRemovedEvent(TypedDict):
    """A ``wish_check_removed`` event: the person took wish ``wish_id``'s compiled check back."""

    event: Literal["wish_check_removed"]
    id: str  # "wish_check_removed:<wish id>:<a new id>"
    user: str
    wish_id: str
    at: float


AnyWishEvent = WishEvent | WishRemovedEvent | WishCheckEvent | WishCheckRemovedEvent
CHECK_STATES = ("", "compiled", "refused", "removed")  # "": not compiled yet


class WishLog(Protocol):
    """Where wish events are kept (the gateway's :class:`~clawgym.serve.turn_log.TurnLog`): replayed at start,
    appended on every change, flushed before a removal is answered."""

    def events(self) -> Iterator[JSONObject]: ...

    def record_wish(self, event: AnyWishEvent) -> object: ...  # what it returns is not read

    def flush(self) -> None: ...


@dataclass
class Wish:
    id: str
    user: str
    text: str
    said: str  # the person's words it was made from (the latest, for an updated wish)
    source: str  # "reply" or "feedback"
    turn_id: str
    at: float
    times: int = 1  # how often the person asked for it
    replaced: list[str] = field(default_factory=list)  # wishes it contradicted and replaced (latest first)
    check: str = ""  # its compiled check's code (clawgym.personal.wish_checks), when check_state is "compiled"
    check_state: str = ""  # one of CHECK_STATES
    check_note: str = ""  # what the check's test showed, or why none was kept

    def to_json(self) -> JSONObject:
        return asdict(self)


def verdict_of(turn: Turn) -> float | None:
    """The turn's verdict: a verdict judge's score, else the hint judge's own vote; errors are no verdict."""
    results = [(name, r) for name, r in turn.judge.items() if getattr(r, "source", "") != "error"]
    for name, result in results:
        if name != "hint":
            return float(result.score)
    return next((float(r.score) for name, r in results if name == "hint"), None)


def next_words(turn: Turn) -> str:
    """The person's own next message (OpenClaw's internal-context block and timestamps removed)."""
    return "\n".join(user_text(m) for m in turn.next_state
                     if m.get("role") == "user" and not is_internal_context(m) and text_of(m).strip()).strip()


class WishMemory:
    """Per-user wishes, kept in the turn log; ``on_change(user, wishes)`` hears every change (the dashboard)."""

    def __init__(self, log: WishLog | None = None,
                 on_change: Callable[[str, list[Wish]], object] | None = None) -> None:
        self.log = log
        self.on_change = on_change
        self._users: dict[str, dict[str, Wish]] = {}
        self._applied: set[str] = set()  # event ids already applied (replays and repeats are no-ops)
        self._lock = threading.Lock()
        if log is not None:
            for event in log.events():
                if event["event"] == "wish":
                    self._apply(event)
                elif event["event"] == "wish_removed":
                    self._apply_removal(event)
                elif event["event"] in ("wish_check", "wish_check_removed"):
                    self._apply_check(event)
            for user in list(self._users):
                self._changed(user)

    # ------------------------------------------------------------------ readers
    def wishes(self, user: str) -> list[Wish]:
        with self._lock:
            return list(self._users.get(user, {}).values())

    def texts(self, user: str) -> list[str]:
        """The wish texts a rubric judge scores ``user``'s replies against."""
        return [w.text for w in self.wishes(user)]

    def checks(self, user: str) -> dict[str, str]:
        """``user``'s compiled checks by wish text (what the rubric judge runs before the cues)."""
        return {w.text: w.check for w in self.wishes(user) if w.check_state == "compiled" and w.check}

    def uncompiled(self) -> list[Wish]:
        """Every wish no compiler has looked at yet (after a restart: what is left to compile)."""
        with self._lock:
            return [w for wishes in self._users.values() for w in wishes.values() if not w.check_state]

    def users(self) -> list[str]:
        with self._lock:
            return sorted(u for u, wishes in self._users.items() if wishes)

    def owner(self, wish_id: str) -> str | None:
        with self._lock:
            return next((u for u, wishes in self._users.items() if wish_id in wishes), None)

    # ------------------------------------------------------------------ writers
    def observe_judged(self, turn: Turn) -> list[Wish]:
        """The wishes a judged turn carries: its explicit correction, and the next message if it was a correction."""
        user = str(turn.info.get("user") or "default")
        added = []
        correction = (turn.info.get("feedback") or {}).get("correction")
        if isinstance(correction, str) and correction.strip():
            added += self.add(user, correction, turn_id=turn.turn_id, source="feedback")
        verdict = verdict_of(turn)
        if verdict is not None and verdict < 0:
            said = next_words(turn)
            if said:
                added += self.add(user, said, turn_id=turn.turn_id, source="reply")
        return added

    def add(self, user: str, said: str, *, turn_id: str, source: str, at: float | None = None) -> list[Wish]:
        """Remember each thing ``said`` asks for (none when it asks for nothing); recorded in the log first."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        changed = []
        for index, text in enumerate(wishes_from_correction(said)):
            suffix = f":{index}" if index else ""  # the first keeps the id a one-wish message always had
            event: WishEvent = {"event": "wish", "id": f"wish:{turn_id}:{source}{suffix}", "user": user,
                                "turn_id": turn_id, "source": source, "said": said[:MAX_SAID_CHARS], "wish": text,
                                "at": time.time() if at is None else at}
            if self.log is not None:
                self.log.record_wish(event)
            wish = self._apply(event)
            if wish is not None:
                changed.append(wish)
        if changed:
            self._changed(user)
        return changed

    def remove(self, user: str, wish_id: str) -> Wish:
        """The person takes a wish back; KeyError if ``user`` has no such wish."""
        with self._lock:
            if wish_id not in self._users.get(user, {}):
                raise KeyError(wish_id)
        event: WishRemovedEvent = {"event": "wish_removed", "id": f"wish_removed:{wish_id}", "user": user,
                                   "wish_id": wish_id, "at": time.time()}
        if self.log is not None:
            self.log.record_wish(event)
        removed = self._apply_removal(event)
        assert removed is not None
        self._changed(user)
        return removed

    def set_check(self, user: str, wish_id: str, text: str, code: str | None, note: str = "") -> Wish | None:
        """Keep a compiled check (``code``; None: refused, with ``note`` saying why) for wish ``wish_id`` as worded
        ``text``; None (nothing kept) when the wish is gone, was reworded meanwhile or its check was taken back."""
        with self._lock:
            wish = self._users.get(user, {}).get(wish_id)
            if wish is None or wish.text != text or wish.check_state == "removed":
                return None
            event: WishCheckEvent = {"event": "wish_check", "id": f"wish_check:{wish_id}:{new_id()}",
                                     "user": user, "wish_id": wish_id, "wish": text, "code": code or "",
                                     "note": note, "at": time.time()}
        if self.log is not None:
            self.log.record_wish(event)
        kept = self._apply_check(event)
        if kept is not None:
            self._changed(user)
        return kept

    def remove_check(self, user: str, wish_id: str) -> Wish:
        """The person takes a wish's compiled check back (the wish stays); KeyError without one."""
        with self._lock:
            wish = self._users.get(user, {}).get(wish_id)
            if wish is None or wish.check_state != "compiled":
                raise KeyError(wish_id)
            event: WishCheckRemovedEvent = {"event": "wish_check_removed",
                                            "id": f"wish_check_removed:{wish_id}:{new_id()}",
                                            "user": user, "wish_id": wish_id, "at": time.time()}
        if self.log is not None:
            self.log.record_wish(event)
        removed = self._apply_check(event)
        assert removed is not None
        self._changed(user)
        return removed

    def forget(self, user: str) -> int:
        """Drop everything about ``user`` from memory (the log is rewritten by ``TurnLog.forget_user``)."""
        with self._lock:
            return len(self._users.pop(user, {}))

    # ------------------------------------------------------------------ the rules
    def _apply(self, event: WishEvent) -> Wish | None:
        """Apply one ``wish`` event by the module's rules; returns the wish it made or updated."""
        with self._lock:
            if event["id"] in self._applied:
                return None
            self._applied.add(event["id"])
            user, text = event["user"], event["wish"]
            wishes = self._users.setdefault(user, {})
            kept: Wish | None = None
            replaced: list[str] = []
            for old in list(wishes.values()):
                kind = relation(old.text, text)
                if kind == "same" and kept is None:
                    kept = old
                elif kind in ("same", "contradicts"):  # a second repeat merges; a contradiction is replaced
                    del wishes[old.id]
                    if kind == "contradicts":
                        replaced.append(old.text)
            if kept is not None:
                if kept.text != text and kept.check_state != "removed":  # new words: compiled again
                    kept.check, kept.check_state, kept.check_note = "", "", ""
                kept.text, kept.said, kept.source, kept.turn_id = text, event["said"], event["source"], event["turn_id"]
                kept.at, kept.times = event["at"], kept.times + 1
                kept.replaced = (replaced + kept.replaced)[:MAX_REPLACED]
                return kept
            wish = Wish(id=event["id"].removeprefix("wish:").replace(":", "-"), user=user, text=text,
                        said=event["said"], source=event["source"], turn_id=event["turn_id"], at=event["at"],
                        replaced=replaced[:MAX_REPLACED])
            wishes[wish.id] = wish
            return wish

    def _apply_removal(self, event: WishRemovedEvent) -> Wish | None:
        with self._lock:
            if event["id"] in self._applied:
                return None
            self._applied.add(event["id"])
            return self._users.get(event["user"], {}).pop(event["wish_id"], None)

    def _apply_check(self, event: WishCheckEvent | WishCheckRemovedEvent) -> Wish | None:
        with self._lock:
            if event["id"] in self._applied:
                return None
            self._applied.add(event["id"])
            wish = self._users.get(event["user"], {}).get(event["wish_id"])
            if wish is None:
                return None  # the wish went before its check came back
            if event["event"] == "wish_check_removed":
                wish.check, wish.check_state, wish.check_note = "", "removed", "you took this check back"
                return wish
            if event["wish"] != wish.text or wish.check_state == "removed":
                return None  # compiled for words the wish no longer has, or taken back meanwhile
            wish.check = event["code"]
            wish.check_state = "compiled" if event["code"] else "refused"
            wish.check_note = event["note"]
            return wish

    def _changed(self, user: str) -> None:
        if self.on_change is not None:
            self.on_change(user, self.wishes(user))
