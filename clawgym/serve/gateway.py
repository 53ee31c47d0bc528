"""The chat gateway's core: one request in, a stream out, every main-line turn recorded once.

Independent of HTTP (``app.py`` puts it behind FastAPI). For each request the gateway

1. finds the session and whether the turn is main-line (:mod:`.sessions`);
2. records the next state of the session's previous turn, and hands that turn to the judge;
3. streams the answer from a :class:`Responder` — the served policy (deployed mode) or an
   ``OpenClawChat-v0`` env whose ``step(action)`` answers (research mode, :mod:`.live`); with ``call_guard``
   a reply that calls a tool the request does not offer is answered again in words (:mod:`.call_guard`);
4. only once the whole answer was delivered, records the turn (tokens, logprobs, policy version).

A client that disconnects mid-stream leaves nothing half-recorded. Training is never in the path:
judged turns leave through ``on_judged`` (a sample buffer's put), which must not block, so a weight
update can never make a user wait or see an error. Idle sessions close, and their last turn is judged
with the next state it has (none). Restarted on the same log, the gateway rebuilds its sessions and
re-judges what was not judged yet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Mapping, Protocol

from clawgym.core.chat_protocol import conversation, person_last
from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.inference.streaming import StreamItem, TextDelta, stream_or_generate
from clawgym.rl.types import Turn
from clawgym.serve.call_guard import guarded
from clawgym.serve.feedback import Feedback, FeedbackError, apply_feedback, feedback_only
from clawgym.serve.sessions import RequestView, SessionTracker
from clawgym.serve.turn_log import TurnLog

if TYPE_CHECKING:
    from clawgym.personal.user_adapters import UserAdapters
    from clawgym.rl.judge import JudgeStage
    from clawgym.serve.fitting import ContextFitter

logger = logging.getLogger(__name__)


class Responder(Protocol):
    """Who answers a request: yields text deltas, then exactly one Generation."""

    def respond(self, view: RequestView, body: dict[str, Any],
                sampling: SamplingParams) -> AsyncIterator[StreamItem]: ...


class PolicyResponder:
    """Deployed mode: the served policy answers (streaming real tokens where the backend can)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    async def respond(self, view: RequestView, body: dict[str, Any],
                      sampling: SamplingParams) -> AsyncIterator[StreamItem]:
        async for item in stream_or_generate(self.policy, list(body["messages"]), body.get("tools"), sampling):
            yield item


class UserResponder:
    """Per-user mode: each user's own adapter answers (one base model, one batch for everyone)."""

    def __init__(self, adapters: UserAdapters) -> None:
        self.adapters = adapters
        self.policy = adapters.policy  # for the HTTP layer's token rendering

    async def respond(self, view: RequestView, body: dict[str, Any],
                      sampling: SamplingParams) -> AsyncIterator[StreamItem]:
        async for item in stream_or_generate(self.adapters.view(view.user), list(body["messages"]),
                                             body.get("tools"), sampling):
            yield item


@dataclass
class GatewayStats:
    requests: int = 0
    main_turns: int = 0
    side_turns: int = 0
    aborted: int = 0
    sessions_closed: int = 0
    judged: int = 0
    started_at: float = field(default_factory=time.time)


class ChatGateway:
    def __init__(
        self,
        responder: Responder,
        log: TurnLog,
        *,
        tracker: SessionTracker | None = None,
        judge_stage: JudgeStage | None = None,  # started by the gateway
        on_judged: Callable[[Turn], Any] | None = None,
        on_recorded: Callable[[Turn], Any] | None = None,
        model_name: str = "clawgym-policy",
        fitter: ContextFitter | None = None,  # requests longer than the window
        call_guard: bool = False,  # an unoffered tool call is answered again in words (the policy must support it)
        person_last: bool = False,  # OpenClaw's trailing internal-context block is read before the person's words
    ) -> None:
        self.responder = responder
        self.log = log
        self.tracker = tracker or SessionTracker()
        self.judge_stage = judge_stage
        self.on_judged = on_judged
        self.on_recorded = on_recorded
        self.model_name = model_name
        self.fitter = fitter
        self.call_guard = call_guard
        self.person_last = person_last
        self.model_info: dict[str, int] = {}  # context_window, max_output_tokens: what /v1/models reports
        self.stats = GatewayStats()
        self._turns: dict[str, Turn] = {}  # recorded turns still waiting for a next state or a judge
        self._reaper: asyncio.Task | None = None
        self._submitted: set[str] = set()  # turn ids handed to the judge (never twice)
        self._session_users: dict[str, str] = {}
        self._turn_users: dict[str, str] = {}  # every recorded turn's user (feedback checks ownership)
        self._background: set[asyncio.Task] = set()
        if judge_stage is not None:
            judge_stage.on_judged = self._judged
        self._restore()

    # ------------------------------------------------------------------ lifecycle
    def _restore(self) -> None:
        """Rebuild open sessions and the turns still waiting for a judge from the log (after a restart)."""
        self._closed_at_start = self.log.closed_sessions()
        for turn in self.log.turns():
            self._session_users[turn.session_id] = str(turn.info.get("user") or "default")
            self._turn_users[turn.turn_id] = self._session_users[turn.session_id]
            if turn.session_id not in self._closed_at_start:
                self.tracker.record_action(turn.session_id, turn.context, turn.action, turn.turn_id)
            if not turn.judge:
                self._turns[turn.turn_id] = turn

    def _waiting_for_next_state(self, turn: Turn) -> bool:
        session = self.tracker.sessions.get(turn.session_id)
        return not turn.next_state and session is not None and session.last_turn_id == turn.turn_id

    async def start(self, reap_every_s: float = 5.0) -> "ChatGateway":
        if self.judge_stage is not None:
            await self.judge_stage.start()
            for turn in list(self._turns.values()):
                if not self._waiting_for_next_state(turn):
                    self._submit(turn)
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(reap_every_s))
        return self

    async def close(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None
        if self.judge_stage is not None:
            await self.judge_stage.close()
        self.log.close()

    async def _reap_forever(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            self.close_idle_sessions()

    def spawn(self, coroutine: Any) -> asyncio.Task:
        """Run bookkeeping in its own task, out of reach of a request's cancellation."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def close_idle_sessions(self) -> list[str]:
        closed = []
        for session in self.tracker.idle_sessions():
            self._close_session(session.id, session.last_turn_id, "idle")
            closed.append(session.id)
        return closed

    def _close_session(self, session_id: str, last_turn_id: str | None, reason: str) -> None:
        self.log.record_session_closed(session_id, reason)
        self.stats.sessions_closed += 1
        turn = self._turns.get(last_turn_id or "")
        if turn is not None and not turn.judge:
            self._submit(turn)  # judged from what is known: no next state arrived

    # ------------------------------------------------------------------ judging
    def _submit(self, turn: Turn) -> None:
        if turn.turn_id in self._submitted:
            return
        self._submitted.add(turn.turn_id)
        if self.judge_stage is not None:
            self.judge_stage.submit(turn)
        else:
            self._judged(turn)

    def _judged(self, turn: Turn) -> None:
        for name, result in turn.judge.items():
            self.log.record_judge(turn.turn_id, name, result)  # the judge's own verdicts, as judged
        apply_feedback(turn)  # the person's explicit word, if any, beats the judge's (clawgym.serve.feedback)
        self._turns.pop(turn.turn_id, None)
        self._submitted.discard(turn.turn_id)
        self.stats.judged += 1
        if self.on_judged is not None:
            try:
                self.on_judged(turn)  # must not block: a buffer's put_nowait / a queue
            except Exception:
                logger.exception("on_judged failed for turn %s (the turn stays recorded)", turn.turn_id)

    # ------------------------------------------------------------------ requests
    async def complete(self, headers: Mapping[str, str], body: dict[str, Any], sampling: SamplingParams,
                       user: str = "default", turn_id: str | None = None) -> AsyncIterator[StreamItem]:
        """Answer one chat request; yields deltas then the Generation. Records once fully delivered."""
        self.stats.requests += 1
        view = self.tracker.identify(headers, body)
        view.user = user
        if view.main and view.previous_turn_id:
            await self._attach_next_state(view)
        sent = list(body["messages"])
        read = person_last(sent) if self.person_last else sent
        if read is not sent:
            body = {**body, "messages": read}
        if self.fitter is not None:  # raises ContextTooLong (a ValueError: HTTP 400) when nothing can make it fit
            messages, tools, report = self.fitter.fit(list(body["messages"]), body.get("tools"), sampling.max_tokens)
            if report.fitted:
                body = {**body, "messages": messages, "tools": tools, "clawgym_fit": report.steps}
        generation: Generation | None = None
        answer = lambda params: self.responder.respond(view, body, params)  # noqa: E731
        async for item in guarded(answer, body.get("tools"), sampling, enabled=self.call_guard):
            if isinstance(item, Generation):
                generation = item
            yield item
        # reached only when the consumer took every item: the answer was delivered
        if generation is None:
            raise RuntimeError("the responder ended without a Generation")
        if not view.main:
            self.stats.side_turns += 1
            return
        # durable before we finish
        await asyncio.wrap_future(self._record(view, body, generation, sent, turn_id, sampling))

    def abort(self) -> None:
        """The client went away mid-answer: nothing was recorded (called by the HTTP layer)."""
        self.stats.aborted += 1

    async def _attach_next_state(self, view: RequestView) -> None:
        turn_id = view.previous_turn_id
        assert turn_id is not None
        turn = self._turns.get(turn_id)
        if turn is None or turn.next_state or self.log.has(f"next:{turn_id}") or turn_id in self._submitted:
            return  # already known (a client retry), or judged and gone
        if view.next_state:
            turn.next_state = view.next_state
            await asyncio.wrap_future(self.log.record_next_state(turn_id, view.next_state))
        self._submit(turn)  # with its next state, or (history diverged) from what is known

    def _record(self, view: RequestView, body: dict[str, Any], generation: Generation, sent: list[dict[str, Any]],
                turn_id: str | None, sampling: SamplingParams) -> Future:
        """Record a delivered main-line turn: its context is what the model read (``body``, fitted to
        the window if it had to be); the session continues from what the client sent (``sent``)."""
        turn = Turn(
            episode_id=view.session_id,
            turn_index=self.tracker.sessions[view.session_id].turns if view.session_id in self.tracker.sessions else 0,
            context=list(body["messages"]),
            action=generation.message,
            prompt_ids=list(generation.prompt_ids),
            response_ids=list(generation.response_ids),
            response_logprobs=list(generation.response_logprobs),
            policy_version=generation.policy_version,
            env_id="clawgym/OpenClawChat-v0",
            session_id=view.session_id,
            info={"session_source": view.source, "user": view.user,
                  # the schemas the model read: the OPD teacher's prompt renders them like the student's
                  "tools": list(body.get("tools") or []),
                  **({"fitted": body["clawgym_fit"]} if "clawgym_fit" in body else {}),
                  # the first reply called a tool the request does not offer: this one was asked for in words
                  **({"call_guard": generation.metadata["call_guard"]} if "call_guard" in generation.metadata else {}),
                  "reused_prefix_tokens": generation.metadata.get("reused_prefix_tokens", 0),
                  # what the logprobs are of: the trainer takes only turns sampled as it trains
                  "sampling": {"temperature": sampling.temperature, "top_p": sampling.top_p,
                               "max_tokens": sampling.max_tokens}},
            **({"turn_id": turn_id} if turn_id else {}),
        )
        written = self.log.record_turn(turn)
        self.tracker.record_action(view.session_id, conversation(sent), turn.action, turn.turn_id)
        self._turns[turn.turn_id] = turn
        self._session_users[view.session_id] = view.user
        self._turn_users[turn.turn_id] = view.user
        self.stats.main_turns += 1
        if self.on_recorded is not None:
            self.on_recorded(turn)
        if view.done:
            self.tracker.close(view.session_id)
            self._close_session(view.session_id, turn.turn_id, "client")
        return written


    async def add_feedback(self, feedback: Feedback, user: str) -> dict[str, Any]:
        """Record explicit feedback and route it to training; see :mod:`clawgym.serve.feedback`."""
        turn_id = feedback.response_id
        if turn_id is None:
            session = self.tracker.sessions.get(feedback.session_id or "")
            if session is None or not session.last_turn_id:
                raise FeedbackError(404, f"no open session {feedback.session_id!r} with a recorded turn", "session_id")
            turn_id = session.last_turn_id
        if turn_id not in self._turn_users:
            raise FeedbackError(404, f"no recorded response with id {feedback.response_id!r}", "response_id")
        if self._turn_users[turn_id] != user:
            raise FeedbackError(403, "that response belongs to another user")
        if self.log.has(f"feedback:{turn_id}"):
            raise FeedbackError(409, "this response already has feedback (one per response)")
        await asyncio.wrap_future(self.log.record_feedback(turn_id, feedback.to_dict()))
        pending = self._turns.get(turn_id)
        if pending is not None and not pending.judge:
            pending.info["feedback"] = feedback.to_dict()  # applied when the judge is done with it
            route = "replaces the judge's verdict"
        else:
            turn = next((t for t in self.log.turns() if t.turn_id == turn_id), None)
            assert turn is not None
            late = feedback_only(turn)
            if self.on_judged is not None:
                self.on_judged(late)
            route = "sent to the trainer on its own (the turn was already judged)"
        return {"turn_id": turn_id, "user": user, "thumb": feedback.thumb, "correction": feedback.correction,
                "verdict": feedback.score, "route": route}

    def forget_user(self, user: str) -> int:
        """Drop a forgotten user's turns and sessions from memory (the log is rewritten separately)."""
        gone = [t for t in self._turns.values() if t.info.get("user") == user]
        for turn in gone:
            self._turns.pop(turn.turn_id, None)
        for session_id in [s for s, u in self._session_users.items() if u == user]:
            self.tracker.sessions.pop(session_id, None)
            del self._session_users[session_id]
        for turn_id in [t for t, u in self._turn_users.items() if u == user]:
            del self._turn_users[turn_id]
        return len(gone)


__all__ = ["ChatGateway", "PolicyResponder", "Responder", "TextDelta", "UserResponder"]
