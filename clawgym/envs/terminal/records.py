"""The terminal task record: what a Task's ``data`` must hold for Terminal-v0 to run it.

Shared by every loader (the bundled set, JSONL files, terminal-bench directories), so it lives apart
from them; see :mod:`clawgym.envs.terminal.taskset` for the fields.
"""

from __future__ import annotations

from clawgym.core.tasks import Task


def validate(task: Task) -> Task:
    """Fail early, with the task id, on a record the env could not run."""
    data = task.data
    if not isinstance(data.get("check"), str) or not data["check"].strip():
        raise ValueError(f"terminal task {task.id!r} has no check script (data['check'])")
    files = data.setdefault("files", {})
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ValueError(f"terminal task {task.id!r}: data['files'] must map relative paths to text")
    for path in files:
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"terminal task {task.id!r}: file path {path!r} must be relative to the work dir")
    for key in ("setup", "solution"):
        if not isinstance(data.setdefault(key, ""), str):
            raise ValueError(f"terminal task {task.id!r}: data[{key!r}] must be a bash script string")
    return task
