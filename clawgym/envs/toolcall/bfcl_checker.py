"""bfcl-eval's own checkers and executable back ends, reached without its model registry.

Why this module exists: ``bfcl_eval.eval_checker.ast_eval.ast_checker`` imports
``bfcl_eval.constants.model_config``, whose only use in the checker is one flag per model
(``underscore_to_dot``: does the model see ``math.factorial`` as ``math_factorial``?). That module imports
every vendor handler and SDK (about 540 MB). We import the checker with a one-entry stand-in for that
module, then take the stand-in out of ``sys.modules`` again, so a later real import is unaffected.

Naming convention (OpenAI style, what BFCL's OpenAI FC handler does): the agent sees and calls
``math_factorial``; the checker runs as :data:`CHECKER_MODEL`, whose config says ``underscore_to_dot``.

Multi-turn back ends: ``execute_multi_turn_func_call`` caches one instance per (model name, entry id,
class) in its module's globals. :class:`Backends` gives every episode (and every scoring) its own unique
model name and deletes its instances afterwards, so episodes never share state and nothing leaks.
"""

from __future__ import annotations

import contextlib
import inspect
import keyword
import re
import sys
import types
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

try:
    # Re-exported (the `x as x` form): bfcl_env.py reads them as checker.<name>.
    from bfcl_eval.constants.default_prompts import (
        DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC as DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
    )
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT as MAXIMUM_STEP_LIMIT
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI as GORILLA_TO_OPENAPI
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "BFCL-v0 needs bfcl-eval (installed without its pinned dependencies): "
        "`pip install --no-deps bfcl-eval==2026.3.23` or `make setup`"
    ) from exc

CHECKER_MODEL = "clawgym-FC"  # the model name the checkers are told; see the module docstring
MODEL_CONFIG_MODULE = "bfcl_eval.constants.model_config"
CALL_BLOCKED = "clawgym_blocked_call()"  # recorded in place of a call the executor refused to build


@dataclass(frozen=True)
class _CheckerModelConfig:
    """The one field of bfcl-eval's ``ModelConfig`` the AST checker reads."""

    underscore_to_dot: bool = True


@contextlib.contextmanager
def without_model_registry() -> Iterator[None]:
    """Import bfcl-eval modules that name ``MODEL_CONFIG_MAPPING`` without importing every vendor SDK."""
    if MODEL_CONFIG_MODULE in sys.modules:
        yield
        return
    stand_in = types.ModuleType(MODEL_CONFIG_MODULE)
    stand_in.MODEL_CONFIG_MAPPING = {}  # type: ignore[attr-defined]
    sys.modules[MODEL_CONFIG_MODULE] = stand_in
    try:
        yield
    finally:
        sys.modules.pop(MODEL_CONFIG_MODULE, None)


with without_model_registry():
    from bfcl_eval.eval_checker.ast_eval import ast_checker as _ast

_ast.MODEL_CONFIG_MAPPING.setdefault(CHECKER_MODEL, _CheckerModelConfig())


# ---------------------------------------------------------------------------------------- single turn
def language_of(category: str) -> Any:
    if category == "simple_java":
        return Language.JAVA
    if category == "simple_javascript":
        return Language.JAVASCRIPT
    return Language.PYTHON


def check_single_turn(category: str, functions: list[dict], ground_truth: Any,
                      calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    """BFCL's verdict on one single-turn answer, as its eval runner computes it for an FC model.

    ``calls`` is the decoded answer ``[{name: {arg: value}}, ...]``, or None when the message could not
    be decoded as function calls (plain text, or arguments that are not a JSON object).
    """
    has_call = bool(calls) and not (len(calls) == 1 and not calls[0])
    if "irrelevance" in category:
        return {"valid": not has_call, "error_type": "irrelevance_error:decoder_success" if has_call else ""}
    if "relevance" in category:
        return {"valid": has_call, "error_type": "" if has_call else "relevance_error:decoder_failed"}
    if calls is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed"}
    result = _ast.ast_checker(functions, calls, ground_truth, language_of(category), category, CHECKER_MODEL)
    return {"valid": bool(result["valid"]), "error_type": result.get("error_type", ""),
            "error": result.get("error", [])}


# ---------------------------------------------------------------------------------------- multi turn
def call_string(name: str, arguments: dict[str, Any]) -> str | None:
    """A call as BFCL's FC decoder writes it (``f(a=1,b='x')``), or None if it is unsafe to evaluate.

    bfcl-eval runs these strings with ``eval``; an agent's name or argument key that is not a plain
    identifier could inject code, so such a call is never built.
    """
    if not _is_identifier(name) or not all(isinstance(k, str) and _is_identifier(k) for k in arguments):
        return None
    return f"{name}({','.join(f'{key}={value!r}' for key, value in arguments.items())})"


def _is_identifier(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text) and text.isascii()


class Backends:
    """One episode's live BFCL back-end instances (file system, trading bot, ...)."""

    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self.model_name = f"clawgym_{uuid.uuid4().hex}"
        self.long_context = _long_context(entry["id"])
        self.methods: set[str] = set()
        self._start()

    def _start(self) -> None:
        _, instances = self._execute([])
        self.methods = {name for instance in instances.values()  # the names bfcl-eval maps to instances
                        for name, _ in inspect.getmembers(instance, inspect.ismethod) if not name.startswith("_")}

    def _execute(self, strings: list[str]) -> tuple[list[str], dict[str, Any]]:
        return multi_turn_utils.execute_multi_turn_func_call(
            strings, self.entry.get("initial_config", {}), self.entry["involved_classes"], self.model_name,
            self.entry["id"], long_context=self.long_context, is_evaL_run=False)

    def run(self, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[str]]:
        """Execute one step's calls in order; return ``(results, recorded call strings)``."""
        results: list[str | None] = []
        recorded: list[str] = []
        runnable: list[str] = []
        for name, arguments in calls:
            string = call_string(name, arguments)
            if string is None:
                results.append(f"Error during execution: {name!r} with arguments "
                               f"{sorted(arguments)} is not a valid call")
                recorded.append(CALL_BLOCKED)
            elif name not in self.methods:
                results.append(f"Error during execution: name '{name}' is not defined")
                recorded.append(CALL_BLOCKED)
            else:
                results.append(None)
                recorded.append(string)
                runnable.append(string)
        executed = iter(self._execute(runnable)[0] if runnable else [])
        return [result if result is not None else next(executed) for result in results], recorded

    def close(self) -> None:
        forget(self.model_name)


def forget(model_name: str) -> None:
    """Drop every back-end instance bfcl-eval cached under ``model_name``."""
    prefix = re.sub(r"[-./:]", "_", model_name)
    namespace = vars(multi_turn_utils)
    for key in [key for key in namespace if key.startswith(prefix)]:
        del namespace[key]


def _long_context(entry_id: str) -> bool:
    category = entry_id.rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


def check_multi_turn(entry: dict[str, Any], ground_truth: list[list[str]],
                     turns: list[list[list[str]]]) -> dict[str, Any]:
    """BFCL's verdict on one multi-turn episode: ``turns[t]`` holds each step's recorded call strings.

    Runs bfcl-eval's ``multi_turn_checker`` (it replays the calls and the ground truth on fresh back ends
    and compares their states and results after every turn) under a model name used once.
    """
    if len(turns) != len(ground_truth):
        return {"valid": False, "error_type": "multi_turn:force_terminated"}
    model_name = f"clawgym_check_{uuid.uuid4().hex}"
    try:
        result = multi_turn_checker(turns, ground_truth, entry, entry["id"].rsplit("_", 1)[0], model_name)
    finally:
        forget(model_name)
    return {"valid": bool(result["valid"]), "error_type": result.get("error_type", ""),
            "error": result.get("error_message", "")}

