"""BFCL v4 tasks from the ``bfcl-eval`` package: categories, loading, tool schemas and oracle calls.

The data is loaded by bfcl-eval's own loaders, twice: with its language hints (the function docs the
agent sees, as in BFCL's generation) and without (the docs its checker reads, as in BFCL's evaluation).
Memory, web search and format sensitivity are left out: they need a network, vector-search models or
a prompt-format sweep rather than one task.
"""

from __future__ import annotations

import copy
import functools
import os
import tempfile
from pathlib import Path
from typing import Any

from clawgym.core.tasks import Task, TaskSet

SINGLE_TURN = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
    "irrelevance", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "live_irrelevance", "live_relevance",
)
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
CATEGORIES = SINGLE_TURN + MULTI_TURN
GROUPS = {
    "all": CATEGORIES,
    "single_turn": SINGLE_TURN,
    "multi_turn": MULTI_TURN,
    "non_live": tuple(c for c in SINGLE_TURN if not c.startswith("live")),
    "live": tuple(c for c in SINGLE_TURN if c.startswith("live")),
    "simple": ("simple_python", "simple_java", "simple_javascript"),
}
NO_GROUND_TRUTH = ("irrelevance", "live_irrelevance", "live_relevance")


def resolve_categories(category: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Category names or group names (``all``, ``single_turn``, ``live`` ...) -> category names."""
    names = [category] if isinstance(category, str) else list(category or ["all"])
    chosen: list[str] = []
    for name in names:
        if name in GROUPS:
            chosen += [c for c in GROUPS[name] if c not in chosen]
        elif name in CATEGORIES:
            chosen += [name] if name not in chosen else []
        else:
            raise ValueError(f"unknown BFCL category {name!r}; valid categories: {', '.join(CATEGORIES)}; "
                             f"groups: {', '.join(GROUPS)}")
    return tuple(chosen)


def _bfcl_utils() -> Any:
    # bfcl-eval creates result/score/lock folders under BFCL_PROJECT_ROOT when imported (by default next
    # to the installed package); point it at a temp folder unless the user chose one.
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(Path(tempfile.gettempdir()) / "clawgym-bfcl"))
    from bfcl_eval import utils

    return utils


@functools.lru_cache(maxsize=None)
def load_category(category: str) -> tuple[dict[str, Any], ...]:
    """One category's entries: the raw BFCL entry plus ``agent_function`` docs and ``ground_truth``.

    Cached: the entries are read-only; an episode deep-copies what it changes.
    """
    utils = _bfcl_utils()
    raw = utils.load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
    hinted = utils.load_dataset_entry(category, include_prereq=False, include_language_specific_hint=True)
    answers = [None] * len(raw) if category in NO_GROUND_TRUTH else utils.load_ground_truth_entry(category)
    entries = []
    for entry, shown, answer in zip(raw, hinted, answers, strict=True):
        entry = dict(entry, category=category, agent_function=shown["function"],
                     ground_truth=None if answer is None else answer["ground_truth"])
        if "missed_function" in shown:
            entry["agent_missed_function"] = shown["missed_function"]
        entries.append(entry)
    return tuple(entries)


def bfcl_tasks(category: Any = None, per_category: int | None = None) -> TaskSet:
    """The tasks of the chosen categories; ``per_category=n`` keeps n evenly spaced tasks of each."""
    if per_category is not None and int(per_category) < 1:
        raise ValueError(f"per_category must be a positive number of tasks, got {per_category!r}")
    tasks = []
    for name in resolve_categories(category):
        entries = load_category(name)
        if per_category is not None and int(per_category) < len(entries):
            n = int(per_category)
            entries = tuple(entries[i * len(entries) // n] for i in range(n))
        for entry in entries:
            first = entry["question"][0]
            prompt = next((m["content"] for m in first if m["role"] != "system"), "")
            tasks.append(Task(id=entry["id"], prompt=prompt, answer=entry["ground_truth"], split="test",
                              data={"category": name, "entry": entry}))
    return TaskSet(tasks, name="bfcl")


def id_help(task_set: TaskSet) -> str:
    """A short description of the valid ids, per category, for error messages."""
    spans: dict[str, list[str]] = {}
    for task in task_set:
        spans.setdefault(task.data["category"], []).append(task.id)
    return "; ".join(f"{c}: {len(ids)} ids {ids[0]} .. {ids[-1]}" for c, ids in spans.items())


# ------------------------------------------------------------------------------------------- schemas
def tool_schema(function: dict[str, Any], type_map: dict[str, str]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI function schema (dots in names become underscores)."""
    parameters = copy.deepcopy(function.get("parameters") or {})
    parameters["type"] = "object"
    parameters["properties"] = {k: _property(v, type_map) for k, v in (parameters.get("properties") or {}).items()}
    return {"name": function["name"].replace(".", "_"), "description": function.get("description", ""),
            "parameters": parameters}


def _property(spec: dict[str, Any], type_map: dict[str, str]) -> dict[str, Any]:
    spec = dict(spec)
    kind = spec.get("type", "string")
    if kind == "float":
        spec["format"] = "float"
        spec["description"] = spec.get("description", "") + " This is a float type value."
    spec["type"] = type_map.get(kind, "string")
    if isinstance(spec.get("properties"), dict):
        spec["properties"] = {k: _property(v, type_map) for k, v in spec["properties"].items()}
    if isinstance(spec.get("items"), dict):
        spec["items"] = _property(spec["items"], type_map)
    return spec
