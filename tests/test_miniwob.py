"""MiniWoB-v0: the miniwob package's real task pages, rewarded by the page itself, on GUI-v0's browser.

One env (one Chromium) serves most tests. The oracle sweep here runs a representative subset of the
scripted tasks; every scripted task on 5 seeds is ``benchmarks/miniwob_sweep.py`` (about 3 minutes on 2
cores), and loading every task is ``benchmarks/miniwob_parity.py --all-tasks``.
"""

from __future__ import annotations

import shutil

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("playwright")
pytest.importorskip("miniwob")

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.gui import act
from clawgym.envs.gui.miniwob import MiniWoBEnv, html_dir, task_ids
from clawgym.envs.gui.miniwob_scripts import SCRIPTS, WRONG, play_oracle

# A representative few: a button, text entry, checkboxes (partial rewards), a dropdown, jQuery UI widgets.
SAMPLE = ["click-button", "enter-text", "click-checkboxes-large", "choose-list", "click-dialog-2",
          "click-tab", "enter-time"]


@pytest.fixture(scope="module")
def env():
    env = gym.make("clawgym/MiniWoB-v0")
    yield env
    env.close()


def play(env, actions_of) -> tuple[float, dict]:
    done, reward, info = False, 0.0, {}
    while not done:
        _, reward, terminated, truncated, info = env.step(actions_of())
        done = terminated or truncated
    return reward, info


def test_every_task_of_the_package_is_listed():
    ids = task_ids()
    assert len(ids) == 125 and "click-test" in ids and "email-inbox" in ids
    assert not any(i.startswith("flight.") for i in ids)  # iframe pages: left out, said so in the docstring
    assert all((html_dir() / "miniwob" / f"{i}.html").is_file() for i in ids)


def test_unknown_task_ids_are_clear_errors(env):
    with pytest.raises(ValueError, match=r"unknown MiniWoB\+\+ task 'click-buton'; did you mean click-button"):
        gym.make("clawgym/MiniWoB-v0", tasks=["click-buton"])
    with pytest.raises(KeyError, match="no task 'nope'"):
        env.unwrapped.reset(options={"task_id": "nope"})
    with pytest.raises(ValueError, match="reward must be one of"):
        MiniWoBEnv(reward="fast")


@pytest.mark.slow
@pytest.mark.parametrize("task_id", SAMPLE)
def test_sampled_tasks_load_reset_accept_actions_and_their_oracle_scores_1(env, task_id):
    obs, info = env.reset(seed=7, options={"task_id": task_id})
    inner = env.unwrapped
    assert "error" not in info and info["task_id"] == task_id
    assert obs[1]["content"] == inner.utterance and len(inner.utterance) > 5  # the page's utterance is the goal
    assert f"/miniwob/{task_id}.html" in obs[2]["content"]
    assert "Last reward" not in obs[2]["content"]  # MiniWoB's HUD is hidden
    _, reward, terminated, truncated, _ = env.step(act("wait", ms=10))  # any action is accepted
    assert not (terminated or truncated) and reward == 0.0
    reward, info = play(env, inner.oracle_action)
    assert reward == 1.0 and info["success"] is True and info["raw_reward"] == 1.0
    assert 0.0 < info["discounted_reward"] <= 1.0 and info["page_ended"] is True


def test_a_wrong_click_gets_the_pages_minus_one(env):
    env.reset(seed=3, options={"task_id": "click-button"})
    inner = env.unwrapped
    obs, reward, terminated, truncated, info = env.step(next(WRONG["click-button"](inner.utterance, inner.view)))
    assert terminated and not truncated and reward == -1.0
    assert info["raw_reward"] == -1.0 and info["success"] is False
    assert "The task page ended the episode." in obs[-1]["content"]


def test_partial_rewards_and_the_reward_modes():
    env = gym.make("clawgym/MiniWoB-v0", tasks=["click-checkboxes-large"], reward="binary")
    try:
        env.reset(seed=5)
        inner = env.unwrapped
        actions = list(SCRIPTS["click-checkboxes-large"](inner.utterance, inner.view))
        for action in (actions[0], actions[-1]):  # tick one of the asked boxes, then submit
            _, reward, terminated, _, info = env.step(action)
        assert terminated and -1.0 < info["raw_reward"] < 1.0  # MiniWoB++'s partial credit, as the page computes it
        assert reward == float(info["raw_reward"] > 0)  # BrowserGym's binarisation
    finally:
        env.close()


def test_done_without_the_pages_verdict_scores_0(env):
    env.reset(seed=1, options={"task_id": "enter-text"})
    _, reward, terminated, _, info = env.step(act("done"))
    assert terminated and reward == 0.0 and info["page_ended"] is False
    assert info["reason"] == "the page did not end the episode"


def test_page_seed_seeds_the_pages_own_rng(env):
    def problem(**kw):
        obs, info = env.reset(options={"task_id": "enter-text", **kw})
        return env.unwrapped.utterance, obs, info

    a, obs_a, info_a = problem(page_seed=12345)
    b, obs_b, info_b = problem(page_seed=12345)
    assert a == b and obs_a == obs_b and info_a["page_seed"] == 12345
    assert len({problem(page_seed=s)[0] for s in (1, 2, 3, 4, 5)}) > 1
    first = env.reset(seed=9, options={"task_id": "enter-text"})
    assert env.reset(seed=9, options={"task_id": "enter-text"}) == first


def test_the_pages_timer_ends_the_episode_at_minus_one():
    env = gym.make("clawgym/MiniWoB-v0", tasks=["click-test"], episode_max_time_s=0.3)
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(act("wait", ms=600))
        assert terminated and reward == -1.0 and info["reason"] == "timed out"
    finally:
        env.close()


def test_goto_is_refused_and_render_modes_work():
    env = gym.make("clawgym/MiniWoB-v0", tasks=["click-test"], render_mode="rgb_array")
    try:
        env.reset(seed=0)
        frame = env.render()
        assert frame.shape == (600, 800, 3) and frame.dtype == np.uint8 and frame.std() > 0
        obs, reward, terminated, truncated, _ = env.step(act("goto", url="/miniwob/miniwob/click-button.html"))
        assert "goto is not available" in obs[0]["content"] and not (terminated or truncated)
    finally:
        env.close()


def _fake_suite(tmp_path, body_script: str):
    """A MiniWoB-style directory: the package's core/ plus one page of ours."""
    root = tmp_path / "html"
    shutil.copytree(html_dir() / "core", root / "core")
    shutil.copytree(html_dir() / "common", root / "common")
    (root / "miniwob").mkdir()
    (root / "miniwob" / "stuck.html").write_text(
        "<!DOCTYPE html><html><head><title>Stuck</title><link rel='stylesheet' href='../core/core.css'>"
        f"<script src='../core/core.js'></script><script>{body_script}</script></head><body><div id='wrap'>"
        "<div id='query'>Press the button.</div><div id='area'><button id='b'>Press</button></div></div></body></html>")
    return root


def test_a_page_that_never_rewards_is_truncated_not_hung(tmp_path):
    root = _fake_suite(tmp_path, "var genProblem = function() {}; window.onload = function() { core.startEpisode(); };")
    env = gym.make("clawgym/MiniWoB-v0", tasks=["stuck"], html=root, max_turns=3)
    try:
        env.reset(seed=0)
        ref = env.unwrapped.view.find("button", "Press")
        for _ in range(3):
            _, reward, terminated, truncated, info = env.step(act("click", ref=ref))
        assert truncated and not terminated and reward == 0.0 and info["truncated_by"] == "max_turns"
    finally:
        env.close()


def test_a_page_that_is_not_a_miniwob_task_is_a_clear_error(tmp_path):
    root = _fake_suite(tmp_path, "")  # no genProblem
    env = gym.make("clawgym/MiniWoB-v0", tasks=["stuck"], html=root)
    try:
        obs, info = env.reset(seed=0)
        assert "not a MiniWoB++ task" in info["error"] and "not a MiniWoB++ task" in obs[-1]["content"]
        _, reward, terminated, truncated, info = env.step(act("wait"))
        assert truncated and reward == 0.0
    finally:
        env.close()


def test_scripts_fail_loudly_when_their_target_is_not_on_the_page(env):
    env.reset(seed=0, options={"task_id": "click-button"})
    with pytest.raises(KeyError, match=r"no element role=.*button.* name=.*nope") as caught:
        next(SCRIPTS["click-button"]('Click on the "nope" button.', env.unwrapped.view))
    assert 'button "submit"' in str(caught.value)  # the error shows the page the script was given
    env.reset(seed=0, options={"task_id": "draw-circle"})
    with pytest.raises(NotImplementedError, match="no scripted oracle"):
        env.unwrapped.oracle_action()


# The elements the GUI observation used to hide, one task each: icon-only controls named by their class
# (email star / trash / reply / forward / send, social-media buttons and their "more" menu, the slider
# handle), controls inside a control (a mail row's icons, the Submit button inside an accordion header),
# clickable words inside a sentence (click-link, the links behind tabs), a tree's children; plus plain
# forms, a date picker and a pop-up.
SWEEP = ["email-inbox", "email-inbox-forward-nl", "social-media", "use-slider", "click-collapsible", "click-link",
         "click-tab-2-hard", "navigate-tree", "click-pie", "choose-date", "login-user-popup", "click-checkboxes"]


@pytest.mark.slow
@pytest.mark.parametrize("task_id", SWEEP)
def test_oracles_solve_tasks_through_refs_of_the_observation_alone(env, task_id):
    for seed in (0, 1):
        result = play_oracle(env, task_id, seed)
        assert result["unseen"] == [] and result["error"] is None, result
        assert result["solved"] and result["raw"] == 1.0, result


def test_every_scripted_task_is_a_task_and_the_turn_limit_fits_them():
    assert set(SCRIPTS) <= set(task_ids()) and set(WRONG) <= set(SCRIPTS)
    assert len(SCRIPTS) >= 78
    env = gym.make("clawgym/MiniWoB-v0")
    try:
        assert env.unwrapped.max_turns == 50  # GUI-v0's 20 cuts use-slider's arrow-key solutions off
    finally:
        env.close()


@pytest.mark.slow
def test_use_slider_by_arrow_keys_alone_fits_the_default_turn_limit():
    """Page seed 0 starts the handle at 52 and asks for 90: 38 presses, 40 actions in all."""
    env = gym.make("clawgym/MiniWoB-v0", tasks=["use-slider"])
    try:
        env.reset(seed=0)
        view = env.unwrapped.view
        handle = view.find("clickable", "ui-slider-handle")
        _, _, terminated, truncated, _ = env.step(act("click", ref=handle))
        for _ in range(38):
            _, _, terminated, truncated, _ = env.step(act("press", key="ArrowRight"))
            assert not (terminated or truncated)
        assert env.unwrapped.view.find("text", "90")
        _, reward, terminated, truncated, info = env.step(act("click", ref=env.unwrapped.view.find("button", "Submit")))
        assert terminated and reward == 1.0 and info["turn"] == 40
    finally:
        env.close()
