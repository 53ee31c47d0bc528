"""The bundled Terminal-v0 tasks: every oracle earns reward 1, doing nothing earns 0, content is per-seed."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.terminal import bundled_tasks

ROOT = Path(__file__).resolve().parents[1]
REQUIRED_CATEGORIES = {"files", "text", "archives", "git", "scripting", "sqlite", "processes", "permissions"}


def bash(command: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c0", "type": "function",
                            "function": {"name": "bash", "arguments": {"command": command}}}]}


def output_of(observation: list) -> str:
    """The command output of a bash tool result (after the ``exit code: N`` line)."""
    content = observation[0]["content"]
    return content.split("\n", 1)[1] if "\n" in content else ""


@pytest.fixture(scope="module")
def env():
    environment = gym.make("clawgym/Terminal-v0", sandbox="bwrap")
    yield environment
    environment.close()


def test_bundled_jsonl_matches_its_generator():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_terminal_tasks.py"), "--check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_bundled_set_is_broad_and_well_formed():
    tasks = bundled_tasks()
    assert len(tasks) >= 60
    categories = collections.Counter(task.data["category"] for task in tasks)
    assert REQUIRED_CATEGORIES <= set(categories), categories
    assert set(tasks.splits) == {"train", "test"}
    for task in tasks:
        assert task.prompt and task.data["check"].strip() and task.data["solution"].strip(), task.id
        assert "PASS" not in task.prompt and "ORIG" not in task.prompt, task.id


@pytest.mark.slow
def test_every_oracle_earns_1_and_doing_nothing_earns_0(env):
    failures = []
    for index, task in enumerate(bundled_tasks()):
        # the oracle, as an agent would run it: one bash call, then its output as the final answer
        env.reset(seed=index, options={"task_id": task.id})
        observation, reward, terminated, truncated, info = env.step(bash(task.data["solution"]))
        assert not (terminated or truncated)
        observation, reward, terminated, truncated, info = env.step(output_of(observation).strip() or "done")
        if reward != 1.0 or not info["success"]:
            failures.append((task.id, "oracle", info["tests"]["checks"]))
        # doing nothing: an immediate final answer on the same start state
        env.reset(seed=index, options={"task_id": task.id})
        _, reward, terminated, _, info = env.step("I am done.")
        assert terminated
        if reward != 0.0 or info["success"]:
            failures.append((task.id, "do-nothing", info["tests"]["checks"]))
    assert not failures, failures


def test_content_is_randomised_per_seed_and_checks_read_it(env):
    digests = set()
    answers = {}
    for seed in (1, 2, 3):
        env.reset(seed=seed, options={"task_id": "text-answer-max"})
        observation, *_ = env.step(bash("md5sum temps.txt; sort -n temps.txt | tail -1"))
        digest, answer = output_of(observation).split()[0], output_of(observation).split()[-1]
        digests.add(digest)
        answers[seed] = answer
        env.step("skip")
    assert len(digests) == 3, "each seed must give different content"
    # the right answer for one seed is wrong for another: the check reads the real content
    other = next(s for s in (2, 3) if answers[s] != answers[1])
    env.reset(seed=other, options={"task_id": "text-answer-max"})
    _, reward, _, _, info = env.step(f"The answer is {answers[1]}")
    assert reward == 0.0 and info["tests"]["checks"][0]["name"] == "answer"
    env.reset(seed=other, options={"task_id": "text-answer-max"})
    _, reward, _, _, _ = env.step(f"The answer is {answers[other]}")
    assert reward == 1.0
