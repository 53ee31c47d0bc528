"""Load terminal-bench / SETA task directories as Terminal-v0 tasks.

A terminal-bench task directory holds ``task.yaml`` (``instruction``, or the older ``descriptions``
list; ``max_test_timeout_sec``), ``solution.sh`` or ``solution.yaml`` (a list of ``command`` steps),
an optional ``run-tests.sh``, a ``tests/`` directory (usually ``test_outputs.py`` for pytest), a
``Dockerfile`` and any files the environment needs. SETA tasks use the same layout.

How it maps onto Terminal-v0:

- with a ``Dockerfile``, the task's start state is what that Dockerfile builds: on the Docker
  sandbox the image is built from it (:mod:`clawgym.envs.terminal.image`), on bwrap its steps are
  replayed when the host already satisfies them; the work dir is its last ``WORKDIR``; instruction,
  ``max_agent_timeout_sec`` (the episode's time limit) and ``max_test_timeout_sec`` come from task.yaml;
- without one, the work dir is ``/app`` (pass ``workdir=`` to change it) and every text file of the
  task directory that is not task metadata is copied into it at setup;
- the check copies ``tests/`` and ``run-tests.sh`` into a fresh ``$TEST_DIR`` only at scoring time and
  runs ``bash $TEST_DIR/run-tests.sh`` (or ``python3 -m pytest $TEST_DIR -rA`` when there is none)
  from the work dir; pytest's ``-rA`` lines give per-test results, and the exit status decides;
- ``solution.sh`` is the oracle;
- the episode runs without network unless task.yaml says ``allow_internet: true`` or, with no such
  key, ``run-tests.sh`` really runs a package install or download (``uv add``, ``pip install``,
  ``curl ...``; words in its comments do not count); ``allow_internet: false`` always wins.

Usage: ``gym.make("clawgym/Terminal-v0", tasks="path/to/tasks")`` (a task dir or a dir of task
dirs), or ``load_terminal_bench(path)`` for a TaskSet.
"""

from __future__ import annotations

import logging
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from clawgym.core.tasks import Task, TaskSet
from clawgym.envs.terminal.records import validate
from clawgym.envs.terminal.scoring import write_files_command
from clawgym.sandbox.dockerfile import parse_file, static_facts

logger = logging.getLogger(__name__)

METADATA = {"task.yaml", "solution.sh", "solution.yaml", "run-tests.sh", "Dockerfile", "docker-compose.yaml",
            "docker-compose.yml", ".dockerignore"}
SKIP_DIRS = {"tests", ".git", "__pycache__"}
MAX_FILE_BYTES = 1 << 20


def is_terminal_bench_dir(path: Path) -> bool:
    """A task dir (has task.yaml) or a directory whose subdirectories are task dirs."""
    if not path.is_dir():
        return False
    return (path / "task.yaml").is_file() or any((child / "task.yaml").is_file()
                                                 for child in path.iterdir() if child.is_dir())


def load_terminal_bench(path: str | Path, workdir: str = "/app", split: str = "test") -> TaskSet:
    """Every task directory under ``path`` (or ``path`` itself) as a TaskSet."""
    root = Path(path)
    if (root / "task.yaml").is_file():
        task_dirs = [root]
    else:
        task_dirs = sorted(child for child in root.iterdir() if (child / "task.yaml").is_file())
    if not task_dirs:
        raise FileNotFoundError(f"no terminal-bench task (a directory with task.yaml) under {root}")
    return TaskSet([load_task_dir(d, workdir=workdir, split=split) for d in task_dirs], name=root.name)


def load_task_dir(task_dir: Path, workdir: str = "/app", split: str = "test") -> Task:
    spec = yaml.safe_load((task_dir / "task.yaml").read_text(encoding="utf-8")) or {}
    if not isinstance(spec, dict):
        raise ValueError(f"{task_dir}/task.yaml is not a mapping")
    instruction = _instruction(spec, task_dir)
    tests_dir = task_dir / "tests"
    test_files = _text_files(tests_dir, tests_dir) if tests_dir.is_dir() else {}
    run_tests = task_dir / "run-tests.sh"
    if run_tests.is_file():
        test_files["run-tests.sh"] = run_tests.read_text(encoding="utf-8")
    if not test_files:
        raise ValueError(f"terminal-bench task {task_dir.name!r} has no tests/ directory and no run-tests.sh")
    timeout = float(spec.get("max_test_timeout_sec") or 120)
    data: dict[str, Any] = {
        "category": str(spec.get("category") or "terminal-bench"),
        "files": _text_files(task_dir, task_dir, skip_top=METADATA),
        "setup": "",
        "solution": _solution(task_dir),
        "workdir": workdir,
        "check_timeout_s": timeout,
        "source": str(task_dir),
    }
    if spec.get("max_agent_timeout_sec"):
        data["time_limit_s"] = float(spec["max_agent_timeout_sec"])
    data.update(dockerfile_fields(task_dir / "Dockerfile", task_dir))
    data["check"] = _check_script(test_files, "run-tests.sh" in test_files, data.get("env", {}).get("PATH"))
    if network_access(spec.get("allow_internet"), test_files.get("run-tests.sh", ""), task_dir / "task.yaml"):
        data["network"] = True
    return validate(Task(id=task_dir.name, prompt=instruction, split=split, data=data))


FETCH = re.compile(r"\b(apt-get|apt|pip3?|uv|npm)\s+(-\S+\s+)*(install|add|sync|init)\b|\b(curl|wget)\s")


def network_access(declared: Any, test_runner: str, where: Path) -> bool:
    """Whether a task's episode gets the network: its own ``allow_internet`` when it declares one, else
    whether its test runner really installs or downloads at test time; no network otherwise.

    The whole episode shares one sandbox, so a task given the network for its tests has it while the
    agent acts too: only a declaration or a real command grants it, never a word in a comment.
    """
    if declared is not None:
        if not isinstance(declared, bool):
            raise ValueError(f"{where}: allow_internet must be true or false, got {declared!r}")
        return declared
    return fetches_packages(test_runner)


def fetches_packages(script: str) -> bool:
    """Whether a test runner installs packages at test time (terminal-bench's usual ``uv add pytest``)."""
    return bool(FETCH.search(strip_comments(script)))


def strip_comments(script: str) -> str:
    """A bash script without its comments: a ``#`` that starts a word outside quotes, to the line's end."""
    kept: list[str] = []
    quote = ""
    i = 0
    while i < len(script):
        char = script[i]
        if char == "\\" and quote != "'":  # an escaped character, quoted or not, is kept as it is
            kept.append(script[i:i + 2])
            i += 2
            continue
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or script[i - 1] in " \t\n;&|()"):
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
            continue
        kept.append(char)
        i += 1
    return "".join(kept)


def dockerfile_fields(dockerfile: Path, context: Path) -> dict[str, Any]:
    """The task-record fields of a Dockerfile: where it is, its work dir and ENV; no files to copy."""
    if not dockerfile.is_file():
        return {}
    facts = static_facts(parse_file(dockerfile))
    return {"dockerfile": str(dockerfile.resolve()), "context": str(context.resolve()), "files": {},
            "workdir": facts.workdir if facts.workdir != "/" else "/app", "env": facts.env}


def _instruction(spec: dict[str, Any], task_dir: Path) -> str:
    if isinstance(spec.get("instruction"), str):
        return spec["instruction"].strip()
    for entry in spec.get("descriptions") or []:  # the older terminal-bench layout
        if isinstance(entry, dict) and entry.get("key", "base") == "base" and entry.get("description"):
            return str(entry["description"]).strip()
    raise ValueError(f"{task_dir}/task.yaml has no 'instruction'")


def _solution(task_dir: Path) -> str:
    if (task_dir / "solution.sh").is_file():
        return (task_dir / "solution.sh").read_text(encoding="utf-8")
    if (task_dir / "solution.yaml").is_file():
        steps = yaml.safe_load((task_dir / "solution.yaml").read_text(encoding="utf-8")) or []
        return "\n".join(str(step["command"]) for step in steps if isinstance(step, dict) and "command" in step)
    return ""


def _text_files(directory: Path, root: Path, skip_top: set[str] = frozenset()) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(root)
        if (not path.is_file() or relative.parts[0] in SKIP_DIRS
            or (len(relative.parts) == 1 and relative.name in skip_top)):
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            logger.warning("skipping %s: larger than %d bytes", path, MAX_FILE_BYTES)
            continue
        try:
            files[relative.as_posix()] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            logger.warning("skipping %s: not UTF-8 text", path)
    return files


def _check_script(test_files: dict[str, str], has_runner: bool, path: str | None = None) -> str:
    """Copy the tests in only now, run them from the work dir; the task image's PATH is kept.

    ``TEST_DIR`` is a fresh ``/tests`` as in terminal-bench (anything the agent left there is removed
    first), or a temporary directory where ``/`` is read-only (bwrap).
    """
    run = 'bash "$TEST_DIR/run-tests.sh"' if has_runner else 'python3 -m pytest "$TEST_DIR" -rA -p no:cacheprovider'
    return "\n".join([
        f"export PATH={shlex.quote(path)}" if path else ":",
        'if [ -f /.dockerenv ] && rm -rf /tests && mkdir /tests; then export TEST_DIR=/tests; '
        'else export TEST_DIR=$(mktemp -d); fi',
        f'( cd "$TEST_DIR" && {write_files_command(test_files)} ) || exit 98',
        run,
        "status=$?",
        'rm -rf "$TEST_DIR"',
        "exit $status",
    ])
