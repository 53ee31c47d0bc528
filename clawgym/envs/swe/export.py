"""Export a real-project SWE-v0 task as a SWE-bench instance backed by a local git mirror.

The mirror ``<mirror_dir>/pypi/<name>`` gets, per exported task, one commit holding the buggy tree
without its tests (the instance's ``base_commit``, tagged with the instance id) and a child commit
that adds the test directory; ``test_patch`` is the diff between the two, ``patch`` the gold patch.
The record uses the ``swebench`` package's field names, so :func:`clawgym.envs.swe.loader.load_swebench`
with ``mirror_dir=`` runs it as SWE-bench would: check out ``base_commit``, apply the agent's diff,
apply ``test_patch``, run the tests. Commit dates and authors are fixed, so hashes are reproducible.

    python -m clawgym.envs.swe.export pypi-idna-001 /tmp/mirrors /tmp/instances.jsonl
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from clawgym.core.tasks import Task
from clawgym.envs.swe import loader, pypi

GIT_ENV = {"GIT_AUTHOR_NAME": "clawgym", "GIT_AUTHOR_EMAIL": "clawgym@localhost", "GIT_COMMITTER_NAME": "clawgym",
           "GIT_COMMITTER_EMAIL": "clawgym@localhost", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_SYSTEM": os.devnull}


def _git(repo: Path, *args: str, index: str | None = None) -> str:
    env = {**os.environ, **GIT_ENV, **({"GIT_INDEX_FILE": index} if index else {})}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, files: dict[str, bytes], message: str, parent: str | None) -> str:
    """A commit of exactly ``files`` (no working tree involved), returning its sha."""
    with tempfile.TemporaryDirectory() as tmp:
        index = str(Path(tmp) / "index")
        for path, content in sorted(files.items()):
            blob = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=content,
                                  capture_output=True, check=True).stdout.decode().strip()
            _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", index=index)
        tree = _git(repo, "write-tree", index=index).strip()
    return _git(repo, "commit-tree", tree, "-m", message, *(["-p", parent] if parent else [])).strip()


def export_swebench(task: Task, mirror_dir: str | Path, projects_root: Path | None = None) -> dict[str, Any]:
    """Write ``task`` (``source="pypi"``) into the mirror and return its SWE-bench record."""
    if task.data.get("source") != "pypi":
        raise ValueError(f"task {task.id!r} is not a real-project task (data.source={task.data.get('source')!r})")
    spec = pypi.project(task.data["repo"])
    repo_name = f"pypi/{spec.name}"
    repo = Path(mirror_dir) / repo_name
    if not (repo / "HEAD").exists():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "--bare")
    base_files = loader.pypi_base_files(task, projects_root)
    _, tests = pypi.split_files(spec.key, projects_root)
    base = _commit(repo, base_files, f"{task.id}: base", None)
    with_tests = _commit(repo, {**base_files, **tests}, f"{task.id}: tests", base)
    instance_id = f"pypi__{spec.name}-{task.id.rsplit('-', 1)[-1]}"
    _git(repo, "tag", "-f", instance_id, base)
    _git(repo, "tag", "-f", f"{instance_id}-tests", with_tests)
    test_patch = _git(repo, "diff", "--no-color", "--no-renames", "--binary", base, with_tests)
    return {
        "instance_id": instance_id,
        "repo": repo_name,
        "base_commit": base,
        "patch": task.data["patch"],
        "test_patch": test_patch,
        "problem_statement": task.prompt,
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": spec.version,
        "environment_setup_commit": base,
        "FAIL_TO_PASS": json.dumps(task.data["FAIL_TO_PASS"]),  # SWE-bench stores both lists as JSON strings
        "PASS_TO_PASS": json.dumps(task.data["PASS_TO_PASS"]),
    }


def repo_config(record: dict[str, Any], python: str = sys.executable) -> dict[str, dict[str, str]]:
    """The ``repo_config`` entry SWEEnv needs for an exported record: the project's own pytest command."""
    name = record["repo"].split("/", 1)[1]
    key = f"{name}-{record['version']}"
    return {record["repo"]: {
        "test_command": pypi.test_command(key, python).replace("{tests}", pypi.project(key).tests_dir)}}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m clawgym.envs.swe.export TASK_ID MIRROR_DIR OUT.jsonl", file=sys.stderr)
        return 2
    record = export_swebench(loader.pypi_tasks().by_id(args[0]), args[1])
    with open(args[2], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    print(f"exported {record['instance_id']} ({record['repo']}@{record['base_commit'][:12]}) to {args[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
