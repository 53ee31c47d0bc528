#!/usr/bin/env python3
"""Generate SWE-v0's bundled tasks: seed one bug per task into the bundled mini-projects.

For each project under ``clawgym/envs/swe/data/projects`` the script lists every place a mutation
operator applies (flip a comparison, off-by-one in a slice/index/range, swap ``and``/``or``, change a
constant, remove a negation, swap two arguments, flip ``+``/``-``, swap ``min``/``max``), visits them in
an order fixed by ``--seed``, and keeps a mutant when running the project's tests on it makes at least
one test fail and not too many. FAIL_TO_PASS and PASS_TO_PASS come from actually running the tests
on the original and the mutated code with the same stdlib runner the environment uses. The issue
text describes the symptom (the behaviour a failing test checks, what happens instead), never the fix.
The gold patch is the unified diff that reverts the mutation.

    python scripts/gen_swe_tasks.py                  # rewrite clawgym/envs/swe/data/tasks.jsonl
    python scripts/gen_swe_tasks.py --check          # regenerate and compare with the bundled file

The same seed, projects and interpreter always give byte-identical output.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clawgym.core.tasks import write_or_check  # noqa: E402
from clawgym.envs.swe.evaluation import stable_message  # noqa: E402
from clawgym.envs.swe.patches import make_diff  # noqa: E402

SWE_DIR = ROOT / "clawgym" / "envs" / "swe"
PROJECTS_DIR = SWE_DIR / "data" / "projects"
RUNNER = SWE_DIR / "runner.py"
DEFAULT_OUT = SWE_DIR / "data" / "tasks.jsonl"

COMPARE_FLIPS = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
ARITH_FLIPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.FloorDiv: ast.Div, ast.Div: ast.FloorDiv}


# ------------------------------------------------------------------------------------------ mutations
@dataclass
class Mutation:
    operator: str
    file: str
    line: int  # 1-based
    col: int  # byte offsets into the line
    end_col: int
    before: str
    after: str
    function: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        raw = lines[self.line - 1].encode("utf-8")
        raw = raw[:self.col] + self.after.encode("utf-8") + raw[self.end_col:]
        lines[self.line - 1] = raw.decode("utf-8")
        return "".join(lines)


def _int_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _plus(node: ast.expr, amount: int) -> ast.expr:
    """``node`` moved by ``amount``: constants change value, other expressions get ``+ 1`` / ``- 1``."""
    if _int_constant(node):
        return ast.Constant(node.value + amount)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _int_constant(node.operand):
        value = -node.operand.value + amount
        return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.BinOp(copy.deepcopy(node), ast.Add() if amount > 0 else ast.Sub(), ast.Constant(abs(amount)))


def _boundary_nodes(tree: ast.AST) -> set[int]:
    """ids of expressions that are slice bounds, constant indices or range() bounds (off-by-one sites)."""
    sites: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Slice):
                sites.update(id(b) for b in (node.slice.lower, node.slice.upper) if b is not None)
            elif _int_constant(node.slice) or (isinstance(node.slice, ast.UnaryOp)
                                               and _int_constant(node.slice.operand)):
                sites.add(id(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            if 1 <= len(node.args) <= 2:
                sites.update(id(arg) for arg in node.args)
    return sites


def _variants(node: ast.AST, boundary: set[int]) -> list[tuple[str, ast.AST]]:
    """(operator, replacement node) pairs for one node."""
    out: list[tuple[str, ast.AST]] = []
    if id(node) in boundary:
        for amount in (1, -1):
            out.append(("off_by_one", _plus(node, amount)))
        return out
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            if type(op) in COMPARE_FLIPS:
                new = copy.deepcopy(node)
                new.ops[index] = COMPARE_FLIPS[type(op)]()
                out.append(("flip_comparison", new))
    elif isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("swap_and_or", new))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("remove_negation", copy.deepcopy(node.operand)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
        out.append(("remove_negation", copy.deepcopy(node.operand)))
    elif isinstance(node, ast.BinOp) and type(node.op) in ARITH_FLIPS:
        new = copy.deepcopy(node)
        new.op = ARITH_FLIPS[type(node.op)]()
        out.append(("flip_arithmetic", new))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(("wrong_constant", ast.Constant(not node.value)))
    elif _int_constant(node):
        out.append(("wrong_constant", ast.Constant(node.value + 1)))
        if node.value > 1:
            out.append(("wrong_constant", ast.Constant(node.value - 1)))
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            new = copy.deepcopy(node)
            new.func.id = "max" if node.func.id == "min" else "min"
            out.append(("swap_min_max", new))
        positional = node.args
        if len(positional) >= 2 and not any(isinstance(a, ast.Starred) for a in positional[:2]):
            if ast.dump(positional[0]) != ast.dump(positional[1]):
                new = copy.deepcopy(node)
                new.args[0], new.args[1] = new.args[1], new.args[0]
                out.append(("swap_arguments", new))
    return out


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    parents: dict[int, tuple[ast.AST, str, int | None]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                parents[id(value)] = (parent, field, None)
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        parents[id(item)] = (parent, field, index)
    return parents


def _function_names(tree: ast.AST) -> dict[int, str]:
    """Map every node id to the qualified name of its enclosing function or class."""
    names: dict[int, str] = {}

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope != "<module>" else child.name
            names[id(child)] = inner
            visit(child, inner)

    visit(tree, "<module>")
    return names


def _fstring_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # f-string positions are unreliable before Python 3.12
            skip.update(id(n) for n in ast.walk(node))
    return skip


def find_mutations(relative: str, source: str) -> list[Mutation]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    boundary = _boundary_nodes(tree)
    functions = _function_names(tree)
    skip = _fstring_nodes(tree)
    parents = _parents(tree)
    mutations: list[Mutation] = []
    for node in list(ast.walk(tree)):
        if id(node) in skip or not hasattr(node, "lineno") or node.lineno != getattr(node, "end_lineno", None):
            continue
        raw = lines[node.lineno - 1].encode("utf-8")
        segment = raw[node.col_offset:node.end_col_offset].decode("utf-8")
        if ast.unparse(node) != segment:
            continue  # only mutate expressions whose text unparse reproduces, so the diff is one small edit
        if functions.get(id(node), "<module>") == "<module>" and not isinstance(node, ast.Constant):
            continue
        for operator, replacement in _variants(node, boundary):
            after = ast.unparse(replacement)
            if after == segment:
                continue
            mutation = Mutation(operator, relative, node.lineno, node.col_offset, node.end_col_offset, segment, after,
                                functions.get(id(node), "<module>"))
            if _reparses_as(source, tree, parents, node, replacement, mutation):
                mutations.append(mutation)
    return mutations


def _reparses_as(source: str, tree: ast.AST, parents: dict, node: ast.AST, replacement: ast.AST,
                 mutation: Mutation) -> bool:
    """The edited text parses to exactly the intended tree (guards against precedence surprises)."""
    parent, field, position = parents[id(node)]
    if position is None:
        setattr(parent, field, replacement)
    else:
        getattr(parent, field)[position] = replacement
    try:
        expected = ast.dump(tree)
    finally:  # put the original node back: the tree is shared by every candidate
        if position is None:
            setattr(parent, field, node)
        else:
            getattr(parent, field)[position] = node
    try:
        actual = ast.parse(mutation.apply(source))
    except SyntaxError:
        return False
    return ast.dump(actual) == expected


# ------------------------------------------------------------------------------------------ test runs
def run_tests(python: str, root: Path, test_files: list[str], timeout: float) -> dict[str, dict]:
    report = root.parent / "report.json"
    report.unlink(missing_ok=True)
    command = [python, "-I", "-B", str(RUNNER), "--root", str(root), "--report", str(report), "--timeout",
               str(timeout), *test_files]
    try:
        subprocess.run(command, capture_output=True, timeout=timeout * 20 + 30, check=False)
    except subprocess.TimeoutExpired:
        return {}
    if not report.exists():
        return {}
    return json.loads(report.read_text())["tests"]


# ------------------------------------------------------------------------------------------ issues
ASSERT_TEMPLATES = {
    "assertEqual": "{0} == {1}", "assertNotEqual": "{0} != {1}", "assertTrue": "{0}", "assertFalse": "not {0}",
    "assertIn": "{0} in {1}", "assertNotIn": "{0} not in {1}", "assertIsNone": "{0} is None",
    "assertIsNotNone": "{0} is not None", "assertIsInstance": "isinstance({0}, {1})",
    "assertAlmostEqual": "round({0} - {1}, 7) == 0", "assertGreater": "{0} > {1}", "assertLess": "{0} < {1}",
}


class _PlainAsserts(ast.NodeTransformer):
    """Rewrite ``self.assertX(...)`` into plain ``assert`` statements and ``pytest.raises`` blocks."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "self" and call.func.attr in ASSERT_TEMPLATES):
            parts = [ast.unparse(arg) for arg in call.args]
            try:
                text = ASSERT_TEMPLATES[call.func.attr].format(*parts)
            except IndexError:
                return node
            return ast.parse(f"assert {text}").body[0]
        return self.generic_visit(node)

    def visit_With(self, node: ast.With) -> ast.AST:
        for item in node.items:
            call = item.context_expr
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "assertRaises"
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"):
                item.context_expr = ast.Call(ast.Attribute(ast.Name("pytest"), "raises"), call.args[:1], [])
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr == "exception" and isinstance(node.value, ast.Name) and node.value.id == "caught":
            return ast.Attribute(ast.Name("caught"), "value")
        return self.generic_visit(node)


def _test_method(test_source: str, class_name: str, method: str) -> tuple[ast.Module, ast.FunctionDef | None]:
    module = ast.parse(test_source)
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return module, item
    return module, None


def describe_test(test_source: str, test_id: str) -> tuple[str, str | None]:
    """(the behaviour the test checks, a standalone snippet reproducing it or None)."""
    _, class_name, method = test_id.split("::")
    module, function = _test_method(test_source, class_name, method)
    if function is None:
        return method.replace("_", " "), None
    behaviour = (ast.get_docstring(function) or method.replace("test_", "").replace("_", " ")).strip()
    body = [stmt for stmt in function.body if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))]
    rewritten = [_PlainAsserts().visit(copy.deepcopy(stmt)) for stmt in body]
    code = "\n".join(ast.unparse(ast.fix_missing_locations(stmt)) for stmt in rewritten)
    used = {node.id for stmt in rewritten for node in ast.walk(stmt) if isinstance(node, ast.Name)}
    if "self" in used:
        return behaviour, None
    preamble: list[str] = []
    if "pytest" in used:
        preamble.append("import pytest")
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [alias for alias in node.names if (alias.asname or alias.name).split(".")[0] in used]
            if names:
                trimmed = copy.deepcopy(node)
                trimmed.names = names
                preamble.append(ast.unparse(trimmed))
        elif isinstance(node, (ast.Assign, ast.FunctionDef)):
            targets = ([node.name]
                       if isinstance(node, ast.FunctionDef)
                       else [t.id for t in node.targets if isinstance(t, ast.Name)])
            if any(target in used for target in targets):
                preamble.append(ast.unparse(node))
    return behaviour, "\n".join(preamble + ([""] if preamble else []) + [code])


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."


def write_issue(rng: random.Random, project: str, failures: list[tuple[str, str, str | None, str]]) -> str:
    """Compose an issue from ``(test_id, behaviour, snippet, observed message)`` of the failing tests."""
    _, behaviour, snippet, message = failures[0]
    openers = [
        f"{project}: {_sentence(behaviour)[:-1].lower()} no longer holds",
        f"Bug in {project}: unexpected result",
        f"{project} misbehaves: {_sentence(behaviour)[:-1].lower()}",
    ]
    title = openers[rng.randrange(len(openers))]
    lines = [title, "", f"Expected behaviour: {_sentence(behaviour)}", ""]
    if snippet:
        lines += ["This snippet shows the problem:", "", "```python", snippet, "```", ""]
        lines += ["It fails with:" if rng.random() < 0.5 else "What happens instead:"]
    else:
        lines += ["What happens instead:"]
    lines += ["", "```", message or "(the check fails without a message)", "```"]
    others = [behaviour_ for _, behaviour_, _, _ in failures[1:]]
    if others:
        lines += ["", "Other things that look broken, possibly for the same reason:"]
        lines += [f"- {_sentence(text)}" for text in others[:6]]
        if len(others) > 6:
            lines += [f"- ... and {len(others) - 6} more."]
    lines += ["", f"Please fix {project} so that it behaves as described."]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ driver
@dataclass
class Project:
    name: str
    root: Path
    sources: list[str]
    tests: list[str]


def load_project(root: Path) -> Project:
    sources = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if p.relative_to(root).parts[0] != "tests")
    tests = sorted(str(p.relative_to(root)) for p in (root / "tests").glob("test_*.py"))
    if not sources or not tests:
        raise SystemExit(f"project {root} needs source files and tests/test_*.py")
    return Project(root.name, root, sources, tests)


def generate_project(project: Project, per_project: int, rng: random.Random, python: str, timeout: float,
                     max_fail_fraction: float, log) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix=f"gen-{project.name}-") as tmp:
        work = Path(tmp) / project.name
        shutil.copytree(project.root, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        baseline = run_tests(python, work, project.tests, timeout)
        broken = [test for test, result in baseline.items() if result["status"] != "passed"]
        if not baseline or broken:
            raise SystemExit(f"{project.name}: the original code must pass every test; "
                             f"failing: {broken or 'no report'}")
        all_ids = sorted(baseline)
        candidates = []
        for relative in project.sources:
            candidates += find_mutations(relative, (project.root / relative).read_text(encoding="utf-8"))
        candidates.sort(key=lambda m: (m.file, m.line, m.col, m.operator, m.after))
        rng.shuffle(candidates)
        by_operator: dict[str, list[Mutation]] = {}
        for mutation in candidates:
            by_operator.setdefault(mutation.operator, []).append(mutation)
        operators = sorted(by_operator)
        rng.shuffle(operators)
        records: list[dict] = []
        used_functions: set[str] = set()
        tried = 0
        while len(records) < per_project and any(by_operator.values()):
            for operator in operators:
                if len(records) >= per_project or not by_operator[operator]:
                    continue
                mutation = by_operator[operator].pop(0)
                key = f"{mutation.file}:{mutation.function}"
                if key in used_functions:
                    continue
                tried += 1
                original = (project.root / mutation.file).read_text(encoding="utf-8")
                mutated = mutation.apply(original)
                (work / mutation.file).write_text(mutated, encoding="utf-8")
                try:
                    results = run_tests(python, work, project.tests, timeout)
                finally:
                    (work / mutation.file).write_text(original, encoding="utf-8")
                if not results:
                    continue  # the run hung or crashed as a whole
                failing = [t for t in all_ids if results.get(t, {}).get("status") != "passed"]
                if not failing or len(failing) > max(3, max_fail_fraction * len(all_ids)):
                    continue
                used_functions.add(key)
                records.append(_record(project, mutation, original, mutated, failing, all_ids, results, rng))
                log(f"  {project.name} #{len(records)}: {mutation.operator} {mutation.file}:{mutation.line} "
                    f"{mutation.before!r} -> {mutation.after!r} ({len(failing)} failing)")
        log(f"{project.name}: {len(records)} tasks from {tried} mutants tried ({len(candidates)} candidates)")
        return records


def _record(project: Project, mutation: Mutation, original: str, mutated: str, failing: list[str], all_ids: list[str],
            results: dict, rng: random.Random) -> dict:
    failures = []
    for test_id in failing:
        test_source = (project.root / test_id.split("::")[0]).read_text(encoding="utf-8")
        behaviour, snippet = describe_test(test_source, test_id)
        message = stable_message(results.get(test_id, {}).get("message") or "the test file could not be run")
        failures.append((test_id, behaviour, snippet, message))
    # Lead with a failure that has a standalone snippet when there is one: the most useful report.
    failures.sort(key=lambda f: (f[2] is None, f[0]))
    return {
        "id": "",  # numbered by the caller
        "prompt": write_issue(rng, project.name, failures),
        "split": "train",
        "data": {
            "repo": project.name,
            "source": "bundled",
            "bug_patch": make_diff(mutation.file, original, mutated),
            "patch": make_diff(mutation.file, mutated, original),
            "FAIL_TO_PASS": failing,
            "PASS_TO_PASS": [t for t in all_ids if t not in failing],
            "test_files": project.tests,
            "mutation": {
                "operator": mutation.operator, "file": mutation.file, "line": mutation.line,
                "function": mutation.function, "before": mutation.before, "after": mutation.after,
            },
        },
    }


def generate(seed: int, per_project: int, python: str, timeout: float, max_fail_fraction: float, test_every: int,
             projects_dir: Path = PROJECTS_DIR, log=print) -> list[dict]:
    records = []
    for root in sorted(p for p in projects_dir.iterdir() if p.is_dir()):
        project = load_project(root)
        project_rng = random.Random(f"{seed}:{project.name}")  # adding a project never reshuffles the others
        project_records = generate_project(project, per_project, project_rng, python, timeout, max_fail_fraction, log)
        for number, record in enumerate(project_records, 1):
            record["id"] = f"swe-{project.name}-{number:03d}"
            record["data"]["instance_id"] = record["id"]
            record["split"] = "test" if number % test_every == 0 else "train"
        records += project_records
    return records


def default_python() -> str:
    """The interpreter the sandbox runs: the host's system Python (the sandbox's root is the host root)."""
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--per-project", type=int, default=7)
    parser.add_argument("--python", default=default_python(), help="interpreter that runs the tests")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per test")
    parser.add_argument("--max-fail-fraction", type=float, default=0.3,
                        help="drop mutants failing more tests than this")
    parser.add_argument("--test-every", type=int, default=4, help="every n-th task of a project goes to the test split")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args(argv)
    records = generate(args.seed, args.per_project, args.python, args.timeout, args.max_fail_fraction, args.test_every)
    text = "".join(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n" for record in records)
    return write_or_check(args.out, text, args.check, f"{len(records)} tasks")


if __name__ == "__main__":
    sys.exit(main())
