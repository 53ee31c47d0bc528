"""Tools an agent may call: a name, a JSON schema for the arguments, and ``call()``.

``Tool.schema()`` is the OpenAI function schema, so ``env.unwrapped.tools`` can go straight into a
chat template or an OpenAI request. Arguments are checked against the schema before ``call`` runs, so
a tool's body only ever sees the arguments it declared; a bad call becomes an error result the agent
reads, never an exception in the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


@dataclass
class ToolResult:
    """What a tool returns. ``done`` ends the episode with ``answer`` as the final answer (a submit tool)."""

    content: str
    error: bool = False
    done: bool = False
    answer: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class ToolError(Exception):
    """Raised inside a tool body for an expected failure; its message is shown to the agent."""


def check_arguments(parameters: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Validate arguments against a flat JSON schema; return an error message or None."""
    properties = parameters.get("properties", {})
    missing = [name for name in parameters.get("required", []) if name not in arguments]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    if parameters.get("additionalProperties") is False:
        unknown = [name for name in arguments if name not in properties]
        if unknown:
            return f"unknown argument(s): {', '.join(unknown)}; expected: {', '.join(properties)}"
    for name, value in arguments.items():
        spec = properties.get(name)
        if not spec or "type" not in spec:
            continue
        types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        allowed = tuple(t for name_ in types for t in JSON_TYPES.get(name_, (object,)))
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and "boolean" not in types):
            return f"argument {name!r} must be of type {' or '.join(types)}, got {type(value).__name__}"
        if "enum" in spec and value not in spec["enum"]:
            return f"argument {name!r} must be one of {spec['enum']}, got {value!r}"
    return None


class Tool:
    """Base class: subclasses set ``name``, ``description``, ``parameters`` and implement ``run``."""

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def run(self, **arguments: Any) -> ToolResult | str:
        raise NotImplementedError

    def call(self, arguments: dict[str, Any]) -> ToolResult:
        """Validate, run, and turn any failure into an error result."""
        problem = check_arguments(self.parameters, arguments)
        if problem:
            return ToolResult(f"Error: {self.name}: {problem}", error=True)
        try:
            result = self.run(**arguments)
        except ToolError as exc:
            return ToolResult(f"Error: {exc}", error=True)
        except Exception as exc:  # a tool bug must not take the episode down
            return ToolResult(f"Error: {self.name} failed: {type(exc).__name__}: {exc}", error=True)
        return result if isinstance(result, ToolResult) else ToolResult(str(result))

    def close(self) -> None:
        """Release what the tool holds (an interpreter, a browser page). Safe to call twice."""


def prop(kind: str | list[str], description: str | None = None, **extra: Any) -> dict[str, Any]:
    """One argument's JSON schema: its type, what it means, and any extra keywords (``enum``, ``items``)."""
    return {"type": kind, **({"description": description} if description is not None else {}), **extra}


def arguments_schema(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``parameters``: an object with these properties, the ``required`` ones, and no others."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


class FunctionTool(Tool):
    """A tool from a plain Python function: ``FunctionTool(fn, name, description, parameters)``."""

    def __init__(
        self,
        fn: Callable[..., ToolResult | str],
        name: str,
        description: str,
        parameters: dict[str, Any],
    ) -> None:
        self.fn = fn
        self.name = name
        self.description = description
        self.parameters = parameters

    def run(self, **arguments: Any) -> ToolResult | str:
        return self.fn(**arguments)


class SubmitTool(Tool):
    """Ends the episode with the given answer (settings whose agents must say when they are done)."""

    name = "submit"
    description = "Submit your final answer and end the episode."
    parameters = {
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "The final answer."}},
        "required": [],
    }

    def run(self, answer: str = "") -> ToolResult:
        return ToolResult("Submitted.", done=True, answer=str(answer))
