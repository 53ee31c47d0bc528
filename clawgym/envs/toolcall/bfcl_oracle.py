"""Oracle answers from BFCL's ground truth, so every BFCL-v0 task is provably solvable.

Single turn: the possible-answer file lists, per parameter, every accepted value ("" = may be left out);
the oracle takes the first accepted value of each. Java and JavaScript tasks take every argument as a
string in that language's syntax (BFCL's convention); the oracle writes the value that way.
Multi-turn: the ground truth is a list of call strings per turn (``cd(folder='docs')``).
"""

from __future__ import annotations

import ast
import json
from typing import Any

# Tasks whose ground truth contradicts their own function docs or trips the checker, so that no answer
# passes bfcl-eval's checker (checked by tests/test_bfcl_env.py: the oracle scores 0 exactly on these).
KNOWN_UNSOLVABLE = {
    "simple_java_36": "ArrayList<any> items are all read as strings; the answer expects an int and a bool",
    "simple_java_64": "the HashMap answer is compared character by character",
    "simple_java_65": "ArrayList<any> items are all read as strings; the answer expects bools",
    "live_simple_106-63-0": "required parameters of the doc are missing from the answer",
    "live_simple_112-68-0": "required parameters have no accepted value",
    "live_multiple_862-181-3": "the answer uses a parameter the doc does not have",
    "live_multiple_964-207-0": "the answer names parameter 'question'; the doc requires 'statement'",
}


def single_turn_calls(ground_truth: list[dict[str, Any]], functions: list[dict[str, Any]],
                      language: str = "python") -> list[tuple[str, dict[str, Any]]]:
    """One accepted answer (the first given value of each parameter) as ``[(tool name, arguments), ...]``
    (tool names with dots as underscores)."""
    docs = {f["name"]: f for f in functions}
    calls = []
    for call in ground_truth:
        (name, params), = call.items()
        doc = docs.get(name, {}).get("parameters", {})
        properties, required = doc.get("properties", {}), doc.get("required", [])
        arguments = {}
        for key, allowed in params.items():
            given = [v for v in allowed if v != ""]
            if "" in allowed and key not in required:  # leaving it out is accepted
                continue
            if not given:
                if key in required and "" in allowed:  # required, and only the empty string is accepted
                    arguments[key] = ""
                continue
            value = _first_value(given[0])
            spec = properties.get(key, {})
            if language == "java":
                value = java_literal(value, spec.get("type", "String"), (spec.get("items") or {}).get("type"))
            elif language == "javascript":
                value = js_literal(value, spec.get("type", "String"), (spec.get("items") or {}).get("type"))
            arguments[key] = value
        calls.append((name.replace(".", "_"), arguments))
    return calls


def _first_value(value: Any) -> Any:
    """Dict-valued answers list accepted values per key too: take the first of each, recursively."""
    if isinstance(value, dict):
        chosen = {}
        for key, allowed in value.items():
            if not isinstance(allowed, list):  # a literal value, not a list of accepted ones
                chosen[key] = allowed
            elif any(x != "" for x in allowed):
                chosen[key] = _first_value(next(x for x in allowed if x != ""))
        return chosen
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_first_value(v) for v in value]
    return value


def java_literal(value: Any, kind: str, item_kind: str | None = None) -> str:
    """A value as Java source text, the way bfcl-eval's Java type converter reads it back."""
    if isinstance(value, str):  # already Java source text in the ground truth
        return value
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "long":
        return f"{value}L"
    if kind == "float":
        return f"{value}f"
    if kind == "ArrayList":
        quote = {"String": '"', "char": "'"}.get(item_kind or "", "")
        items = ", ".join(f"{quote}{v}{quote}" if quote else java_literal(v, item_kind or "any") for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))"
    if kind == "Array":
        return f"new {item_kind or 'Object'}[]{{{', '.join(java_literal(v, item_kind or 'any') for v in value)}}}"
    if kind == "HashMap":
        puts = " ".join(f'put("{k}", {_java_value(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return str(value)


def _java_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def js_literal(value: Any, kind: str, item_kind: str | None = None) -> str:
    """A value as JavaScript source text, the way bfcl-eval's JavaScript type converter reads it back."""
    if isinstance(value, str):
        return value
    if kind == "Boolean" or isinstance(value, bool):
        return "true" if value else "false"
    if kind == "Bigint":
        return f"{value}n"
    if isinstance(value, list):
        return "[" + ", ".join(_js_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _js_value(value: Any) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, (list, dict)):
        return js_literal(value, "array" if isinstance(value, list) else "dict")
    return json.dumps(value)


def multi_turn_calls(calls: list[str], functions: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Ground-truth call strings as ``[(name, keyword arguments), ...]``; positional ones get their names."""
    return [parse_call(call, functions) for call in calls]


def parse_call(text: str, functions: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    node = ast.parse(text, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    name = node.func.id
    arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    if node.args:
        doc = next((f for f in functions if f["name"] == name), None)
        if doc is None:
            raise ValueError(f"{text!r} has positional arguments and {name} has no function doc")
        names = list(doc["parameters"]["properties"])
        arguments.update({names[i]: ast.literal_eval(arg) for i, arg in enumerate(node.args)})
    return name, arguments
