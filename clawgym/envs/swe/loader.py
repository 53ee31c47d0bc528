"""Where SWE-v0 tasks come from: the bundled generated tasks, or SWE-bench-format instances.

A task's ``data`` says how to build its base tree and how to judge it:

- ``source="bundled"``: a project under ``data/projects`` with the task's ``bug_patch`` applied; the
  project's ``tests/`` directory is hidden and run with clawgym's stdlib runner.
- ``source="pypi"``: a real project's pinned sdist (:mod:`clawgym.envs.swe.pypi`, unpacked at make
  time) without its test directory, with ``bug_patch`` applied; the project's own tests run with pytest.
- ``source="swebench"``: a record with ``instance_id, repo, base_commit, patch, test_patch,
  FAIL_TO_PASS, PASS_TO_PASS, problem_statement`` (from a ``datasets`` dataset or JSONL). The base
  tree comes from a local mirror (``git archive <base_commit>`` of ``<mirror_dir>/<repo>``, so no
  later history reaches the agent) or, with ``sandbox="docker"``, from a per-instance image that
  already holds the checkout (``image_pattern``). ``test_patch`` is applied at evaluation and the
  files it touches are run with a configurable pytest command.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawgym.core.tasks import Task, TaskSet
from clawgym.envs.swe import pypi
from clawgym.envs.swe.evaluation import TestPlan
from clawgym.envs.swe.patches import touched_paths

DATA_DIR = Path(__file__).with_name("data")
PROJECTS_DIR = DATA_DIR / "projects"
BUNDLED_TASKS = DATA_DIR / "tasks.jsonl"
PYPI_TASKS = DATA_DIR / "pypi_tasks.jsonl"
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
SWEBENCH_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS",
                   "PASS_TO_PASS", "problem_statement")


@dataclass
class RepoConfig:
    """Per-repository settings for SWE-bench-format tasks (keyed by ``repo``, e.g. ``"psf/requests"``)."""

    setup_command: str | None = None  # run in the repository after the base tree is in place
    test_command: str = "python3 -m pytest -rA -p no:cacheprovider --tb=short {tests}"
    runner: str = "pytest"
    image: str | None = None  # overrides the env's image pattern for this repository
    extra: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ bundled
def bundled_tasks() -> TaskSet:
    """The generated tasks shipped with clawgym (``scripts/gen_swe_tasks.py``)."""
    return TaskSet.from_jsonl(BUNDLED_TASKS)


def project_files(project: str, projects_dir: Path = PROJECTS_DIR) -> dict[str, bytes]:
    root = projects_dir / project
    if not root.is_dir():
        raise FileNotFoundError(f"no bundled project {project!r} under {projects_dir}")
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and "__pycache__" not in relative.parts and path.suffix != ".pyc":
            files[relative.as_posix()] = path.read_bytes()
    return files


def apply_unified_diff(files: dict[str, bytes], diff: str) -> dict[str, bytes]:
    """Apply a text diff made by :func:`clawgym.envs.swe.patches.make_diff` (modified files only)."""
    out = dict(files)
    current: str | None = None
    lines: list[str] = []
    offset = 0
    diff_lines = diff.splitlines(keepends=True)
    index = 0
    while index < len(diff_lines):
        line = diff_lines[index]
        if line.startswith("+++ b/"):
            if current is not None:
                out[current] = "".join(lines).encode("utf-8")
            current = line[6:].rstrip("\n")
            if current not in out:
                raise ValueError(f"the patch modifies {current}, which is not in the tree")
            lines = out[current].decode("utf-8").splitlines(keepends=True)
            offset = 0
        elif line.startswith("@@") and current is not None:
            match = HUNK.match(line)
            if not match:
                raise ValueError(f"bad hunk header: {line!r}")
            start = int(match.group(1)) - 1 + offset
            old, new = [], []
            index += 1
            while index < len(diff_lines) and diff_lines[index][:1] in (" ", "-", "+", "\\"):
                body = diff_lines[index]
                if body.startswith("\\"):  # "\ No newline at end of file" applies to the line before
                    previous = diff_lines[index - 1][0]
                    if previous in " -":
                        old[-1] = old[-1].rstrip("\n")
                    if previous in " +":
                        new[-1] = new[-1].rstrip("\n")
                    index += 1
                    continue
                if body[0] in " -":
                    old.append(body[1:])
                if body[0] in " +":
                    new.append(body[1:])
                index += 1
            if lines[max(start, 0):max(start, 0) + len(old)] != old:
                raise ValueError(f"the patch does not apply to {current} at line {start + 1}")
            lines[max(start, 0):max(start, 0) + len(old)] = new
            offset += len(new) - len(old)
            continue
        index += 1
    if current is not None:
        out[current] = "".join(lines).encode("utf-8")
    return out


def bundled_base_files(task: Task, projects_dir: Path = PROJECTS_DIR) -> dict[str, bytes]:
    """The agent's starting tree: the project without its tests, with the bug applied."""
    files = project_files(task.data["repo"], projects_dir)
    visible = {path: content for path, content in files.items() if not path.startswith("tests/")}
    return apply_unified_diff(visible, task.data["bug_patch"])


def bundled_plan(task: Task, python: str, projects_dir: Path = PROJECTS_DIR) -> TestPlan:
    files = project_files(task.data["repo"], projects_dir)
    hidden = {path: content.decode("utf-8") for path, content in files.items() if path.startswith("tests/")}
    return TestPlan(
        fail_to_pass=list(task.data["FAIL_TO_PASS"]),
        pass_to_pass=list(task.data["PASS_TO_PASS"]),
        runner="unittest",
        test_files=list(task.data["test_files"]),
        hidden_files=hidden,
        hidden_dirs=["tests"],
        python=python,
    )


# ------------------------------------------------------------------------------------------ real projects
def pypi_tasks() -> TaskSet:
    """Tasks generated from real PyPI projects (``scripts/gen_swe_tasks.py --pypi``); load with ``tasks="pypi"``."""
    return TaskSet.from_jsonl(PYPI_TASKS)


def pypi_base_files(task: Task, root: Path | None = None) -> dict[str, bytes]:
    visible, _ = pypi.split_files(task.data["repo"], root)
    return apply_unified_diff(visible, task.data["bug_patch"])


def pypi_plan(task: Task, python: str, root: Path | None = None) -> TestPlan:
    spec = pypi.project(task.data["repo"])
    _, hidden = pypi.split_files(task.data["repo"], root)
    return TestPlan(
        fail_to_pass=list(task.data["FAIL_TO_PASS"]),
        pass_to_pass=list(task.data["PASS_TO_PASS"]),
        runner="pytest",
        test_files=list(task.data["test_files"]),
        hidden_files={path: content.decode("utf-8") for path, content in hidden.items()},
        hidden_dirs=[spec.tests_dir],
        test_command=pypi.test_command(spec.key, python),
        python=python,
    )


# ------------------------------------------------------------------------------------------ SWE-bench
def _id_list(value: Any) -> list[str]:
    """SWE-bench stores FAIL_TO_PASS / PASS_TO_PASS as JSON strings; accept lists too."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        parsed = json.loads(value)
        if not isinstance(parsed, list):
            raise ValueError(f"expected a JSON list of test ids, got {value[:80]!r}")
        return [str(v) for v in parsed]
    return [str(v) for v in value]


def swebench_task(record: dict[str, Any]) -> Task:
    missing = [name for name in SWEBENCH_FIELDS if name not in record]
    if missing:
        raise ValueError(f"SWE-bench record {record.get('instance_id', '?')!r} lacks {', '.join(missing)}")
    data = {name: record[name] for name in SWEBENCH_FIELDS if name != "problem_statement"}
    data["FAIL_TO_PASS"] = _id_list(record["FAIL_TO_PASS"])
    data["PASS_TO_PASS"] = _id_list(record["PASS_TO_PASS"])
    if not data["FAIL_TO_PASS"]:
        raise ValueError(f"SWE-bench record {record['instance_id']!r} has no FAIL_TO_PASS tests")
    data["source"] = "swebench"
    for optional in ("version", "environment_setup_commit", "hints_text"):
        if optional in record:
            data[optional] = record[optional]
    return Task(id=str(record["instance_id"]), prompt=str(record["problem_statement"]),
                split=str(record.get("split", "test")), data=data)


def load_swebench(source: Any, split: str | None = None) -> TaskSet:
    """SWE-bench-format tasks from a JSONL path, a list of records, a ``datasets`` Dataset, or a saved dataset dir."""
    if isinstance(source, (str, Path)) and Path(source).is_file():
        path = Path(source)
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        tasks = TaskSet.from_records(records, swebench_task, name=path.stem)
    elif isinstance(source, (str, Path)) and Path(source).is_dir():
        import datasets  # the `train` extra

        tasks = TaskSet.from_dataset(datasets.load_from_disk(str(source)), swebench_task, name=Path(source).name)
    elif isinstance(source, list) or hasattr(source, "column_names"):
        tasks = TaskSet.from_records(iter(source), swebench_task, name="swebench")
    else:
        raise TypeError(f"cannot load SWE-bench tasks from {type(source).__name__}: pass a JSONL "
                        "path, a list or a Dataset")
    return tasks.split(split) if split else tasks


def mirror_path(mirror_dir: str | Path, repo: str) -> Path:
    """``owner/name`` is looked up as ``<mirror_dir>/owner/name``, ``owner__name`` or ``name``."""
    root = Path(mirror_dir)
    owner, _, name = repo.partition("/")
    for candidate in (root / repo, root / f"{owner}__{name}", root / (name or owner)):
        if (candidate / ".git").exists() or (candidate / "HEAD").exists():
            return candidate
    raise FileNotFoundError(f"no git mirror of {repo!r} in {root} (tried {repo}, {owner}__{name}, {name or owner})")


def mirror_archive(mirror: str | Path | dict[str, str], repo: str, base_commit: str) -> bytes:
    """A tar of the repository at ``base_commit`` (tracked files only, no history).

    ``mirror`` is a directory of mirrors (see :func:`mirror_path`) or a ``{repo: path}`` mapping.
    """
    if isinstance(mirror, dict):
        if repo not in mirror:
            raise FileNotFoundError(f"the mirror mapping has no entry for {repo!r}")
        path = Path(mirror[repo])
    else:
        path = mirror_path(mirror, repo)
    result = subprocess.run(["git", "-C", str(path), "archive", "--format=tar", base_commit],
                            capture_output=True, check=False)
    if result.returncode != 0:
        raise ValueError(f"cannot check out {repo}@{base_commit} from {path}: "
                         f"{result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def docker_image_name(pattern: str, task: Task) -> str:
    """Fill ``{instance_id}``, ``{instance_id_docker}`` (SWE-bench's naming: lower case, ``__`` -> ``_1776_``)
    and ``{repo}``."""
    instance = str(task.data.get("instance_id", task.id))
    return pattern.format(
        instance_id=instance,
        instance_id_docker=instance.lower().replace("__", "_1776_"),
        repo=str(task.data.get("repo", "")).replace("/", "__").lower(),
    )


def swebench_plan(task: Task, config: RepoConfig, python: str) -> TestPlan:
    test_files = [path for path in touched_paths(task.data["test_patch"]) if "\0" not in path]
    return TestPlan(
        fail_to_pass=list(task.data["FAIL_TO_PASS"]),
        pass_to_pass=list(task.data["PASS_TO_PASS"]),
        runner=config.runner,
        test_files=sorted(set(test_files)),
        test_patch=task.data["test_patch"],
        test_command=config.test_command,
        python=python,
    )

