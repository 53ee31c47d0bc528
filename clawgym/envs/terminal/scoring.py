"""How a terminal task's setup and check scripts are run, and how a check's output becomes a reward.

A task is data (see :mod:`clawgym.envs.terminal.taskset`): static ``files``, a bash ``setup`` script
and a bash ``check`` script. This module turns them into single shell commands:

- :func:`setup_command` writes the files and runs ``setup`` in the work dir before the agent acts. The
  setup sees ``SEED`` (the episode seed, so content is randomised per episode) and ``PHASE=setup``;
  its stdout is captured by the env and never shown to the agent. A setup line ``HIDDEN KEY=VALUE``
  hands a value (e.g. the pid of a process it started) to the check as an environment variable.
- :func:`check_script` is the scoring program. It first rebuilds the pristine start state in a fresh
  temporary directory ``$ORIG`` (the same files, the same setup with the same ``SEED`` and
  ``PHASE=orig``), so a check compares the agent's work against the real, per-seed inputs even when
  the agent edited them, then runs ``check`` in the work dir with ``WORK``, ``ORIG``, ``SEED``,
  ``ANSWER`` (the agent's final answer) and the hidden values set. The check travels inside the
  command (base64), so it is never on disk while the agent acts.

Check output: each line ``PASS <name>`` or ``FAIL <name>[: reason]`` is one named check; pytest's
``-rA`` summary lines (``PASSED tests/x.py::test_y`` / ``FAILED ...`` / ``ERROR ...``) are read the
same way, so terminal-bench test suites report per-test results (the check gets a wide ``COLUMNS``,
so pytest keeps a failure's message instead of cutting the line at 80 columns). A check script that
prints no such line is one check named ``exit_status`` that passes on exit 0; one that printed lines
but exited non-zero (or timed out) adds a failed ``exit_status`` check, so a crashing check never
yields reward.
"""

from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

# Deterministic helpers for setup scripts. Bash's own $RANDOM is re-seeded in every subshell, so
# it cannot give per-seed content; this LCG is the same on every bash, host or container.
SETUP_PRELUDE = r"""
_S=$(( ${SEED:-1} % 2147483648 ))
rand() { _S=$(( (_S * 1103515245 + 12345) % 2147483648 )); R=$(( (_S >> 8) % $1 )); }
pick() { rand $#; local _i=$((R + 1)); P=${!_i}; }
WORDS=(apple birch cedar delta ember fjord garnet harbor iris juniper kestrel lagoon maple nectar
  onyx pebble quartz raven sierra tundra umber velvet willow xenon yarrow zephyr amber basil cobalt
  dune)
word() { rand ${#WORDS[@]}; W=${WORDS[$R]}; }
token() { local _t="" _k; for _k in 1 2 3 4 5 6 7 8; do rand 16; _t+=$(printf '%x' $R); done; T=$_t; }
"""

# Helpers for check scripts: one line per named check.
CHECK_PRELUDE = r"""
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1${2:+: $2}"; }
check() { local _n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then pass "$_n"; else fail "$_n"; fi; }
same() { if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected '${2:0:60}', got '${3:0:60}'"; fi; }
trim() { tr -d ' \t\r\n' < "$1" 2>/dev/null; }
"""

EXIT_MARK = "__CLAWGYM_CHECK_EXIT__"
CHECK_COLUMNS = 500  # the check's terminal width: a failure's message reaches info["tests"] whole (up to 200 chars)
MAX_ANSWER_CHARS = 16_000  # $ANSWER keeps the answer's tail: one environment string must stay well under 128 KiB
RESULT_LINE = re.compile(r"^(PASS|FAIL)\b[:\s]*(\S[^:]*?)?\s*(?::\s*(.*))?$")
PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR)\s+(\S+)(?:\s+-\s+(.*))?$")


def b64(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return base64.b64encode(data).decode("ascii")


def _decode(encoded: str) -> str:
    """A shell expression that expands to the decoded text (no file on disk, no quoting issues)."""
    return f"\"$(printf %s '{encoded}' | base64 -d)\""


def _script(text: str) -> str:
    """A bash script argument read through a pipe: no file on disk and no argv size limit."""
    return f"<(printf %s '{b64(text)}' | base64 -d)"


def write_files_command(files: dict[str, str]) -> str:
    """Shell that writes text files under the current dir with the ``printf`` builtin (no process per file)."""
    parts = []
    for path, content in sorted(files.items()):
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"task file paths must be relative to the work dir, got {path!r}")
        quoted = shlex.quote(path)
        if "/" in path:
            parts.append(f"mkdir -p \"$(dirname {quoted})\"")
        if "\0" in content:
            parts.append(f"printf %s '{b64(content)}' | base64 -d > {quoted}")
        else:
            parts.append(f"printf %s {shlex.quote(content)} > {quoted}")
    return " && ".join(parts) if parts else "true"


def setup_command(workdir: str, files: dict[str, str], setup: str, seed: int) -> str:
    """One command for the agent's fresh shell: write the files, run the setup in a subshell, leave no trace.

    The setup is ``eval``-ed inside a subshell of the persistent shell (one fork, no exec), so a reset
    costs little more than the sandbox start; nothing it defines or exports reaches the agent's shell.
    """
    script = SETUP_PRELUDE + (setup or "")
    return (
        f"( cd {shlex.quote(workdir)} && {write_files_command(files)} && "
        f"export SEED={int(seed)} PHASE=setup && eval {shlex.quote(script)} )"
    )


def check_script(
    workdir: str,
    files: dict[str, str],
    setup: str,
    check: str,
    seed: int,
    answer: str,
    hidden: dict[str, str],
    timeout_s: float,
) -> str:
    """The whole scoring program, fed to a fresh bash's stdin in the sandbox after the episode."""
    exports = [f"SEED={int(seed)}", f"WORK={shlex.quote(workdir)}", "PHASE=orig"]
    exports += [f"{key}={shlex.quote(value)}" for key, value in sorted(hidden.items())]
    setup_script = SETUP_PRELUDE + (setup or "")
    check_body = CHECK_PRELUDE + check
    lines = [
        "set +e",
        "export LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"export COLUMNS={CHECK_COLUMNS}",  # pytest cuts -rA lines at the terminal width (80 without one)
        f"export {' '.join(exports)}",
        f"export ANSWER={_decode(b64(answer[-MAX_ANSWER_CHARS:]))}",
        "export ORIG=$(mktemp -d)",
    ]
    if "ORIG" in check:  # rebuild the pristine start state only for checks that read it
        lines.append(f"( cd \"$ORIG\" && {write_files_command(files)} && bash {_script(setup_script)} ) "
                     ">/dev/null 2>&1 </dev/null")
    lines += [
        "export PHASE=check",
        "cd \"$WORK\" || exit 97",
        f"timeout -k 2 {max(1, int(timeout_s))} bash {_script(check_body)} 2>&1 </dev/null",
        f"echo \"{EXIT_MARK} $?\"",
        "rm -rf \"$ORIG\"",
    ]
    return "\n".join(lines)


@dataclass
class CheckReport:
    """The outcome of a check script: named results, the pass fraction, the exit status."""

    checks: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False

    @property
    def passed(self) -> int:
        return sum(1 for check in self.checks if check["passed"])

    @property
    def total(self) -> int:
        return len(self.checks)

    @property
    def pass_fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total

    def to_info(self) -> dict[str, Any]:
        return {
            "checks": [dict(check) for check in self.checks],
            "passed": self.passed,
            "total": self.total,
            "pass_fraction": self.pass_fraction,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
        }


def parse_check_output(output: str, exit_code: int | None = None, timed_out: bool = False) -> CheckReport:
    """Read PASS/FAIL (and pytest -rA) lines; the exit marker, if present, gives the check's status."""
    report = CheckReport(timed_out=timed_out)
    seen: dict[str, int] = {}
    for raw in output.splitlines():
        line = raw.strip()
        if line.startswith(EXIT_MARK):
            try:
                exit_code = int(line.split()[1])
            except (IndexError, ValueError):
                pass
            continue
        match = PYTEST_LINE.match(line)
        if match:
            name, passed, detail = match.group(2), match.group(1) == "PASSED", match.group(3) or ""
            name = re.sub(r"^(\.\./)+", "", name)  # tests run from the work dir name ../tests/x.py::t as tests/x.py::t
        else:
            match = RESULT_LINE.match(line)
            if not match:
                continue
            name, passed, detail = ((match.group(2) or "check").strip(), match.group(1) == "PASS",
                                    (match.group(3) or "").strip())
        if name in seen:  # a check reported twice keeps its worst result
            previous = report.checks[seen[name]]
            previous["passed"] = previous["passed"] and passed
            previous["detail"] = previous["detail"] or detail
            continue
        seen[name] = len(report.checks)
        report.checks.append({"name": name, "passed": passed, "detail": detail[:200]})
    if exit_code in (124, 137):
        timed_out = True
    report.exit_code = exit_code
    report.timed_out = timed_out
    if not report.checks:
        report.checks.append({"name": "exit_status", "passed": exit_code == 0 and not timed_out,
                              "detail": "" if exit_code == 0 else f"check exited with {exit_code}"})
    elif exit_code != 0 or timed_out:
        detail = "check timed out" if timed_out else f"check exited with {exit_code}"
        report.checks.append({"name": "exit_status", "passed": False, "detail": detail})
    return report


def parse_hidden(setup_output: str) -> dict[str, str]:
    """``HIDDEN KEY=VALUE`` lines of the setup's stdout, for the check's environment."""
    hidden = {}
    for line in setup_output.splitlines():
        if line.startswith("HIDDEN ") and "=" in line:
            key, _, value = line[len("HIDDEN "):].partition("=")
            key = key.strip()
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                hidden[key] = value.strip()
    return hidden
