"""The AST mutation generator behind SWE-v0's bundled tasks: operators, minimal edits, determinism,
and that the bundled file is exactly what the generator produces (slow: it reruns every mutant)."""

import ast
import shutil
import subprocess
import sys

import pytest

from tests.scripts import ROOT, load_script

gen = load_script("scripts/gen_swe_tasks.py")

SOURCE = '''
def f(items, n, flag):
    if n < len(items) and flag:
        return items[1:n] + [min(n, 3)]
    if not items:
        return []
    total = 0
    for i in range(n):
        total += i - 1
    return max(total, divmod(n, 2)[0])
'''


def test_every_operator_applies_and_each_edit_is_one_small_change():
    mutations = gen.find_mutations("m.py", SOURCE)
    operators = {m.operator for m in mutations}
    assert operators >= {"flip_comparison", "swap_and_or", "remove_negation", "off_by_one", "wrong_constant",
                         "swap_min_max", "swap_arguments", "flip_arithmetic"}
    for mutation in mutations:
        mutated = mutation.apply(SOURCE)
        assert mutated != SOURCE
        ast.parse(mutated)  # still valid Python
        changed = [(a, b) for a, b in zip(SOURCE.splitlines(), mutated.splitlines()) if a != b]
        assert len(changed) == 1 and mutation.before in changed[0][0] and mutation.after in changed[0][1]
    texts = {(m.operator, m.before, m.after) for m in mutations}
    assert ("flip_comparison", "n < len(items)", "n <= len(items)") in texts
    assert ("off_by_one", "n", "n + 1") in texts  # the slice bound
    assert ("swap_arguments", "divmod(n, 2)", "divmod(2, n)") in texts


def test_precedence_changes_are_refused():
    # Turning `a * b + c` into `a * b - c` is fine; nothing may produce text that parses differently.
    for mutation in gen.find_mutations("m.py", "def g(a, b, c):\n    return a * (b + c) or not a and c\n"):
        expected_before = mutation.before
        assert expected_before in "return a * (b + c) or not a and c"
        ast.parse(mutation.apply("def g(a, b, c):\n    return a * (b + c) or not a and c\n"))


def test_gold_patch_reverts_the_bug():
    from clawgym.envs.swe.loader import apply_unified_diff, bundled_tasks, project_files

    for task in bundled_tasks():
        files = project_files(task.data["repo"])
        buggy = apply_unified_diff(files, task.data["bug_patch"])
        assert apply_unified_diff(buggy, task.data["patch"]) == files
        line = buggy[task.data["mutation"]["file"]].decode().splitlines()[task.data["mutation"]["line"] - 1]
        assert task.data["mutation"]["after"] in line


def test_generation_is_deterministic_and_grounded_in_test_runs(tmp_path):
    shutil.copytree(gen.PROJECTS_DIR / "structkit", tmp_path / "structkit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    quiet = lambda *args: None  # noqa: E731
    first = gen.generate(7, 2, gen.default_python(), 2.0, 0.3, 2, projects_dir=tmp_path, log=quiet)
    again = gen.generate(7, 2, gen.default_python(), 2.0, 0.3, 2, projects_dir=tmp_path, log=quiet)
    assert first == again and len(first) == 2
    other = gen.generate(8, 2, gen.default_python(), 2.0, 0.3, 2, projects_dir=tmp_path, log=quiet)
    assert [r["data"]["mutation"] for r in other] != [r["data"]["mutation"] for r in first]
    for record in first:
        data = record["data"]
        assert data["FAIL_TO_PASS"] and set(data["FAIL_TO_PASS"]).isdisjoint(data["PASS_TO_PASS"])
        assert record["prompt"].count("```") >= 2 and "Expected behaviour:" in record["prompt"]


def test_original_projects_must_pass_their_tests(tmp_path):
    project = tmp_path / "broken"
    shutil.copytree(gen.PROJECTS_DIR / "textfmt", project, ignore=shutil.ignore_patterns("__pycache__"))
    wrap = project / "textfmt" / "wrap.py"
    wrap.write_text(wrap.read_text().replace("base + (1", "base - (1"))
    with pytest.raises(SystemExit, match="must pass every test"):
        gen.generate(1, 1, gen.default_python(), 2.0, 0.3, 2, projects_dir=tmp_path, log=lambda *a: None)


@pytest.mark.slow
def test_bundled_tasks_match_a_fresh_generation():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_swe_tasks.py"), "--check"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
