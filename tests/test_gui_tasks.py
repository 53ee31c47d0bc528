"""Every bundled GUI task: its oracle earns reward 1, doing nothing earns 0, and content follows the seed."""

from __future__ import annotations

import re

import pytest
from gymnasium.utils.seeding import np_random

pytest.importorskip("playwright")

from clawgym.envs.gui import GUIEnv, act, run_oracle
from clawgym.envs.gui.tasks import bundled_tasks

TASK_IDS = [t.id for t in bundled_tasks()]


@pytest.fixture(scope="module")
def env():
    env = GUIEnv()
    yield env
    env.close()


def test_at_least_40_tasks_each_with_an_oracle():
    assert len(TASK_IDS) >= 40
    assert len(set(TASK_IDS)) == len(TASK_IDS)
    assert all(t.solve is not None for t in bundled_tasks())


def _content(env) -> str:
    """The observation without the per-server origin and the seed in the URL."""
    return re.sub(r"http://127\.0\.0\.1:\d+/ep/\d+/", "ORIGIN/", env.view.text())


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_oracle_solves_and_doing_nothing_fails(env, task_id):
    first, _ = env.reset(seed=7, options={"task_id": task_id})
    page = _content(env)
    reward, terminated, truncated, info = run_oracle(env)
    assert (reward, terminated, truncated) == (1.0, True, False), (task_id, info, env.view.text())
    assert info["success"] is True and "error" not in info

    again, _ = env.reset(seed=7, options={"task_id": task_id})
    assert _content(env) == page and again[1] == first[1]  # same seed, same task text and page content
    _, reward, terminated, truncated, info = env.step(act("done"))
    assert (reward, terminated, info["success"]) == (0.0, True, False)


def test_a_plain_final_message_also_ends_the_episode_unsolved(env):
    env.reset(seed=3, options={"task_id": "click-button"})
    _, reward, terminated, truncated, info = env.step("I am finished.")
    assert (reward, terminated, truncated, info["success"]) == (0.0, True, False, False)


def test_content_is_drawn_from_the_seed():
    tasks = bundled_tasks()
    differ = sum(t.params(5) != t.params(6) for t in tasks)
    assert differ == len(tasks)
    assert all(t.params(5) == t.params(5) for t in tasks)


def test_the_oracle_of_one_seed_does_not_solve_another(env):
    """Content really depends on the seed: seed A's right button is a wrong one on seed B's page."""
    task = next(t for t in bundled_tasks() if t.id == "click-button")
    env.reset(seed=11, options={"task_id": "click-button"})
    a, page_a = env.params, _content(env)
    # the page of a reset seed is drawn from the episode seed that reset draws (AgentEnv.reset)
    episode_seed = lambda s: int(np_random(s)[0].integers(2**31 - 1))  # noqa: E731
    b = next(s for s in range(12, 500)
             if a["target"] in task.params(episode_seed(s))["labels"]
             and task.params(episode_seed(s))["target"] != a["target"])
    env.reset(seed=b, options={"task_id": "click-button"})
    assert env.params == task.params(episode_seed(b)) and _content(env) != page_a
    env.step(act("click", ref=env.view.find("button", a["target"])))
    _, reward, terminated, _, info = env.step(act("done"))
    assert (reward, terminated, info["success"]) == (0.0, True, False)
