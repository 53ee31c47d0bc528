"""Every bundled SWE-v0 task, for real: the base fails its FAIL_TO_PASS tests, the gold patch solves it,
a no-op submission earns nothing. Each episode runs in the real sandbox with the real hidden tests."""

import gymnasium as gym
import pytest

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.swe.loader import bundled_base_files, bundled_tasks, project_files

TASKS = list(bundled_tasks())


def bash(command):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": {"command": command}}}]}


SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


@pytest.fixture(scope="module")
def env():
    environment = gym.make("clawgym/SWE-v0")
    yield environment.unwrapped
    environment.close()


def test_bundled_set_shape():
    assert len(TASKS) >= 30
    projects = {task.data["repo"] for task in TASKS}
    assert len(projects) >= 5
    operators = {task.data["mutation"]["operator"] for task in TASKS}
    assert len(operators) >= 6, operators
    assert {task.split for task in TASKS} == {"train", "test"}
    for task in TASKS:
        assert task.data["FAIL_TO_PASS"] and task.data["PASS_TO_PASS"]
        assert not set(task.data["FAIL_TO_PASS"]) & set(task.data["PASS_TO_PASS"])
        # The agent's tree has no tests and differs from the original project only by the bug.
        base = bundled_base_files(task)
        original = project_files(task.data["repo"])
        assert not any(path.startswith("tests/") for path in base)
        changed = [path for path in base if base[path] != original[path]]
        assert changed == [task.data["mutation"]["file"]]
        # The issue describes the symptom, never the fix: it does not quote the buggy line back.
        buggy_line = base[changed[0]].decode().splitlines()[task.data["mutation"]["line"] - 1].strip()
        assert buggy_line not in task.prompt


@pytest.mark.slow
@pytest.mark.parametrize("task_id", [task.id for task in TASKS])
def test_base_fails_gold_passes_noop_gets_zero(env, task_id):
    task = env.task_set.by_id(task_id)

    # A no-op submission: the base state. Exactly the FAIL_TO_PASS tests fail.
    env.reset(options={"task_id": task_id})
    _, reward, terminated, truncated, info = env.step(SUBMIT)
    assert (reward, terminated, truncated, info["success"]) == (0.0, True, False, False)
    assert info["diff"] == "" and info["eval_error"] is None
    report = info["test_report"]
    assert set(report["FAIL_TO_PASS"]) == set(task.data["FAIL_TO_PASS"])
    assert all(status in ("failed", "error") for status in report["FAIL_TO_PASS"].values()), report["FAIL_TO_PASS"]
    assert all(status == "passed" for status in report["PASS_TO_PASS"].values())

    # The gold patch, applied through the agent's own bash tool, resolves the issue.
    env.reset(options={"task_id": task_id})
    observation, *_ = env.step(bash(f"git apply <<'EOF'\n{task.data['patch']}EOF"))
    assert observation[0]["content"].strip() == "[exit code 0]"
    _, reward, terminated, _, info = env.step(SUBMIT)
    assert (reward, terminated, info["success"], info["resolved"]) == (1.0, True, True, True)
    assert set(info["test_report"]["tests"]) == set(task.data["FAIL_TO_PASS"]) | set(task.data["PASS_TO_PASS"])
    assert all(status == "passed" for status in info["test_report"]["tests"].values())
    assert info["diff"].startswith(f"diff --git a/{task.data['mutation']['file']}")
