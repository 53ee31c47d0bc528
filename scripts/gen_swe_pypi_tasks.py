#!/usr/bin/env python3
"""Generate SWE-v0 tasks from real PyPI projects (SWE-smith's idea): break them, keep what their tests catch.

For each pinned project (:mod:`clawgym.envs.swe.pypi`, unpacked by ``make swe-projects``) the project's
own pytest suite runs once on the original code (tests that fail there are ignored), then every
mutation site found by ``gen_swe_tasks.find_mutations`` is tried in an order fixed by ``--seed``; a
mutant becomes a task when at least one test that passed before now fails (and not too many).
FAIL_TO_PASS / PASS_TO_PASS come from those real runs; the issue text is written from the failing
tests (their names/docstrings, pytest's failure line and the failing test's code as a reproduction),
and the gold patch reverts the mutation. Tests run with the same pytest command the env uses.

    python scripts/gen_swe_pypi_tasks.py                       # write clawgym/envs/swe/data/pypi_tasks.jsonl
    python scripts/gen_swe_pypi_tasks.py --projects idna --per-project 3 --out /tmp/x.jsonl

The same seed, projects and interpreter give byte-identical output, and a run with a smaller
``--per-project`` yields a prefix of each project's tasks (so a quick run checks the committed file).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from clawgym.envs.swe import pypi  # noqa: E402
from clawgym.envs.swe.evaluation import PYTEST_LINE, PYTEST_STATUS, stable_message  # noqa: E402
from clawgym.envs.swe.patches import make_diff  # noqa: E402
from gen_swe_tasks import Mutation, find_mutations  # noqa: E402

PER_FUNCTION = 2  # at most this many tasks break the same function
TEST_EVERY = 4  # every n-th task of a project goes to the test split
DEFAULT_OUT = ROOT / "clawgym" / "envs" / "swe" / "data" / "pypi_tasks.jsonl"
DURATION = re.compile(r"\s+in [0-9.]+s\b.*$")
WORK_PATH = re.compile(re.escape(tempfile.gettempdir()) + r"/gen-[\w.-]+?-\w{8}/[\w.-]+/")  # the random work dir


def clean(message: str) -> str:
    """A failure line without the generator's temp-dir names, object addresses and durations."""
    return stable_message(DURATION.sub("", WORK_PATH.sub("", message)))


def run_pytest(work: Path, spec: pypi.PypiProject, python: str, timeout: float, files: list[str] | None = None,
               coverage: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """``({test id: status}, {test id: failure line})`` of one run of the given test files (default: all)."""
    command = pypi.test_command(spec.key, python).replace("{tests}", " ".join(files or [spec.tests_dir]))
    if coverage:  # record, per source line, which test functions ran it (read back by covering_tests)
        (work.parent / "coveragerc").write_text("[run]\ndynamic_context = test_function\n")
        command = command.replace(" -m pytest ", f" -m coverage run --rcfile={work.parent / 'coveragerc'} "
                                                 f"--data-file={work.parent / 'coverage.db'} -m pytest ")
    try:
        result = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, text=True, timeout=timeout,
                                env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
                                     "PYTHONDONTWRITEBYTECODE": "1",
                                     "COLUMNS": "240"})  # pytest cuts summary lines at the width
    except subprocess.TimeoutExpired:
        return {}, {}
    statuses, messages = {}, {}
    for line in result.stdout.splitlines():
        match = PYTEST_LINE.match(line.strip())
        if match and "::" in match.group(2):
            test_id = match.group(2)
            statuses[test_id] = PYTEST_STATUS[match.group(1)]
            rest = line.strip()[match.end():]
            if rest.startswith(" - "):
                messages[test_id] = clean(rest[3:])
    return statuses, messages


def test_file(work: Path, context: str) -> str | None:
    """The test file of a coverage context such as ``tests.test_x.TestClass.test_m``: its longest module prefix."""
    parts = context.split(".")
    for end in range(len(parts) - 1, 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (work / candidate).is_file():
            return candidate
    return None


def covering_tests(work: Path, python: str) -> dict[tuple[str, int], list[str]]:
    """``{(source file, line): [test files whose tests ran that line]}`` from the baseline's coverage data."""
    out = work.parent / "coverage.json"
    subprocess.run([python, "-m", "coverage", "json", "-q", "--show-contexts",
                    f"--data-file={work.parent / 'coverage.db'}",
                    "-o", str(out)], cwd=work, check=True, capture_output=True)
    report = json.loads(out.read_text())
    covered: dict[tuple[str, int], list[str]] = {}
    for path, data in report["files"].items():
        relative = Path(path).resolve().relative_to(work.resolve()).as_posix() if Path(path).is_absolute() else path
        for line, contexts in data.get("contexts", {}).items():
            files = sorted({test_file(work, context) for context in contexts if context} - {None})
            if files:
                covered[(relative, int(line))] = files
    return covered


def test_source(work: Path, test_id: str) -> tuple[str, str | None]:
    """(the behaviour a test checks, its code when short enough to quote as a reproduction)."""
    parts = test_id.split("::")
    name = parts[-1].split("[")[0]
    try:
        module = ast.parse((work / parts[0]).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return name, None
    scope: list[ast.stmt] = module.body
    for class_name in parts[1:-1]:
        classes = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == class_name]
        scope = classes[0].body if classes else []
    for node in scope:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            behaviour = ast.get_docstring(node) or name.removeprefix("test_").replace("_", " ")
            code = ast.get_source_segment((work / parts[0]).read_text(encoding="utf-8"), node) or ""
            short = len(code.splitlines()) <= 25
            return behaviour.strip().splitlines()[0], textwrap.dedent(code) if short else None
    return name.removeprefix("test_").replace("_", " "), None


def write_issue(rng: random.Random, name: str, failures: list[tuple[str, str, str | None, str]]) -> str:
    """An issue from ``(test id, behaviour, code, failure line)`` of the failing tests, lead failure first."""
    test_id, behaviour, code, message = failures[0]
    titles = [f"{name}: {behaviour.rstrip('.')} is broken", f"Regression in {name}: {behaviour.rstrip('.')}",
              f"{name} gives wrong results ({behaviour.rstrip('.')})"]
    lines = [titles[rng.randrange(len(titles))], "", f"After updating, `{test_id.split('::')[-1]}` fails:", ""]
    if code:
        lines += ["```python", code.rstrip(), "```", ""]
    lines += ["It fails with:", "", "```", message or "(the check fails without a message)", "```"]
    if len(failures) > 1:
        lines += ["", f"{len(failures) - 1} other test(s) fail too, possibly for the same reason:"]
        lines += [f"- `{f[0]}`: {f[3][:160] or 'fails'}" for f in failures[1:7]]
        if len(failures) > 7:
            lines += [f"- ... and {len(failures) - 7} more."]
    lines += ["", f"Please fix {name} so that these behave as expected again."]
    return "\n".join(lines)


def generate_project(spec: pypi.PypiProject, per_project: int, rng: random.Random, python: str, timeout: float,
                     max_fail_fraction: float, log, emit=lambda record: None) -> list[dict]:
    source = pypi.project_root(spec.key)
    with tempfile.TemporaryDirectory(prefix=f"gen-{spec.name}-") as tmp:
        work = Path(tmp) / spec.key
        shutil.copytree(source, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".clawgym-verified"))
        started = time.monotonic()
        baseline, _ = run_pytest(work, spec, python, timeout)
        suite_s = time.monotonic() - started
        covered = None
        if spec.trace_tests:
            run_pytest(work, spec, python, timeout * 4, coverage=True)
            covered = covering_tests(work, python)
        passing = sorted(test for test, status in baseline.items() if status == "passed")
        if not passing:
            raise SystemExit(f"{spec.key}: no test passes on the original code; is pytest installed for {python}?")
        package = Path(spec.source_dir) / spec.package if spec.source_dir else Path(spec.package)
        files = sorted(p.relative_to(work).as_posix() for p in (work / package).rglob("*.py"))
        candidates: list[Mutation] = []
        for relative in files:
            if relative.removeprefix(spec.source_dir + "/") in spec.skip_files or relative in spec.skip_files:
                continue
            candidates += [m for m in find_mutations(relative, (work / relative).read_text(encoding="utf-8"))
                           if m.function != "<module>"]
        candidates.sort(key=lambda m: (m.file, m.line, m.col, m.operator, m.after))
        rng.shuffle(candidates)
        records: list[dict] = []
        used: dict[str, int] = {}
        tried = 0
        for mutation in candidates:
            if len(records) >= per_project:
                break
            key = f"{mutation.file}:{mutation.function}"
            reached_by = covered.get((mutation.file, mutation.line)) if covered is not None else [spec.tests_dir]
            if used.get(key, 0) >= PER_FUNCTION or not reached_by:
                continue  # no test runs this line: the mutant cannot fail anything
            tried += 1
            original = (work / mutation.file).read_text(encoding="utf-8")
            mutated = mutation.apply(original)
            (work / mutation.file).write_text(mutated, encoding="utf-8")
            try:
                # Only the test files that reach the line can change outcome; the rest keep their baseline status.
                statuses, messages = run_pytest(work, spec, python, timeout, reached_by)
                statuses = {**{t: s for t, s in baseline.items() if not t.startswith(tuple(reached_by))}, **statuses}
            finally:
                (work / mutation.file).write_text(original, encoding="utf-8")
            if not statuses:
                continue
            failing = [t for t in passing if statuses.get(t) != "passed"]
            if not failing or len(failing) > max(3, max_fail_fraction * len(passing)):
                continue
            used[key] = used.get(key, 0) + 1
            failures = sorted(((t, *test_source(work, t), messages.get(t, "")) for t in failing),
                              key=lambda f: (f[2] is None, f[0]))
            records.append({
                "id": f"pypi-{spec.name}-{len(records) + 1:03d}",
                "prompt": write_issue(rng, spec.name, failures),
                "split": "train",
                "data": {
                    "repo": spec.key, "source": "pypi",
                    "bug_patch": make_diff(mutation.file, original, mutated),
                    "patch": make_diff(mutation.file, mutated, original),
                    "FAIL_TO_PASS": failing,
                    "PASS_TO_PASS": [t for t in passing if t not in failing],
                    "test_files": [spec.tests_dir],
                    "mutation": {"operator": mutation.operator, "file": mutation.file, "line": mutation.line,
                                 "function": mutation.function, "before": mutation.before, "after": mutation.after},
                },
            })
            record = records[-1]
            record["data"]["instance_id"] = record["id"]
            record["split"] = "test" if len(records) % TEST_EVERY == 0 else "train"
            emit(record)
            log(f"  {spec.name} #{len(records)}: {mutation.operator} {mutation.file}:{mutation.line} "
                f"({len(failing)} failing)")
        log(f"{spec.key}: {len(records)} tasks from {tried} mutants ({len(candidates)} sites); "
            f"{len(passing)} passing tests, suite {suite_s:.1f} s")
        return records


def generate(seed: int, per_project: int, names: list[str] | None, python: str, timeout: float,
             max_fail_fraction: float, log=print, emit=lambda record: None) -> list[dict]:
    """Every project's tasks in order; ``emit`` sees each task as soon as it exists (a stopped run keeps a prefix)."""
    records = []
    for spec in pypi.PROJECTS:
        if names and spec.name not in names:
            continue
        rng = random.Random(f"{seed}:{spec.key}")  # adding a project never reshuffles the others
        records += generate_project(spec, per_project, rng, python, timeout, max_fail_fraction, log, emit)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--per-project", type=int, default=45)
    parser.add_argument("--projects", nargs="*", help="project names (default: all pinned projects)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with pytest that runs the tests")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per suite run")
    parser.add_argument("--max-fail-fraction", type=float, default=0.2)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as out:
        def emit(record: dict) -> None:
            out.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
            out.flush()

        records = generate(args.seed, args.per_project, args.projects, args.python,
                           args.timeout, args.max_fail_fraction, log=lambda *a: print(*a, flush=True), emit=emit)
    print(f"wrote {len(records)} tasks to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
