"""Load Harbor task directories (terminal-bench 2's layout) as Terminal-v0 tasks.

A Harbor task directory holds ``task.toml`` (``[agent] timeout_sec``, ``[verifier] timeout_sec``,
``[metadata]``), ``instruction.md``, ``environment/Dockerfile`` (its build context is
``environment/``), ``solution/solve.sh`` (the oracle) and ``tests/test.sh``, which writes the reward
to ``/logs/verifier/reward.txt`` (or ``reward.json``).

How it maps onto Terminal-v0: the image is built from ``environment/Dockerfile`` as for terminal-bench
(:mod:`clawgym.envs.terminal.image`); after the agent is done, ``tests/`` is copied into a fresh
``/tests`` (anything the agent left there is removed first), the reward files are removed (so the
agent cannot write its own), ``bash /tests/test.sh`` runs from the work dir, and the reward file
decides: a check named ``reward`` passes when it holds a value ≥ 1. pytest ``-rA`` lines printed by
test.sh are reported per test in ``info["tests"]`` as well. Network: ``[environment] allow_internet`` when
task.toml sets it, else as for terminal-bench (only when test.sh really installs or downloads).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from clawgym.core.tasks import Task, TaskSet
from clawgym.envs.terminal.records import validate
from clawgym.envs.terminal.scoring import write_files_command
from clawgym.envs.terminal.tbench import dockerfile_fields, network_access

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

MAX_FILE_BYTES = 1 << 20

READ_REWARD = r"""
reward=""
if [ -f /logs/verifier/reward.txt ]; then reward=$(tr -d ' \n\r\t' < /logs/verifier/reward.txt)
elif [ -f /logs/verifier/reward.json ]; then
  reward=$(grep -o '"reward"[[:space:]]*:[[:space:]]*[-0-9.eE+]*' /logs/verifier/reward.json | sed 's/.*://' | tr -d ' ')
fi
if [ -z "$reward" ]; then echo "FAIL reward: test.sh wrote no reward file (exit $status)"
elif awk -v r="$reward" 'BEGIN { exit !(r + 0 >= 1) }'; then echo "PASS reward"
else echo "FAIL reward: reward=$reward"; fi
"""  # noqa: E501  (a shell script: kept as written)


def is_harbor_dir(path: Path) -> bool:
    """A task dir (has task.toml) or a directory whose subdirectories are task dirs."""
    if not path.is_dir():
        return False
    return (path / "task.toml").is_file() or any((child / "task.toml").is_file()
                                                 for child in path.iterdir() if child.is_dir())


def load_harbor(path: str | Path, split: str = "test") -> TaskSet:
    """Every Harbor task directory under ``path`` (or ``path`` itself) as a TaskSet."""
    root = Path(path)
    task_dirs = ([root]
                 if (root / "task.toml").is_file()
                 else sorted(c for c in root.iterdir() if (c / "task.toml").is_file()))
    if not task_dirs:
        raise FileNotFoundError(f"no Harbor task (a directory with task.toml) under {root}")
    return TaskSet([load_harbor_task(d, split=split) for d in task_dirs], name=root.name)


def load_harbor_task(task_dir: Path, split: str = "test") -> Task:
    try:
        spec = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{task_dir}/task.toml is not valid TOML: {exc}") from exc
    instruction_file = task_dir / "instruction.md"
    if not instruction_file.is_file() or not instruction_file.read_text(encoding="utf-8").strip():
        raise ValueError(f"Harbor task {task_dir.name!r} has no instruction.md")
    tests_dir = task_dir / "tests"
    if not (tests_dir / "test.sh").is_file():
        raise ValueError(f"Harbor task {task_dir.name!r} has no tests/test.sh")
    dockerfile = task_dir / "environment" / "Dockerfile"
    if not dockerfile.is_file():
        raise ValueError(f"Harbor task {task_dir.name!r} has no environment/Dockerfile")
    solve = task_dir / "solution" / "solve.sh"
    metadata = spec.get("metadata") or {}
    data: dict[str, Any] = {
        "category": str(metadata.get("category") or "harbor"),
        "setup": "",
        "solution": solve.read_text(encoding="utf-8") if solve.is_file() else "",
        "check_timeout_s": float((spec.get("verifier") or {}).get("timeout_sec") or 120),
        "source": str(task_dir),
        "layout": "harbor",
    }
    agent_timeout = (spec.get("agent") or {}).get("timeout_sec")
    if agent_timeout:
        data["time_limit_s"] = float(agent_timeout)
    data.update(dockerfile_fields(dockerfile, dockerfile.parent))
    tests = _files(tests_dir)
    data["check"] = _check_script(tests, data["env"].get("PATH"))
    if network_access((spec.get("environment") or {}).get("allow_internet"), tests["test.sh"], task_dir / "task.toml"):
        data["network"] = True
    if solve.is_file() and len(_files(solve.parent)) > 1:  # solve.sh with helper files: run it from /solution
        data["solution"] = (f"mkdir -p /solution && ( cd /solution && {write_files_command(_files(solve.parent))} ) "
                            "&& bash /solution/solve.sh")
    return validate(Task(id=task_dir.name, prompt=instruction_file.read_text(encoding="utf-8").strip(),
                         split=split, data=data))


def _files(directory: Path) -> dict[str, str]:
    files = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.stat().st_size <= MAX_FILE_BYTES:
            files[path.relative_to(directory).as_posix()] = path.read_text(encoding="utf-8")
    return files


def _check_script(test_files: dict[str, str], path: str | None) -> str:
    return "\n".join([
        f"export PATH={shlex.quote(path)}" if path else ":",
        "export TEST_DIR=/tests",
        '[ -f /.dockerenv ] && rm -rf /tests /logs/verifier && mkdir -p /tests /logs/verifier || '
        '{ echo "FAIL reward: not in a Docker container '
        '(Harbor tasks need the Docker sandbox)"; exit 98; }',
        f"( cd /tests && {write_files_command(test_files)} ) || exit 98",
        'bash /tests/test.sh',
        "status=$?",
        READ_REWARD.strip(),
        "exit 0",
    ])
