"""Hidden-test evaluation: the agent's diff, applied to a fresh base tree, judged by tests it never saw.

Nothing from the agent's sandbox is trusted except the diff itself:

1. the diff (``git diff`` against the base commit) is read out of the agent's sandbox;
2. a **fresh** sandbox is prepared at the base state, so files the agent changed outside the
   repository, background processes, environment variables and shell state are all gone;
3. the parts of the diff that touch protected paths — the hidden test files, test-runner
   configuration (``conftest.py``, ``pytest.ini``, ``setup.cfg``, ``pyproject.toml``, ...),
   ``sitecustomize.py`` and byte code — are dropped, and the rest is applied with ``git apply``;
4. the hidden tests are written fresh (bundled tasks) or the ``test_patch`` is applied (SWE-bench),
   stale ``__pycache__`` is deleted, and the tests run;
5. the run's per-test statuses are compared with the expected FAIL_TO_PASS / PASS_TO_PASS ids: a
   test that did not run counts as failed, so deleting or skipping tests never helps.

Two runners: ``unittest`` (bundled tasks; clawgym's stdlib runner, see ``runner.py``, started with
``python3 -I``) and ``pytest`` (SWE-bench repositories; a configurable command whose ``-rA`` summary
lines are parsed).
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import shlex
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from clawgym.envs.swe.patches import TEST_INFRA_PATTERNS, filter_diff, is_protected, touched_paths

RUNNER_SOURCE = (Path(__file__).with_name("runner.py")).read_text(encoding="utf-8")
STAGING = "/tmp/.clawgym"  # staging directory inside the sandbox (its private /tmp), outside the repository
GIT = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.noprefix=false -c core.quotepath=false"
BASE_DATE = "2024-01-01T00:00:00+0000"  # fixed dates: the base commit's sha is the same every time
PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S+)")
PYTEST_STATUS = {"PASSED": "passed", "XFAIL": "passed", "FAILED": "failed", "XPASS": "failed",
                 "ERROR": "error", "SKIPPED": "skipped"}
MAX_DIFF_BYTES = 2_000_000
VOLATILE = ((re.compile(r"/tmp/tmp[A-Za-z0-9_]+"), "/tmp/tmpXXXXXXXX"), (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x..."))


def stable_message(text: str) -> str:
    """A failure message without temp-dir names and object addresses, so reports are deterministic."""
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


@dataclass
class TestPlan:
    """How to judge one task."""

    fail_to_pass: list[str]
    pass_to_pass: list[str]
    runner: str = "unittest"  # "unittest" (clawgym's stdlib runner) or "pytest"
    test_files: list[str] = field(default_factory=list)
    hidden_files: dict[str, str] = field(default_factory=dict)  # written fresh before the run
    hidden_dirs: list[str] = field(default_factory=list)  # agent changes anywhere under these are dropped
    test_patch: str = ""  # applied after the agent's diff (SWE-bench)
    test_command: str = "python3 -m pytest -rA -p no:cacheprovider --tb=short {tests}"
    python: str = "python3"
    per_test_timeout_s: float = 10.0
    timeout_s: float = 300.0

    def protected(self, path: str) -> bool:
        """May the agent's diff touch ``path``? Hidden tests, test infrastructure and byte code: no."""
        exact = set(self.hidden_files) | set(touched_paths(self.test_patch))
        if is_protected(path, TEST_INFRA_PATTERNS, exact):
            return True
        return any(part == d.rstrip("/") or part.startswith(d.rstrip("/") + "/") for d in self.hidden_dirs
                   for part in path.split("\0"))


@dataclass
class EvalResult:
    reward: float
    resolved: bool
    patch_applied: bool
    diff: str
    tests: dict[str, str]
    fail_to_pass: dict[str, str]
    pass_to_pass: dict[str, str]
    dropped_paths: list[str] = field(default_factory=list)
    messages: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def to_info(self) -> dict[str, Any]:
        """What goes into the env's ``info`` (deterministic: no timings)."""
        return {
            "resolved": self.resolved,
            "patch_applied": self.patch_applied,
            "diff": self.diff,
            "test_report": {
                "FAIL_TO_PASS": dict(self.fail_to_pass),
                "PASS_TO_PASS": dict(self.pass_to_pass),
                "tests": dict(self.tests),
                "failures": dict(self.messages),
            },
            "dropped_paths": list(self.dropped_paths),
            "eval_error": self.error,
        }


class EvaluationError(RuntimeError):
    pass


def tar_bytes(files: dict[str, bytes | str]) -> bytes:
    """A tar archive of ``{relative path: content}`` with fixed metadata (same bytes every time)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for path in sorted(files):
            content = files[path]
            data = content.encode("utf-8") if isinstance(content, str) else content
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 1704067200
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _check(result: Any, what: str) -> str:
    if result.exit_code != 0 or result.timed_out:
        reason = "timed out" if result.timed_out else f"exit code {result.exit_code}"
        raise EvaluationError(f"{what} failed ({reason}): {result.output.strip()[-2000:]}")
    return result.stdout


def prepare_repo(sandbox: Any, repo_dir: str, base_tar: bytes | None, setup_command: str | None, timeout: float) -> str:
    """Put the base tree in ``repo_dir`` as a one-commit git repository; return the base commit sha.

    The set-up command (``pip install -e .`` and the like) runs before the base commit, so what it
    generates is part of the base and never shows up in the agent's diff. ``base_tar=None`` means the
    image already holds the repository at its base state (Docker images of SWE-bench instances): HEAD
    is the base, and files the set-up command leaves behind are excluded from the diff.
    """
    quoted = shlex.quote(repo_dir)
    _check(sandbox.run(f"mkdir -p {STAGING} {quoted}", timeout=timeout), "creating the staging directory")
    if base_tar is not None:
        staging = f"{STAGING}/base.tar"
        sandbox.write_file(staging, base_tar)
        _check(sandbox.run(f"tar -xf {staging} -C {quoted} && rm -f {staging}", timeout=timeout),
               "unpacking the base tree")
    if setup_command:
        _check(sandbox.run(f"cd {quoted} && {setup_command}", timeout=timeout), "the environment set-up command")
    if base_tar is not None:
        _check(sandbox.run(
            f"cd {quoted} && {GIT} -c init.defaultBranch=main init -q && {GIT} add -A "
            f"&& GIT_AUTHOR_DATE={BASE_DATE} GIT_COMMITTER_DATE={BASE_DATE} "
            f"{GIT} -c user.name=clawgym -c user.email=clawgym@localhost commit -q --no-verify -m base",
            timeout=timeout), "creating the base commit")
    elif setup_command:
        sandbox.run(f"cd {quoted} && {GIT} ls-files --others --exclude-standard >> .git/info/exclude", timeout=timeout)
    return _check(sandbox.run(f"cd {quoted} && {GIT} rev-parse HEAD", timeout=timeout),
                  "reading the base commit").strip()


def extract_diff(sandbox: Any, repo_dir: str, base_commit: str, timeout: float = 60.0) -> str:
    """The agent's changes as a binary-safe ``git diff`` against the base commit (new files included)."""
    out = f"{STAGING}/agent.diff"
    _check(sandbox.run(
        f"mkdir -p {STAGING} && cd {shlex.quote(repo_dir)} && {GIT} add -A "
        f"&& {GIT} diff --cached --binary --no-ext-diff --no-textconv --no-color {shlex.quote(base_commit)} > {out}",
        timeout=timeout), "computing the diff")
    data = sandbox.read_file(out)
    if len(data) > MAX_DIFF_BYTES:
        raise EvaluationError(f"the diff is {len(data)} bytes, over the {MAX_DIFF_BYTES}-byte limit")
    return data.decode("utf-8", errors="replace")


def parse_pytest_output(output: str) -> dict[str, str]:
    """Per-test statuses from pytest's ``-rA`` short summary lines."""
    statuses: dict[str, str] = {}
    for line in output.splitlines():
        match = PYTEST_LINE.match(line.strip())
        if match and "::" in match.group(2):
            statuses[match.group(2)] = PYTEST_STATUS[match.group(1)]
    return statuses


def run_hidden_tests(sandbox: Any, repo_dir: str, plan: TestPlan) -> tuple[dict[str, str], dict[str, str]]:
    """Write the hidden tests, run them, return ``(statuses, failure messages)``."""
    quoted = shlex.quote(repo_dir)
    for hidden_dir in plan.hidden_dirs:
        _check(sandbox.run(f"rm -rf {shlex.quote(posixpath.join(repo_dir, hidden_dir))}", timeout=60),
               "clearing hidden test paths")
    for path, content in plan.hidden_files.items():
        sandbox.write_file(posixpath.join(repo_dir, path), content)
    if plan.test_patch:
        sandbox.write_file(f"{STAGING}/test.patch", plan.test_patch)
        _check(sandbox.run(f"cd {quoted} && {GIT} apply --whitespace=nowarn {STAGING}/test.patch", timeout=60),
               "applying the test patch")
    # Byte code could stand in for the source (an unchecked-hash .pyc is never revalidated): remove it all.
    _check(sandbox.run(f"find {quoted} -name __pycache__ -prune -exec rm -rf {{}} + ; "
                       f"find {quoted} -name '*.py[co]' -delete",
                       timeout=60), "removing byte code")
    if plan.runner == "unittest":
        sandbox.write_file(f"{STAGING}/runner.py", RUNNER_SOURCE)
        report = f"{STAGING}/report.json"
        files = " ".join(shlex.quote(f) for f in plan.test_files)
        result = sandbox.run(
            f"rm -f {report}; cd {quoted} && env -i PATH=/usr/bin:/bin:/usr/local/bin HOME=/tmp LANG=C.UTF-8 "
            f"{plan.python} -I -B {STAGING}/runner.py --root {quoted} "
            f"--report {report} --timeout {plan.per_test_timeout_s} {files}",
            timeout=plan.timeout_s)
        try:
            payload = json.loads(sandbox.read_file(report).decode("utf-8"))
        except Exception:
            reason = "timed out" if result.timed_out else f"exit code {result.exit_code}"
            raise EvaluationError(f"the test run produced no report ({reason}): "
                                  f"{result.output.strip()[-1500:]}") from None
        if payload.get("tampered"):
            raise EvaluationError(f"code under test modified the test machinery: {', '.join(payload['tampered'])}")
        tests = payload.get("tests", {})
        return ({k: v["status"] for k, v in tests.items()},
                {k: stable_message(v.get("message", "")) for k, v in tests.items() if v["status"] != "passed"})
    if plan.runner == "pytest":
        files = " ".join(shlex.quote(f) for f in plan.test_files)
        command = plan.test_command.replace("{tests}", files)
        result = sandbox.run(f"cd {quoted} && PYTHONDONTWRITEBYTECODE=1 {command}", timeout=plan.timeout_s)
        statuses = parse_pytest_output(result.stdout + "\n" + result.stderr)
        if not statuses:
            reason = "timed out" if result.timed_out else f"exit code {result.exit_code}"
            raise EvaluationError(f"the test run reported no tests ({reason}): {result.output.strip()[-1500:]}")
        return statuses, {}
    raise ValueError(f"unknown test runner {plan.runner!r}; use 'unittest' or 'pytest'")


def grade(statuses: dict[str, str], plan: TestPlan) -> tuple[bool, dict[str, str], dict[str, str]]:
    """Resolved when every FAIL_TO_PASS and PASS_TO_PASS test ran and passed; missing tests fail."""
    f2p = {test: statuses.get(test, "missing") for test in plan.fail_to_pass}
    p2p = {test: statuses.get(test, "missing") for test in plan.pass_to_pass}
    resolved = (bool(f2p or p2p) and all(s == "passed" for s in f2p.values())
                and all(s == "passed" for s in p2p.values()))
    return resolved, f2p, p2p


def evaluate(
    diff: str,
    plan: TestPlan,
    make_sandbox: Callable[[], Any],
    repo_dir: str,
    base_tar: bytes | None,
    setup_command: str | None = None,
    setup_timeout_s: float = 600.0,
) -> EvalResult:
    """Apply ``diff`` to a fresh base tree in a new sandbox and run the hidden tests there."""
    kept, dropped = filter_diff(diff, plan.protected)
    empty_f2p = {test: "not run" for test in plan.fail_to_pass}
    empty_p2p = {test: "not run" for test in plan.pass_to_pass}
    sandbox = make_sandbox()
    try:
        try:
            prepare_repo(sandbox, repo_dir, base_tar, setup_command, setup_timeout_s)
        except EvaluationError as exc:
            return EvalResult(0.0, False, False, diff, {}, empty_f2p, empty_p2p, dropped,
                              error=f"evaluation set-up: {exc}")
        if kept.strip():
            sandbox.write_file(f"{STAGING}/agent.diff", kept)
            applied = sandbox.run(f"cd {shlex.quote(repo_dir)} && {GIT} apply --whitespace=nowarn "
                                  f"{STAGING}/agent.diff", timeout=120)
            if applied.exit_code != 0:
                return EvalResult(0.0, False, False, diff, {}, empty_f2p, empty_p2p, dropped,
                                  error=f"the diff does not apply: {applied.output.strip()[-1000:]}")
        try:
            statuses, messages = run_hidden_tests(sandbox, repo_dir, plan)
        except EvaluationError as exc:
            return EvalResult(0.0, False, True, diff, {}, empty_f2p, empty_p2p, dropped, error=str(exc))
        resolved, f2p, p2p = grade(statuses, plan)
        return EvalResult(float(resolved), resolved, True, diff, statuses, f2p, p2p, dropped, messages)
    finally:
        sandbox.close()
