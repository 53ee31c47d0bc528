"""SWE-bench-format tasks from a local git mirror the test builds: loading (JSONL and `datasets`),
checkout at base_commit without later history, pytest-run hidden tests from test_patch, and poisoning."""

import json
import subprocess
import sys

import pytest

from clawgym.core.tasks import Task
from clawgym.envs.swe.env import SWEEnv
from clawgym.envs.swe.loader import docker_image_name, load_swebench, mirror_archive, swebench_task
from clawgym.envs.swe.patches import filter_diff, make_diff, split_diff

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BUGGY.replace("a - b", "a + b")
OLD_TESTS = "from calc import mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n"
NEW_TESTS = OLD_TESTS.replace("from calc import mul",
                              "from calc import add, mul") + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """owner/calc: commit 1 has the bug, commit 2 fixes it and adds a test (the 'future' the agent must not see)."""
    root = tmp_path_factory.mktemp("mirror")
    repo = root / "owner" / "calc"
    (repo / "tests").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests" / "test_calc.py").write_text(OLD_TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text(FIXED)
    (repo / "tests" / "test_calc.py").write_text(NEW_TESTS)
    git(repo, "commit", "-qam", "fix add")
    fix = git(repo, "rev-parse", "HEAD")
    record = {
        "instance_id": "owner__calc-1",
        "repo": "owner/calc",
        "base_commit": base,
        "patch": git(repo, "diff", base, fix, "--", "calc.py") + "\n",
        "test_patch": git(repo, "diff", base, fix, "--", "tests") + "\n",
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),  # SWE-bench stores these as JSON strings
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_mul"]),
        "problem_statement": "add(2, 3) returns -1 instead of 5.",
        "version": "0.1",
    }
    return {"root": root, "base": base, "fix": fix, "record": record}


@pytest.fixture
def env(mirror, tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(mirror["record"]) + "\n")
    repo_config = {"owner/calc": {"test_command": f"{sys.executable} -m pytest -rA -p no:cacheprovider -q {{tests}}",
                                  "setup_command": "echo configured > .setup_marker"}}
    environment = SWEEnv(tasks=load_swebench(path), mirror_dir=mirror["root"], repo_config=repo_config, max_turns=10)
    yield environment
    environment.close()


def bash(command):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "bash", "arguments": {"command": command}}}]}


SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


def test_loads_jsonl_and_datasets(mirror, tmp_path):
    import datasets

    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(mirror["record"]) + "\n")
    from_jsonl = load_swebench(path)[0]
    from_dataset = load_swebench(datasets.Dataset.from_list([mirror["record"]]))[0]
    for task in (from_jsonl, from_dataset):
        assert task.id == "owner__calc-1" and task.prompt.startswith("add(2, 3)")
        assert task.data["FAIL_TO_PASS"] == ["tests/test_calc.py::test_add"]
        assert task.data["PASS_TO_PASS"] == ["tests/test_calc.py::test_mul"]
        assert task.data["source"] == "swebench" and task.data["version"] == "0.1"


def test_bad_records_are_rejected_clearly(mirror):
    record = dict(mirror["record"])
    del record["test_patch"]
    with pytest.raises(ValueError, match="lacks test_patch"):
        swebench_task(record)
    with pytest.raises(ValueError, match="no FAIL_TO_PASS"):
        swebench_task({**mirror["record"], "FAIL_TO_PASS": "[]"})
    with pytest.raises(FileNotFoundError, match="no git mirror of 'owner/other'"):
        mirror_archive(mirror["root"], "owner/other", mirror["base"])
    with pytest.raises(ValueError, match="cannot check out owner/calc@deadbeef"):
        mirror_archive(mirror["root"], "owner/calc", "deadbeef")


def test_checkout_is_the_base_commit_without_history(env, mirror):
    env.reset()
    observation, *_ = env.step(bash(f"git log --oneline | wc -l; cat calc.py; cat .setup_marker; "
                                    f"git cat-file -e {mirror['fix']} 2>/dev/null && echo LEAK || echo no-future; "
                                    "grep -c test_add tests/test_calc.py; git status --porcelain | wc -l"))
    lines = observation[0]["content"].splitlines()
    assert lines[0].strip() == "1"
    assert "return a - b" in observation[0]["content"]
    assert "configured" in lines and "no-future" in lines  # the set-up command ran; later commits are absent
    # the new test is hidden; set-up output is not a change
    assert lines[-3].strip() == "0" and lines[-2].strip() == "0"


def test_noop_fails_and_gold_passes(env, mirror):
    env.reset()
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert (reward, terminated) == (0.0, True)
    assert info["test_report"]["FAIL_TO_PASS"] == {"tests/test_calc.py::test_add": "failed"}
    assert info["test_report"]["PASS_TO_PASS"] == {"tests/test_calc.py::test_mul": "passed"}
    env.reset()
    env.step(bash(f"git apply <<'EOF'\n{mirror['record']['patch']}EOF"))
    _, reward, _, _, info = env.step(SUBMIT)
    assert reward == 1.0 and info["resolved"] and "a + b" in info["diff"]


def test_conftest_and_test_edits_cannot_fake_a_pass(env):
    env.reset()
    env.step(bash(
        "printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
        "    outcome = yield\\n    report = outcome.get_result()\\n    report.outcome = "
        "\"passed\"\\n' > conftest.py && "
        "printf 'def test_add():\\n    pass\\n\\ndef test_mul():\\n    pass\\n' > tests/test_calc.py && "
        "printf '[pytest]\\naddopts = --co\\n' > pytest.ini"))
    _, reward, _, _, info = env.step(SUBMIT)
    assert reward == 0.0
    assert set(info["dropped_paths"]) == {"conftest.py", "tests/test_calc.py", "pytest.ini"}
    assert info["test_report"]["FAIL_TO_PASS"] == {"tests/test_calc.py::test_add": "failed"}


def test_deleted_tests_count_as_failures(env):
    """If the hidden tests somehow do not run, missing ids are failures, never passes."""
    env.reset()
    env.step(bash("echo 'raise SystemExit(\"no tests for you\")' > calc.py"))
    _, reward, _, _, info = env.step(SUBMIT)
    assert reward == 0.0
    statuses = set(info["test_report"]["FAIL_TO_PASS"].values()) | set(info["test_report"]["PASS_TO_PASS"].values())
    assert statuses <= {"failed", "error", "missing", "not run"} and statuses


def test_docker_image_names():
    task = Task(id="django__django-11099", prompt="",
                data={"instance_id": "django__django-11099", "repo": "django/django"})
    assert docker_image_name("swebench/sweb.eval.x86_64.{instance_id_docker}:latest", task) == \
        "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert docker_image_name("mirror/{repo}:{instance_id}", task) == "mirror/django__django:django__django-11099"


def test_filter_diff_drops_only_protected_files():
    diff = make_diff("pkg/a.py", "x = 1\n", "x = 2\n") + make_diff("conftest.py", "a\n", "b\n") + make_diff(
        "tests/t.py", "a\n", "b\n")
    kept, dropped = filter_diff(diff, lambda path: path == "conftest.py" or path.startswith("tests/"))
    assert [path for path, _ in split_diff(kept)] == ["pkg/a.py"] and dropped == ["conftest.py", "tests/t.py"]
