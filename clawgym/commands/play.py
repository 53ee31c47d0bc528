"""``clawgym play ENV_ID``: be the agent in a terminal, one assistant message per line.

In a tool setting a message without a tool call is the final answer, so plain text asks before it is
sent. ``/call NAME ARGS`` takes JSON arguments, or bare text for a tool with one argument
(``/call bash ls -la``). ``/oracle`` lets the task's oracle take the turn; where it cannot act from
the episode's state it says why and the episode goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from clawgym.commands.common import make_env, parse_env_args
from clawgym.core.env import format_transcript
from clawgym.core.messages import InvalidAction, parse_action

PLAY_HELP = """Type the assistant's message and press Enter. Also:
  /call NAME {"arg": ...}   call a tool (JSON arguments)
  /call NAME TEXT           call a tool that takes one argument with TEXT as it (/call bash ls -la)
  /oracle                   let the task's oracle take this turn (it says when it cannot)
  /tools                    list the tools and their schemas
  /quit                     stop
Raw model text with <tool_call>{...}</tool_call> blocks works too. In a setting with tools, a message
without a tool call is the final answer: you are asked before it is sent."""
CONFIRM = "A message without a tool call is the final answer and may end the episode. Send it? [y/N] "


def call_action(rest: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """``/call NAME ARGS`` as an assistant message: ARGS is a JSON object, or bare text when the tool
    has one argument (a JSON value for a non-string argument, e.g. ``/call factorial 5``)."""
    name, _, arguments = rest.strip().partition(" ")
    arguments = arguments.strip()
    schema = next((t["function"] for t in tools if t["function"]["name"] == name), None)
    properties = (schema or {}).get("parameters", {}).get("properties") or {}
    if arguments and not _is_json_object(arguments) and len(properties) == 1:
        (key, spec), = properties.items()
        value: Any = arguments
        if spec.get("type") != "string":
            try:
                value = json.loads(arguments)
            except json.JSONDecodeError:
                pass
        arguments = json.dumps({key: value})
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "call_0", "type": "function",
                            "function": {"name": name, "arguments": arguments or "{}"}}]}


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def ends_with_text(action: Any, tools: list[dict[str, Any]]) -> bool:
    """Whether ``action`` is plain text (no tool call) in a setting with tools, where that is the final answer."""
    if not tools or not isinstance(action, str):
        return False
    try:
        return not parse_action(action)[1]
    except InvalidAction:
        return False


def add_parser(sub: argparse._SubParsersAction) -> None:
    play = sub.add_parser("play", help="play an environment in the terminal")
    play.add_argument("env_id")
    play.add_argument("--seed", type=int, default=None)
    play.add_argument("--task-id", default=None)
    play.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE", help="gym.make keyword argument")
    play.set_defaults(fn=run_play)


def run_play(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    env = make_env(args.env_id, parse_env_args(args.env_arg))
    try:
        options = {"task_id": args.task_id} if args.task_id else None
        observation, info = env.reset(seed=args.seed, options=options)
        out.write(PLAY_HELP + "\n\n" + format_transcript(observation))
        while True:
            line = _ask(out, stdin, "\nassistant> ")
            if line is None or line.strip() == "/quit":
                out.write("\n")
                return 0
            tools = env.unwrapped.tools
            if line.strip() == "/tools":
                out.write(json.dumps(tools, indent=2) + "\n")
                continue
            try:
                action = _action(line, env, tools)
            except NotImplementedError as exc:  # an oracle that cannot act from here says why
                out.write(f"oracle: {exc}\n")
                continue
            if action is line and ends_with_text(action, tools):  # typed text; the oracle's own is not asked about
                answer = _ask(out, stdin, CONFIRM)
                if answer is None:
                    out.write("\n")
                    return 0
                if answer.strip().lower() not in ("y", "yes"):
                    out.write("not sent\n")
                    continue
            try:
                observation, reward, terminated, truncated, info = env.step(action)
            except InvalidAction as exc:
                out.write(f"error: {exc}\n")
                continue
            out.write(format_transcript(observation) if observation else "")
            if terminated or truncated:
                ending = "terminated" if terminated else "truncated"
                out.write(f"\nepisode {ending}: reward={reward} info={json.dumps(info, default=str)}\n")
                return 0
    finally:
        env.close()


def _action(line: str, env: Any, tools: list[dict[str, Any]]) -> Any:
    if line.startswith("/call "):
        return call_action(line[len("/call "):], tools)
    if line.strip() == "/oracle":
        return env.unwrapped.oracle_action()
    return line


def _ask(out: TextIO, stdin: TextIO, prompt: str) -> str | None:
    """One line from the player (without its newline); None at end of input."""
    out.write(prompt)
    out.flush()
    line = stdin.readline()
    return line.rstrip("\n") if line else None
