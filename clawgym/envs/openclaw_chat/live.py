"""Research mode: real people, through the gateway, are the environment of any agent code.

Each request that reaches the gateway (:class:`clawgym.serve.live.LiveGateway`) is handed to a
:class:`LiveChatEnv`; ``step(action)`` is the answer the client receives, and the next request of the
same session is the next state::

    from clawgym.serve.live import LiveGateway
    live = LiveGateway(log_path="runs/live.jsonl")   # an OpenAI-compatible endpoint on 127.0.0.1
    env = gym.make("clawgym/OpenClawChat-v0", live=live)
    obs, info = env.reset()                          # waits for a new session's first request
    obs, reward, terminated, truncated, info = env.step(my_agent(obs))

The env only needs ``live.responder`` (``new_sessions``, ``claim``, ``release``) and the
:class:`PendingRequest` objects it hands over, so this setting does not depend on the gateway's code.
The reward of a step is 0; the learning signal is the judge's verdict on the turn, recorded in the log.
"""

from __future__ import annotations

import concurrent.futures
import queue
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from clawgym.core.env import format_transcript
from clawgym.core.messages import InvalidAction, parse_action, text_of
from clawgym.core.policy import Generation
from clawgym.core.spaces import AssistantMessage, Messages


@dataclass
class PendingRequest:
    """One main-line request waiting for its answer. ``view`` is the gateway's reading of the request
    (``session_id``, ``conversation``, ``next_state``, ``done``); ``answer`` receives a Generation."""

    view: Any
    body: dict[str, Any]
    answer: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


class LiveChatEnv(gym.Env[list, Any]):
    """One live session per episode. ``wait_s`` bounds how long reset/step wait for the person."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, live: Any, *, wait_s: float = 600.0, render_mode: str | None = None) -> None:
        self.live = live
        self.wait_s = wait_s
        self.render_mode = render_mode
        self.observation_space = Messages()
        self.action_space = AssistantMessage()
        self.messages: list[dict[str, Any]] = []
        self.session_id: str | None = None
        self.turn = 0
        self._pending: PendingRequest | None = None
        self._inbox: queue.Queue[PendingRequest] | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools the client offered in its latest request (they change per session)."""
        return list(self._pending.body.get("tools") or []) if self._pending else []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._release()
        try:
            pending = self.live.responder.new_sessions.get(timeout=self.wait_s)
        except queue.Empty:
            raise TimeoutError(f"no new chat session arrived within {self.wait_s}s") from None
        self._pending = pending
        self.session_id = pending.view.session_id
        self._inbox = self.live.responder.claim(self.session_id)
        self.turn = 0
        self.messages = list(pending.view.conversation)
        return list(pending.view.conversation), self._info()

    def step(self, action: Any):
        if self._pending is None:
            raise RuntimeError("step() needs a pending request: call reset() first (or the session ended)")
        message, calls = parse_action(action)  # raises InvalidAction before anything is sent
        text = text_of(message) if not calls else (message.get("content") or "")
        self._pending.answer.set_result(Generation(text=text, message=message, tool_calls=calls,
                                                   finish_reason="tool_calls" if calls else "stop"))
        self.messages.append(message)
        self.turn += 1
        session_done = self._pending.view.done  # the client said this was the session's last request
        self._pending = None
        if not session_done:
            try:
                assert self._inbox is not None
                self._pending = self._inbox.get(timeout=self.wait_s)
            except queue.Empty:
                return [], 0.0, False, True, self._info(ended="idle")
            observation = list(self._pending.view.next_state)
            self.messages.extend(observation)
            return observation, 0.0, False, False, self._info()
        return [], 0.0, True, False, self._info(ended="session_done")

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"task_id": f"live:{self.session_id}", "turn": self.turn, "session_id": self.session_id, **extra}

    def _release(self) -> None:
        if self._pending is not None and not self._pending.answer.done():
            self._pending.answer.set_exception(InvalidAction("the agent abandoned this session"))
        self._pending = None
        if self.session_id is not None:
            self.live.responder.release(self.session_id)

    def render(self) -> str | None:
        return format_transcript(self.messages) if self.render_mode == "ansi" else None

    def close(self) -> None:
        self._release()


def make_chat_env(live: Any = None, **kwargs: Any) -> gym.Env:
    """The entry point of clawgym/OpenClawChat-v0: offline simulator by default, live with ``live=``."""
    if live is not None:
        return LiveChatEnv(live, **kwargs)
    from clawgym.envs.openclaw_chat.env import OpenClawChatEnv

    return OpenClawChatEnv(**kwargs)
