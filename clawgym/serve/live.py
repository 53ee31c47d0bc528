"""The gateway side of research mode: each live request is handed to a LiveChatEnv, whose
``step(action)`` supplies the answer (see :mod:`clawgym.envs.openclaw_chat.live`).

The gateway still recognises sessions, records every main-line turn and judges it, exactly as in the
deployed mode: the env only replaces the policy. Side turns (heartbeats, memory flushes) are answered
by ``side_policy`` when given, else with OpenClaw's silent token ``NO_REPLY``.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator

from clawgym.core.policy import Generation, SamplingParams
from clawgym.envs.openclaw_chat.live import PendingRequest
from clawgym.inference.streaming import StreamItem, TextDelta, stream_or_generate
from clawgym.serve.gateway import ChatGateway
from clawgym.serve.sessions import RequestView
from clawgym.serve.turn_log import TurnLog

if TYPE_CHECKING:
    from clawgym.core.policy import Policy
    from clawgym.rl.judge import JudgeStage
    from clawgym.rl.types import JSONObject

SILENT_REPLY = "NO_REPLY"


class EnvResponder:
    """Routes each main-line request to the env that owns its session (or to the next free env)."""

    def __init__(self, side_policy: Policy | None = None) -> None:
        self.side_policy = side_policy
        self.new_sessions: queue.Queue[PendingRequest] = queue.Queue()
        self._sessions: dict[str, queue.Queue[PendingRequest]] = {}
        self._lock = threading.Lock()

    def claim(self, session_id: str) -> queue.Queue[PendingRequest]:
        with self._lock:
            return self._sessions.setdefault(session_id, queue.Queue())

    def release(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    async def respond(self, view: RequestView, body: JSONObject,
                      sampling: SamplingParams) -> AsyncIterator[StreamItem]:
        if not view.main:
            if self.side_policy is not None:
                async for item in stream_or_generate(self.side_policy, list(body["messages"]),
                                                     body.get("tools"), sampling):
                    yield item
                return
            yield TextDelta(SILENT_REPLY)
            yield Generation(text=SILENT_REPLY, message={"role": "assistant", "content": SILENT_REPLY})
            return
        pending = PendingRequest(view, body)
        with self._lock:
            owner = self._sessions.get(view.session_id)
        (owner if owner is not None else self.new_sessions).put(pending)
        generation: Generation = await asyncio.wrap_future(pending.answer)
        yield TextDelta(generation.text)
        yield generation


class LiveGateway:
    """A gateway whose answers come from LiveChatEnv.step, served on 127.0.0.1 in a background thread."""

    def __init__(self, log_path: str | Path, *, host: str = "127.0.0.1", port: int | None = None,
                 api_key: str | None = None, side_policy: Policy | None = None,
                 judge_stage: JudgeStage | None = None) -> None:
        from clawgym.inference.server import BackgroundServer
        from clawgym.serve.app import build_gateway_app

        self.responder = EnvResponder(side_policy)
        self.gateway = ChatGateway(self.responder, TurnLog(log_path), judge_stage=judge_stage)
        self.server = BackgroundServer(build_gateway_app(self.gateway, api_key=api_key), host=host, port=port)
        self.url = self.server.start()

    def close(self) -> None:
        self.server.stop()
        self.gateway.log.close()
