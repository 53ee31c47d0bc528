"""Durable, append-only record of every main-line turn, independent of training.

OpenClaw-RL truncates its logs at every training step and silently stops scoring when recording is
off. Here recording is its own concern: one JSONL event log, each line flushed and fsynced before
the gateway moves on, never rewritten. Events:

- ``turn``: a main-line turn once its answer was fully delivered (context, action, tokens, logprobs);
- ``next_state``: the messages that followed a turn (the person's reply, tool results);
- ``judge``: a judge result for a turn;
- ``feedback``: the person's explicit thumb and/or correction on a turn (once per turn);
- ``session_closed``: a session ended (client said so, or it went idle);
- ``wish`` / ``wish_removed``: a person's wish remembered or taken back (:mod:`clawgym.personal.wish_memory`);
- ``wish_check`` / ``wish_check_removed``: a wish's compiled check kept (or refused) or taken back (same module);
- ``hindsight_group``: a turn's group as the rubric scored it, each member's reply, wishes met, reward and
  advantage (:mod:`clawgym.personal.hindsight`), so what the trainer was pushed toward can be read back.

Each event carries an id, and a repeated id is ignored, so replays and restarts never duplicate.
Writes never block the caller: a writer thread appends whatever is queued and fsyncs once per batch
(group commit), and each ``record_*`` returns a future that resolves once its line is on disk, so
the gateway can await durability without stalling every other stream on the same event loop.
``turns()`` folds the log into :class:`clawgym.rl.types.Turn` records; a gateway restarted on the
same file rebuilds its sessions from it.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

from clawgym.core.messages import Message
from clawgym.rl.types import JSONObject, JudgeResult, Turn

if TYPE_CHECKING:
    from clawgym.personal.wish_memory import AnyWishEvent


WISH_EVENTS = ("wish", "wish_removed", "wish_check", "wish_check_removed")


class TurnLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        for event in self.events():
            self._seen.add(event["id"])
        self._handle = self.path.open("a", encoding="utf-8")
        if self.path.stat().st_size and not self._ends_with_newline():
            self._handle.write("\n")  # seal a torn last line so the next event starts on its own line
            self._handle.flush()
        self._pending: queue.Queue[tuple[str, Future] | None] = queue.Queue()
        self._writer = threading.Thread(target=self._write_loop, name="clawgym-turnlog", daemon=True)
        self._writer.start()

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def events(self) -> Iterator[JSONObject]:
        """Every complete event in the log; a torn last line (a crash mid-write) is skipped."""
        if not self.path.exists():
            return
        with self.path.open("r", encoding="utf-8") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    break
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(event, dict) and "id" in event and "event" in event:
                    yield event

    def _append(self, event: Mapping[str, object]) -> Future:
        """Queue an event; the future says True once it is on disk, False if its id was seen before."""
        done: Future = Future()
        done.set_running_or_notify_cancel()  # a waiter that gives up must not cancel the write itself
        with self._lock:
            if event["id"] in self._seen:
                done.set_result(False)
                return done
            self._seen.add(event["id"])
            self._pending.put((json.dumps(event, ensure_ascii=False) + "\n", done))
        return done

    def _write_loop(self) -> None:
        while True:
            batch = [self._pending.get()]
            while True:
                try:
                    batch.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            items = [item for item in batch if item is not None]
            if items:
                try:
                    self._handle.write("".join(line for line, _ in items))
                    self._handle.flush()
                    os.fsync(self._handle.fileno())
                    for _, done in items:
                        done.set_result(True)
                except Exception as exc:  # a full disk: every waiter learns it, nothing is silently lost
                    for _, done in items:
                        done.set_exception(exc)
            if len(items) != len(batch):
                return

    # ------------------------------------------------------------------ writers
    def record_turn(self, turn: Turn) -> Future:
        return self._append({"event": "turn", "id": f"turn:{turn.turn_id}", "turn": turn.to_dict()})

    def record_next_state(self, turn_id: str, messages: list[Message]) -> Future:
        return self._append({"event": "next_state", "id": f"next:{turn_id}", "turn_id": turn_id, "messages": messages})

    def record_judge(self, turn_id: str, name: str, result: JudgeResult) -> Future:
        return self._append({"event": "judge", "id": f"judge:{turn_id}:{name}", "turn_id": turn_id,
                             "name": name, "result": result.__dict__})

    def record_feedback(self, turn_id: str, feedback: dict[str, str]) -> Future:
        return self._append({"event": "feedback", "id": f"feedback:{turn_id}",
                             "turn_id": turn_id, "feedback": feedback})

    def record_session_closed(self, session_id: str, reason: str) -> Future:
        return self._append({"event": "session_closed", "id": f"closed:{session_id}",
                             "session_id": session_id, "reason": reason})

    def record_wish(self, event: AnyWishEvent) -> Future:
        """A wish event (``wish``, ``wish_removed``, ``wish_check``, ``wish_check_removed``), as
        :class:`~clawgym.personal.wish_memory.WishMemory` builds it."""
        if event.get("event") not in WISH_EVENTS or not event.get("user"):
            raise ValueError(f"a wish event is one of {', '.join(WISH_EVENTS)} with a user")
        return self._append(event)

    def record_group(self, event: Mapping[str, object]) -> Future:
        """A ``hindsight_group`` event, as :func:`clawgym.personal.hindsight.group_event` builds it."""
        if event.get("event") != "hindsight_group" or not event.get("turn_id") or not event.get("user"):
            raise ValueError("a group event is a 'hindsight_group' event with a turn_id and a user")
        return self._append(event)

    def has(self, event_id: str) -> bool:
        return event_id in self._seen

    # ------------------------------------------------------------------ readers
    def turns(self) -> list[Turn]:
        """The recorded turns in order, with their next states and judge results folded in."""
        turns: dict[str, Turn] = {}
        for event in self.events():
            kind = event["event"]
            if kind == "turn":
                turn = Turn.from_dict(event["turn"])
                turns[turn.turn_id] = turn
            elif kind == "next_state" and event["turn_id"] in turns:
                turns[event["turn_id"]].next_state = event["messages"]
            elif kind == "judge" and event["turn_id"] in turns:
                turns[event["turn_id"]].judge[event["name"]] = JudgeResult(**event["result"])
            elif kind == "feedback" and event["turn_id"] in turns:
                turns[event["turn_id"]].info["feedback"] = event["feedback"]
        return list(turns.values())

    def closed_sessions(self) -> set[str]:
        return {e["session_id"] for e in self.events() if e["event"] == "session_closed"}

    def forget_user(self, user: str) -> int:
        """Rewrite the log without ``user``'s turns and everything attached to them; returns events dropped.

        The one exception to "never rewritten": a person asked to be forgotten. The new file is written
        beside the old one, fsynced and renamed over it (then the directory is fsynced), so a crash
        leaves either the old log or the new one, never a mix, and a restart cannot bring the turns back.
        """
        with self._lock:  # no new event can be queued meanwhile ...
            self.flush()  # ... and everything queued before is on disk: the writer is idle
            events = list(self.events())
            turns = {e["turn"]["turn_id"] for e in events
                     if e["event"] == "turn" and e["turn"].get("info", {}).get("user") == user}
            sessions = {e["turn"]["session_id"] for e in events
                        if e["event"] == "turn" and e["turn"]["turn_id"] in turns}
            keep = [e for e in events if not (
                (e["event"] == "turn" and e["turn"]["turn_id"] in turns)
                or e.get("turn_id") in turns
                or e.get("user") == user  # wish events
                or (e["event"] == "session_closed" and e["session_id"] in sessions))]
            tmp = self.path.with_suffix(self.path.suffix + ".rewrite")
            with tmp.open("w", encoding="utf-8") as handle:
                handle.write("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in keep))
                handle.flush()
                os.fsync(handle.fileno())
            self._handle.close()
            os.replace(tmp, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
            self._handle = self.path.open("a", encoding="utf-8")
            self._seen = {e["id"] for e in keep}
        return len(events) - len(keep)

    def flush(self) -> None:
        """Wait until everything queued so far is on disk; returns at once on a closed log (close wrote it all).

        Lock-free on purpose: ``forget_user`` calls it holding the lock. A marker queued behind close's
        stop sentinel is never written, so the wait ends when the writer thread does.
        """
        marker: Future = Future()
        marker.set_running_or_notify_cancel()
        self._pending.put(("", marker))
        while not marker.done() and self._writer.is_alive():
            try:
                marker.result(timeout=0.1)
            except TimeoutError:
                continue
        if marker.done():
            marker.result()  # a write error reaches the caller

    def close(self) -> None:
        """Write what is queued, then stop the writer. Safe to call twice."""
        with self._lock:
            if self._handle.closed:
                return
            self._pending.put(None)
        self._writer.join()
        with self._lock:
            self._handle.close()
