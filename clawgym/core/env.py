"""AgentEnv: the one Gymnasium contract every clawgym setting follows.

- action: the agent's assistant message (raw text with ``<tool_call>`` blocks, or an OpenAI dict);
- observation: the messages the environment adds since the last action (the *next state*);
- reward / terminated / truncated: the setting's verifiable outcome, given when the episode ends;
- info: ``task_id``, ``turn``, ``tool_calls``, ``tool_errors``, at reset the ``tool_call_reading`` that
  ``step`` applies, and at the end ``success``.

A setting subclasses :class:`AgentEnv` and fills in a handful of hooks (``make_tools``,
``system_prompt``, ``setup``, ``score``, ``teardown``). The base class owns the episode loop: task
choice and seeding, action parsing, tool dispatch (every failure becomes a tool error message the
agent reads), turn limits, the transcript (``self.messages``), rendering and idempotent ``close``.
A setting's constructor takes its own keywords and passes the episode options every setting shares
(:class:`EpisodeOptions`: ``split``, ``max_turns``, ``time_limit_s``, ``render_mode``,
``tool_call_reading``) through as
``**episode`` to ``super().__init__``, so they are declared once, here.

Determinism: the task and any randomised start state come from ``self.np_random`` at reset;
``step`` never draws from it, so the same seed and the same actions give the same episode.
"""

from __future__ import annotations

import copy
import time
from typing import Any, SupportsFloat, TypedDict

import gymnasium as gym

from clawgym.core.messages import (
    TOOL_CALL_READINGS,
    InvalidAction,
    Message,
    ToolCall,
    parse_action,
    system,
    text_of,
    tool_result,
    user,
)
from clawgym.core.spaces import AssistantMessage, Messages
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import Tool, ToolResult

READING_INFO_KEY = "tool_call_reading"  # reset's info: "lenient" or "strict", as step reads actions


class EpisodeOver(RuntimeError):
    """``step`` was called with no episode running (before ``reset`` or after the episode ended)."""


class EpisodeOptions(TypedDict, total=False):
    """The keywords every setting accepts and hands to :class:`AgentEnv` (``**episode: Unpack[EpisodeOptions]``)."""

    split: str | None
    max_turns: int | None
    time_limit_s: float | None
    render_mode: str | None
    tool_call_reading: str


class AgentEnv(gym.Env[list, Any]):
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}
    default_max_turns: int = 20

    def __init__(
        self,
        tasks: Any = None,
        *,
        split: str | None = None,
        max_turns: int | None = None,
        time_limit_s: float | None = None,
        render_mode: str | None = None,
        tool_call_reading: str = "lenient",
    ) -> None:
        if tool_call_reading not in TOOL_CALL_READINGS:
            raise ValueError(f"tool_call_reading {tool_call_reading!r} is not one of {TOOL_CALL_READINGS}")
        self.tool_call_reading = tool_call_reading
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        task_set = self.load_tasks(tasks)
        self.task_set = task_set.split(split) if split else task_set
        if len(self.task_set) == 0:
            raise ValueError("the task set is empty")
        self.max_turns = int(max_turns or self.default_max_turns)
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.time_limit_s = time_limit_s
        self._tools: dict[str, Tool] = {tool.name: tool for tool in self.make_tools()}
        self.observation_space = Messages()
        self.action_space = AssistantMessage(self.tools)
        self.task: Task | None = None
        self.messages: list[Message] = []
        self.turn = 0
        self.episode_seed = 0
        self._done = False
        self._closed = False
        self._started_at = 0.0
        self._counts = {"tool_calls": 0, "tool_errors": 0}
        self._final_info: dict[str, Any] = {}

    # ---------------------------------------------------------------- hooks for settings
    def load_tasks(self, source: Any) -> TaskSet:
        """Turn the ``tasks=`` argument (None means the bundled set) into a TaskSet."""
        if source is None:
            raise ValueError(f"{type(self).__name__} has no bundled tasks: pass tasks=...")
        return TaskSet.load(source)

    def make_tools(self) -> list[Tool]:
        """The tools this setting offers. Called once; tools reach episode state through ``self``."""
        return []

    def system_prompt(self, task: Task) -> str:
        return "You are a helpful agent."

    def task_prompt(self, task: Task) -> str:
        return task.prompt

    def setup(self, task: Task) -> list[Message]:
        """Prepare the episode (sandbox, files, pages). May return extra observation messages."""
        return []

    def on_message(self, message: Message) -> tuple[list[Message], bool, str | None]:
        """A message with no tool calls: by default it is the final answer and ends the episode.

        Returns ``(observation_messages, done, answer)``; a chat setting answers with the user's reply.
        """
        return [], True, text_of(message)

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        """The episode's reward and extra info, once it ends. ``answer`` is None on truncation."""
        return 0.0, {}

    def teardown(self) -> None:
        """Release per-episode resources. Called before each reset and on close; must be idempotent."""

    def oracle_action(self) -> Any:
        """The next action of a scripted oracle that solves the current task (BrowserGym's ``cheat``).

        It may read ``self.task`` and ``self.messages``. Used to prove every bundled task is solvable,
        by ``clawgym play --oracle``, ``clawgym rollout --policy scripted`` and ``make run``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no oracle")

    # ---------------------------------------------------------------- gymnasium API
    def action_reading(self) -> str:
        """The reading ``step`` applies to an action: lenient only where there is a tool to call.

        ``reset`` reports it in ``info["tool_call_reading"]``, so a rollout runner that talks to the env
        through an executor records each action as the env read it (:func:`recorded_action`).
        """
        return "lenient" if self._tools and self.tool_call_reading == "lenient" else "strict"

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools the agent may call."""
        return [tool.schema() for tool in self._tools.values()]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list, dict[str, Any]]:
        super().reset(seed=seed)
        if self._closed:
            raise EpisodeOver("the environment is closed")
        self.teardown()
        options = options or {}
        if options.get("task_id") is not None:
            self.task = self.task_set.by_id(str(options["task_id"]))
        else:
            self.task = self.task_set[int(self.np_random.integers(len(self.task_set)))]
        self.episode_seed = int(self.np_random.integers(2**31 - 1))
        self.turn = 0
        self._done = False
        self._counts = {"tool_calls": 0, "tool_errors": 0}
        self._final_info = {}
        self._started_at = time.monotonic()
        observation = [system(self.system_prompt(self.task)), user(self.task_prompt(self.task))]
        try:
            observation += self.setup(self.task)
        except BaseException:
            self.teardown()
            raise
        self.messages = copy.deepcopy(observation)
        info = self._info()
        info[READING_INFO_KEY] = self.action_reading()
        return observation, info

    def step(self, action: Any) -> tuple[list, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.task is None or self._closed:
            raise EpisodeOver("step() called before reset(); call env.reset() first")
        if self._done:
            raise EpisodeOver("step() called after the episode ended (terminated or truncated); call env.reset()")
        # raises InvalidAction before any state changes; bare-JSON calls count only where there are tools
        message, calls = parse_action(action, lenient=self.action_reading() == "lenient")
        self.turn += 1
        self.messages.append(message)
        if calls:
            observation, done, answer = self._run_tools(calls)
        else:
            observation, done, answer = self.on_message(message)
        out_of_time = self.time_limit_s is not None and time.monotonic() - self._started_at > self.time_limit_s
        truncated = not done and (self.turn >= self.max_turns or out_of_time)
        reward = 0.0
        if done or truncated:
            self._done = True
            reward, extra = self.score(answer if done else None)
            self._final_info = {"success": bool(extra.pop("success", reward > 0)), **extra}
            if truncated:
                self._final_info["truncated_by"] = "time_limit" if out_of_time else "max_turns"
        self.messages.extend(copy.deepcopy(observation))
        return observation, float(reward), done, truncated, self._info()

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return format_transcript(self.messages)
        return None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.teardown()
        finally:
            for tool in self._tools.values():
                tool.close()

    # ---------------------------------------------------------------- internals
    def _run_tools(self, calls: list[ToolCall]) -> tuple[list[Message], bool, str | None]:
        observation: list[Message] = []
        for index, call in enumerate(calls):
            result = self._dispatch(call)
            self._counts["tool_calls"] += 1
            self._counts["tool_errors"] += int(result.error)
            observation.append(tool_result(call, result.content))
            if result.done:
                for skipped in calls[index + 1:]:
                    observation.append(tool_result(skipped, "Skipped: the episode ended with an earlier call."))
                return observation, True, result.answer
        return observation, False, None

    def _dispatch(self, call: ToolCall) -> ToolResult:
        if call.error:
            return ToolResult(f"Error: {call.error}", error=True)
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return ToolResult(f"Error: unknown tool {call.name!r}; available tools: {available}", error=True)
        return tool.call(call.arguments)

    def _info(self) -> dict[str, Any]:
        assert self.task is not None
        info = {"task_id": self.task.id, "turn": self.turn, **self._counts}
        info.update(copy.deepcopy(self._final_info))
        return info


def recorded_action(action: Any, reset_info: dict[str, Any]) -> Message:
    """The assistant message an env records for ``action``, from the ``info`` of its ``reset``.

    An env that does not report its reading (any gym env, the live chat) is read strictly.
    """
    return parse_action(action, lenient=reset_info.get(READING_INFO_KEY) == "lenient")[0]


def format_transcript(messages: list[Message]) -> str:
    """A readable transcript for ``render_mode="ansi"`` and ``clawgym play``."""
    lines = []
    for message in messages:
        role = message["role"]
        header = role.upper()
        if role == "tool":
            header = f"TOOL[{message.get('name', '')}]"
        body = text_of(message)
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            body += f"\n-> {function.get('name')}({function.get('arguments')})"
        lines.append(f"--- {header}\n{body.strip()}")
    return "\n".join(lines) + "\n"


__all__ = ["AgentEnv", "EpisodeOptions", "EpisodeOver", "InvalidAction", "READING_INFO_KEY", "format_transcript",
           "recorded_action"]
