"""Chat messages and tool calls, in the OpenAI wire format.

Messages are plain dicts (``{"role": ..., "content": ...}``) so that they go unchanged into a chat
template, an OpenAI request or a JSONL line. This module normalises what an agent sends as its action
(a string of raw model text, or an OpenAI-style assistant dict) into one assistant message plus the
tool calls it contains, and builds the messages an environment sends back.

Raw model text may carry tool calls as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
blocks (the Qwen/Hermes convention used by most open chat templates). A block whose JSON is malformed
is kept as a :class:`ToolCall` with ``error`` set, so the environment can answer it with a tool error
message instead of crashing. The assistant message of such an action is the text the model wrote, with
no ``tool_calls``: rendered through a chat template, a later turn's context shows the model what it
wrote, not a call named ``invalid_tool_call`` it never wrote (a small model copies that name). The tool
messages that answer it carry the errors.

The *lenient* reading (``parse_action(..., lenient=True)``, every env's default) also takes a message
that is exactly one call, or a list of calls, written as bare JSON or in one fenced code block
(```` ```json {"name": ..., "arguments": {...}} ``` ````), as BFCL's own prompt-mode handlers do
(they strip code fences and ``json.loads`` the rest). Small instruct models often drop the tags;
the strict reading (``tool_call_reading="strict"`` on any env) keeps them required. A message that
starts like a bare call (``{"name": ...``) but cannot be read as one (broken JSON, Python triple quotes,
prose after the object) is a call with ``error`` set, as a malformed block is: the agent gets a tool
error and another turn, where it would otherwise have ended the episode with a half-written call as
its final answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]

ROLES = ("system", "user", "assistant", "tool")

INVALID = "invalid_tool_call"  # the name given to a call that could not be parsed
TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
FENCED = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
CALL_KEYS = ({"name", "arguments"}, {"name", "parameters"}, {"name"})
LOOKS_LIKE_A_CALL = re.compile(r"""^\[?\s*\{\s*["']name["']\s*:""")  # a bare JSON call's first key
CALL_FORM = '{"name": ..., "arguments": {...}}'
# how a reply that may be a call begins: a tag (<tool_call>, or a wrapper such as <json>), a JSON value, a code fence
CALL_OPENINGS = ("<", "{", "[", "`")
WRAPPED = re.compile(r"^\s*<([A-Za-z_][\w-]*)>\s*(.*?)\s*(?:</\1>)?\s*$", re.DOTALL)  # <json>...</json>
TOOL_CALL_READINGS = ("lenient", "strict")


class InvalidAction(TypeError):
    """The action is not an assistant message: the caller's bug, reported before any state changes."""


@dataclass
class ToolCall:
    """One call the agent asked for. ``error`` is set when the call could not be parsed."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    error: str | None = None

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


def system(content: str) -> Message:
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def assistant(content: str | None, tool_calls: list[ToolCall] | None = None) -> Message:
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [call.to_openai() for call in tool_calls]
    return message


def tool_result(call: ToolCall, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def text_of(message: Message) -> str:
    """The text of a message whose content is a string, a list of parts, or None."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _json_problem(exc: json.JSONDecodeError) -> str:
    """What json found wrong and where; some of its messages end in "at" already ("Invalid control character at")."""
    return f"{exc.msg.removesuffix(' at')} at position {exc.pos}"


def _decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool arguments arrive as a JSON string (OpenAI) or an object (model text): return a dict."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return {}, f"arguments are not valid JSON ({_json_problem(exc)})"
        if not isinstance(value, dict):
            return {}, f"arguments must be a JSON object, got {type(value).__name__}"
        return value, None
    return {}, f"arguments must be a JSON object, got {type(raw).__name__}"


def offered_tool_names(tools: list[dict[str, Any]] | None) -> set[str]:
    """The names of a request's tools (OpenAI function objects, or bare function schemas)."""
    return {str(tool.get("function", tool).get("name")) for tool in tools or [] if isinstance(tool, dict)}


def parse_text_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """Split raw model text into its prose and the ``<tool_call>`` blocks it contains."""
    calls: list[ToolCall] = []
    for index, match in enumerate(TOOL_CALL_BLOCK.finditer(text)):
        body = match.group(1).strip()
        call_id = f"call_{index}"
        try:
            payload = json.loads(body)
        except json.JSONDecodeError as exc:
            calls.append(ToolCall(name=INVALID, id=call_id,
                                  error=f"tool call is not valid JSON ({_json_problem(exc)}): {body[:200]!r}"))
            continue
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            calls.append(ToolCall(name=INVALID, id=call_id,
                                  error='tool call must be a JSON object {"name": ..., "arguments": {...}}'))
            continue
        arguments, error = _decode_arguments(payload.get("arguments", payload.get("parameters")))
        calls.append(ToolCall(name=payload["name"], arguments=arguments, id=call_id, error=error))
    if not calls or any(call.error for call in calls):
        return text, calls  # keep what the model wrote when a block could not be read
    prose = TOOL_CALL_BLOCK.sub("", text).strip()
    return prose, calls


def parse_bare_json_calls(text: str) -> list[ToolCall]:
    """The calls of a message that is nothing but JSON call objects (bare or in one code fence), else [].

    Several calls may come as a list or as consecutive objects (one per line: how Qwen2.5-Coder writes
    parallel calls without its tags)."""
    body = _unfenced(text)
    if not body.startswith(("{", "[")):
        return []
    items, problem = _json_values(body)
    if problem:
        return []
    if len(items) == 1 and isinstance(items[0], list):
        items = items[0]
    calls = []
    for index, item in enumerate(items):
        if not _is_call_object(item):
            return []
        calls.append(ToolCall(name=item["name"], arguments=item.get("arguments", item.get("parameters")) or {},
                              id=f"call_{index}"))
    return calls


def wrapped_json_calls(text: str) -> list[ToolCall]:
    """The calls of a message that is JSON call objects inside one tag (``<json>{"name": ...}</json>``), else [].
    Not read as an action (no model is taught this form); the serve gateway's call guard reads it as a call."""
    match = WRAPPED.match(text)
    if match is None or match.group(1) == "tool_call":
        return []
    return parse_bare_json_calls(match.group(2))


def _unreadable_bare_call(text: str) -> list[ToolCall]:
    """One call with ``error`` set when the message starts like a bare JSON call but is not one, else [].

    Call it after :func:`parse_bare_json_calls` found nothing; the error says what to fix."""
    body = _unfenced(text)
    if not LOOKS_LIKE_A_CALL.match(body):
        return []
    values, problem = _json_values(body)
    for value in values:  # what was read comes first: a value that is not a call
        items = value if isinstance(value, list) else [value]
        if not items or not all(_is_call_object(item) for item in items):
            problem = f'a call is an object with a string "name" and an object "arguments", got {body[:200]!r}'
            break
    problem = problem or "the calls could not be read"  # not reached: parse_bare_json_calls would have read them
    return [ToolCall(name=INVALID, id="call_0", error=f"{problem}; write a call as {CALL_FORM} and nothing else")]


def _unfenced(text: str) -> str:
    body = text.strip()
    fenced = FENCED.match(body)
    return fenced.group(1).strip() if fenced else body


def _is_call_object(item: Any) -> bool:
    """``{"name": str}`` with an optional object of "arguments" (or "parameters"), and no other key."""
    if not (isinstance(item, dict) and set(item) in CALL_KEYS and isinstance(item.get("name"), str)):
        return False
    raw = item.get("arguments", item.get("parameters"))
    return raw is None or isinstance(raw, dict)


def _json_values(body: str) -> tuple[list[Any], str | None]:
    """The JSON values at the start of ``body``, separated by white space (or commas), and what stopped the
    reading: None when they make up all of ``body``, else the text after them or the JSON that does not parse."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(body):
        if values and body[at] not in "{[":
            return values, f"text follows the call: {body[at:at + 200]!r}"
        try:
            value, at = decoder.raw_decode(body, at)
        except json.JSONDecodeError as exc:
            return values, (f"the call is not valid JSON ({_json_problem(exc)}): "
                            f"{body[max(0, exc.pos - 160):exc.pos + 40]!r}")
        values.append(value)
        while at < len(body) and (body[at].isspace() or body[at] == ","):
            at += 1
    return values, None


def _parse_openai_tool_calls(raw_calls: Any) -> list[ToolCall]:
    if not isinstance(raw_calls, list):
        raise InvalidAction(f"'tool_calls' must be a list, got {type(raw_calls).__name__}")
    calls = []
    for index, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            raise InvalidAction(f"tool_calls[{index}] must be a dict, got {type(raw).__name__}")
        function = raw.get("function", raw)
        name = function.get("name") if isinstance(function, dict) else None
        call_id = str(raw.get("id") or f"call_{index}")
        if not isinstance(name, str) or not name:
            calls.append(ToolCall(name=INVALID, id=call_id, error="tool call has no function name"))
            continue
        arguments, error = _decode_arguments(function.get("arguments"))
        calls.append(ToolCall(name=name, arguments=arguments, id=call_id, error=error))
    return calls


def _parse_text(text: str, lenient: bool) -> tuple[Message, list[ToolCall]]:
    prose, calls = parse_text_tool_calls(text)
    if not calls and lenient:
        calls = parse_bare_json_calls(text)
        if calls:
            return assistant(None, calls), calls
        calls = _unreadable_bare_call(text)
    if any(call.error for call in calls):  # recorded as written: a later turn shows the model its own text
        return assistant(text), calls
    return assistant(prose, calls), calls


def parse_action(action: Any, lenient: bool = False) -> tuple[Message, list[ToolCall]]:
    """Normalise an agent action into ``(assistant_message, tool_calls)``.

    Accepts raw text (tool calls in ``<tool_call>`` blocks) or an OpenAI assistant dict (structured
    ``tool_calls``, or, when it has none, ``<tool_call>`` blocks in its content); ``lenient`` also
    reads a message that is only bare or fenced JSON calls (see the module docstring). Raises
    :class:`InvalidAction` for anything that is not an assistant message.
    """
    if isinstance(action, str):
        return _parse_text(action, lenient)
    if not isinstance(action, dict):
        raise InvalidAction(
            f"an action must be a str or an assistant message dict, got {type(action).__name__}"
        )
    role = action.get("role", "assistant")
    if role != "assistant":
        raise InvalidAction(f"an action must have role 'assistant', got {role!r}")
    content = action.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise InvalidAction(f"'content' must be a str, a list of parts or None, got {type(content).__name__}")
    if action.get("tool_calls"):
        calls = _parse_openai_tool_calls(action["tool_calls"])
        message = assistant(text_of(action) or None, calls)
        return message, calls
    return _parse_text(text_of(action), lenient)
