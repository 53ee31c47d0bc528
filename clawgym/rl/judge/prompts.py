"""Judge prompts: frames and per-setting guides from ``clawgym/rl/judge_prompts/``, and a turn as prompt text."""

from __future__ import annotations

import re
import string
from pathlib import Path

from clawgym.core.messages import Message, text_of
from clawgym.rl.types import Turn

PROMPT_DIR = Path(__file__).parent.parent / "judge_prompts"
SETTINGS = ("terminal", "toolcall", "chat", "swe", "gui")
SETTING_NAMES = {
    "default": "an agent environment",
    "terminal": "a terminal (Linux shell) environment",
    "toolcall": "a tool-calling environment",
    "chat": "a live chat with a user",
    "swe": "a software-engineering environment (a repository with tests)",
    "gui": "a web browser (GUI) environment",
}
_ENV_HINTS = (  # substring of the lower-cased env id -> setting
    ("terminal", "terminal"),
    ("toolcall", "toolcall"),
    ("tool_call", "toolcall"),
    ("chat", "chat"),
    ("swe", "swe"),
    ("gui", "gui"),
    ("browser", "gui"),
)

def setting_for(env_id: str) -> str:
    """Map an env id (``clawgym/Terminal-v0``) to a prompt setting; unknown ids get ``default``."""
    name = env_id.lower().split("/")[-1]
    for needle, setting in _ENV_HINTS:
        if needle in name:
            return setting
    return "default"


class PromptTemplates:
    """Frames (``<kind>.txt``) and setting guides (``guide.<setting>.txt``) from a directory.

    A frame has a ``### system`` and a ``### user`` section; both are :class:`string.Template` text
    with ``$setting_name``, ``$guide``, ``$task``, ``$context``, ``$action`` and ``$next_state``.
    """

    def __init__(self, directory: str | Path = PROMPT_DIR) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise FileNotFoundError(f"judge prompt directory {self.directory} does not exist")
        self._cache: dict[str, str] = {}

    def _read(self, name: str) -> str:
        if name not in self._cache:
            self._cache[name] = (self.directory / name).read_text(encoding="utf-8").strip()
        return self._cache[name]

    def frame(self, kind: str) -> tuple[str, str]:
        try:
            text = self._read(f"{kind}.txt")
        except FileNotFoundError:
            raise FileNotFoundError(f"no judge prompt {kind}.txt in {self.directory}") from None
        match = re.fullmatch(r"### system\n(.*?)\n### user\n(.*)", text, re.DOTALL)
        if match is None:
            raise ValueError(f"{kind}.txt must have a '### system' then a '### user' section")
        return match.group(1).strip(), match.group(2).strip()

    def guide(self, setting: str) -> str:
        try:
            return self._read(f"guide.{setting}.txt")
        except FileNotFoundError:
            return self._read("guide.default.txt")

    def render(self, kind: str, setting: str, fields: dict[str, str]) -> list[Message]:
        system_t, user_t = self.frame(kind)
        values = {"setting_name": SETTING_NAMES.get(setting, SETTING_NAMES["default"]),
                  "guide": self.guide(setting), **fields}
        try:
            return [
                {"role": "system", "content": string.Template(system_t).substitute(values)},
                {"role": "user", "content": string.Template(user_t).substitute(values)},
            ]
        except KeyError as exc:
            raise ValueError(f"judge prompt {kind}.txt uses an unknown field {exc}") from None


def clip(text: str, limit: int) -> str:
    """Keep the head and the tail of long text (errors are usually at the end)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n...[{len(text) - limit} characters cut]...\n{text[-half:]}"


def render_message(message: Message, limit: int) -> str:
    role = message.get("role", "?")
    header = f"[{role}{(' ' + message['name']) if role == 'tool' and message.get('name') else ''}]"
    body = text_of(message)
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        body += f"\n-> call {function.get('name')}({function.get('arguments')})"
    return f"{header} {clip(body.strip(), limit)}"


def turn_fields(turn: Turn, *, context_messages: int = 6, max_chars: int = 3000) -> dict[str, str]:
    """The task, the context tail, the action and the next state as prompt text."""
    task_index = next((i for i, m in enumerate(turn.context) if m.get("role") == "user"), None)
    task = clip(text_of(turn.context[task_index]), max_chars) if task_index is not None else "(no task message)"
    rest = [m for i, m in enumerate(turn.context) if i != task_index and m.get("role") != "system"]
    tail = rest[-context_messages:] if context_messages > 0 else []
    context = "\n".join(render_message(m, max_chars // 3) for m in tail) or "(none: this is the first action)"
    if len(rest) > len(tail):
        context = f"({len(rest) - len(tail)} earlier messages omitted)\n{context}"
    action = render_message(turn.action, max_chars)
    if turn.next_state:
        next_state = "\n".join(render_message(m, max_chars) for m in turn.next_state)
    else:
        next_state = ("(nothing: the episode ended with this action)"
                      if turn.terminated or turn.truncated else "(nothing)")
    return {"task": task, "context": context, "action": action, "next_state": next_state}
