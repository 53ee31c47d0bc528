"""GUI-v0's contract: gym.make + check_env, the observation format, tool errors, rendering, threads."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("playwright")

import clawgym  # noqa: F401  (registers the ids)
from clawgym.envs.gui import GUIEnv, PageTask, act, run_oracle
from clawgym.envs.gui.browser import WrongThread

FORM = PageTask(
    id="probe",
    pages={"index.html": """<html><head><title>Probe page</title></head><body>
<h1>Probe</h1><p>Hello <b>there</b></p>
<label for="n">Name</label> <input id="n" name="n" placeholder="your name">
<select name="c" aria-label="Colour"><option>red</option><option>blue</option></select>
<label><input type="checkbox" name="agree"> I agree</label>
<button onclick="CG.set('clicked', document.getElementById('n').value); document.getElementById('out').textContent='Clicked!'">Go</button>
<button disabled>Nope</button>
<div style="display:none"><button>Hidden</button></div>
<table><tr><th>K</th><th>V</th></tr><tr><td>a</td><td>1</td></tr></table>
<p id="out"></p><a href="second.html">Next page</a></body></html>""",  # noqa: E501  (a test page: kept as written)
           "second.html": "<p>Second page</p>"},
    generate=lambda rng: {"prompt": "Probe the env."},
    check=lambda p, s, a: s["state"].get("clicked") == "Ada" and a == "ok",
)


@pytest.fixture(scope="module")
def env():
    env = gym.make("clawgym/GUI-v0", tasks=[FORM], max_turns=30)
    yield env
    env.close()


def test_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    env = gym.make("clawgym/GUI-v0")
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_reset_observation_lists_elements_with_refs(env):
    obs, info = env.reset(seed=1)
    assert [m["role"] for m in obs] == ["system", "user", "user"]
    assert obs[1]["content"] == "Probe the env."
    page = obs[2]["content"]
    assert page.splitlines()[0].startswith("URL: http://127.0.0.1:")
    assert "Title: Probe page" in page and "Focused: none" in page
    for line in ['heading "Probe"', 'textbox "Name" value="" placeholder="your name"',
                 'combobox "Colour" value="red" options=["red", "blue"]', 'checkbox "I agree" unchecked',
                 'button "Go"', 'button "Nope" disabled', 'header "K | V"', 'row "a | 1"', 'link "Next page"']:
        assert line in page, (line, page)
    assert "Hidden" not in page
    assert info["task_id"] == "probe" and info["turn"] == 0
    tools = {t["function"]["name"] for t in env.unwrapped.tools}
    assert tools == {"click", "type", "select", "check", "hover", "press", "scroll", "goto", "go_back", "wait", "done"}


ICONS = PageTask(
    id="icons",
    pages={"index.html": """<html><body>
<div class="row" style="cursor:pointer" onclick="CG.set('clicked', 'row')">Ada Hello there
  <span class="star" data-l="star" style="display:inline-block;width:12px;height:12px"></span></div>
<span class="icon-trash" title="Delete" data-l="delete" style="display:inline-block;width:12px;height:12px"></span>
<span id="gear" data-l="gear" style="display:inline-block;width:12px;height:12px"></span>
<span data-l="fa" style="display:inline-block"><i class="fa fa-star" style="display:inline-block;width:12px;height:12px"></i></span>
<div data-l="svg" style="width:20px"><svg width="16" height="16"><title>Settings</title><rect width="16" height="16"/></svg></div>
<div data-l="img" style="width:20px"><img alt="Home" width="16" height="16" src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></div>
<button aria-label="Close" style="width:16px;height:16px"></button>
<p>Read the <span class="word" data-l="manual">manual</span> now.</p>
<ul data-l="surface"><li>one</li><li>two</li></ul>
<script>
document.querySelectorAll('[data-l]').forEach((e) => e.addEventListener('click', (ev) => {
  CG.set('clicked', e.dataset.l); ev.stopPropagation(); }));
</script></body></html>"""},  # noqa: E501  (a test page: kept as written)
    generate=lambda rng: {"prompt": "Click the star."},
    check=lambda p, s, a: s["state"].get("clicked") == "star",
)


def test_every_control_gets_a_ref_and_a_name_and_controls_inside_controls_are_listed():
    env = gym.make("clawgym/GUI-v0", tasks=[ICONS])
    try:
        obs, _ = env.reset(seed=0)
        page = obs[-1]["content"].split("Page:\n")[1]
        lines = [line.split("] ", 1)[1] for line in page.splitlines()]
        assert lines == [
            'clickable "Ada Hello there"', 'clickable "star"',  # a row's own icon, listed under it
            # title, id, class, SVG title
            'clickable "Delete"', 'clickable "gear"', 'clickable "fa fa-star"', 'clickable "Settings"',
            'clickable "Home"', 'button "Close"',  # an image's alt, aria-label
            'text "Read the manual now."', 'clickable "manual"',  # a sentence keeps its words; its link under it
            'listitem "one"', 'listitem "two"',  # a listener on a list of text blocks is a surface, not a control
        ], page
        assert "  [" in page.splitlines()[1] and "  [" in page.splitlines()[9]  # indented under their holder
        view = env.unwrapped.view
        _, reward, *_ = env.step(act("click", ref=view.find("clickable", "star")))
        assert env.unwrapped.browser.read_state()["state"]["clicked"] == "star"
        env.step(act("click", ref=view.find("clickable", "manual")))
        assert env.unwrapped.browser.read_state()["state"]["clicked"] == "manual"
    finally:
        env.close()


def test_actions_change_the_page_and_refs_stay_stable(env):
    env.reset(seed=1)
    genv = env.unwrapped
    v = genv.view
    name, go = v.find("textbox", "Name"), v.find("button", "Go")
    obs, *_ = env.step(act("type", ref=name, text="Ada"))
    assert f'Focused: [{name}] textbox "Name" value="Ada"' in obs[0]["content"]
    obs, *_ = env.step(act("select", ref=genv.view.find("combobox"), option="blue"))
    assert 'value="blue"' in obs[0]["content"]
    obs, *_ = env.step(act("check", ref=genv.view.find("checkbox", "I agree")))
    assert 'checkbox "I agree" checked' in obs[0]["content"]
    obs, *_ = env.step(act("click", ref=go))
    assert genv.view.find("button", "Go") == go and genv.view.find("textbox", "Name") == name
    assert genv.view.has_text("Clicked!")
    _, reward, terminated, _, info = env.step(act("done", answer="ok"))
    assert (reward, terminated, info["success"]) == (1.0, True, True)


def test_navigation_go_back_and_goto(env):
    env.reset(seed=1)
    genv = env.unwrapped
    env.step(act("click", ref=genv.view.find("link", "Next page")))
    assert genv.view.url.endswith("/second.html") and genv.view.has_text("Second page")
    env.step(act("go_back"))
    assert genv.view.url.endswith("/index.html")
    env.step(act("goto", url="second.html"))
    assert genv.view.has_text("Second page")
    obs, *_ = env.step(act("go_back"))
    obs, _, terminated, _, info = env.step(act("go_back"))
    assert (not terminated and info["tool_errors"] == 1
            and "Last action error: there is no previous page" in obs[0]["content"])


@pytest.mark.parametrize("call, error", [
    (act("click", ref=999), "no element [999] on the page"),
    (act("click", ref=-3), "no element [-3]"),
    (act("select", ref=1, option="x"), "is not a dropdown"),
    (act("goto", url="http://127.0.0.1:9/"), "is not on an allowed site"),
    (act("goto", url="file:///etc/passwd"), "is not on an allowed site"),
    (act("press", key="NoSuchKey"), "Unknown key"),
    (act("type", ref=1), "missing required argument(s): text"),
    (act("scroll", direction="sideways"), "must be one of"),
    (act("teleport", ref=1), "unknown tool 'teleport'"),
])
def test_bad_actions_give_error_observations_not_crashes(env, call, error):
    env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(call)
    assert error in obs[0]["content"], obs[0]["content"]
    assert not terminated and not truncated and info["tool_errors"] == 1
    obs, *_ = env.step(act("wait", ms=10))  # the episode goes on
    assert "Last action error" not in obs[0]["content"] and 'button "Go"' in obs[0]["content"]


def test_disabled_button_click_is_an_error(env):
    env.reset(seed=1)
    ref = env.unwrapped.view.find("button", "Nope")
    obs, _, terminated, _, info = env.step(act("click", ref=ref))
    assert (f"Last action error: [{ref}] is disabled" in obs[0]["content"] and not terminated
            and info["tool_errors"] == 1)


def test_dialogs_are_accepted_and_reported():
    page = PageTask(id="alerts",
                    pages={"index.html": "<button onclick=\"alert('saved!'); "
                                         "CG.set('after', confirm('sure?'))\">Save</button>"},
                    generate=lambda rng: {"prompt": "Save."}, check=lambda p, s, a: s["state"].get("after") is True)
    env = GUIEnv(tasks=[page])
    try:
        env.reset(seed=0)
        obs, *_ = env.step(act("click", ref=1))
        assert "Dialogs (accepted): alert 'saved!'; confirm 'sure?'" in obs[0]["content"]
        _, reward, *_ = env.step(act("done"))
        assert reward == 1.0
    finally:
        env.close()


def test_a_step_waits_for_fetch_work_the_network_never_reports():
    """A click whose result arrives through a body read the network never sees (a stream that ends after
    300 ms): Playwright's request events cannot tell the env to wait, the page's own count can."""
    slow = ("new Response(new ReadableStream({start(c) { setTimeout(() => { "
            "c.enqueue(new TextEncoder().encode('loaded')); c.close(); }, 300); }})).text()"
            ".then((t) => { document.getElementById('out').textContent = t; })")
    page = PageTask(id="slow-body", pages={"index.html": f'<button onclick="{slow}">Load</button><p id="out"></p>'},
                    generate=lambda rng: {"prompt": "Load."}, check=lambda p, s, a: True)
    env = GUIEnv(tasks=[page])
    try:
        env.reset(seed=0)
        obs, *_ = env.step(act("click", ref=1))
        assert 'text "loaded"' in obs[0]["content"], obs[0]["content"]
    finally:
        env.close()


def test_rgb_array_render_and_screenshots_in_info():
    env = gym.make("clawgym/GUI-v0", render_mode="rgb_array", screenshots=True)
    try:
        _, info = env.reset(seed=2, options={"task_id": "click-button"})
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == (600, 800, 3)
        assert frame.min() < 100 < frame.max()  # text on a white page, not a blank frame
        assert info["screenshot"].shape == (600, 800, 3)
        _, _, _, _, info = env.step(act("wait", ms=0))
        assert info["screenshot"].shape == (600, 800, 3)
    finally:
        env.close()
    quiet = gym.make("clawgym/GUI-v0")
    try:
        _, info = quiet.reset(seed=2)
        assert "screenshot" not in info
    finally:
        quiet.close()


def test_an_env_refuses_calls_from_a_second_thread(env):
    env.reset(seed=1)
    errors = []

    def other():
        try:
            env.unwrapped.browser.snapshot()
        except WrongThread as exc:
            errors.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "thread" in str(errors[0])
    assert env.unwrapped.browser.snapshot().has_text("Probe")  # the owner thread still works


def test_close_twice_and_step_after_close():
    env = gym.make("clawgym/GUI-v0")
    env.reset(seed=0)
    env.close()
    env.close()
    with pytest.raises(Exception):
        env.step(act("done"))


def test_user_task_from_import_string_and_bad_tasks():
    env = GUIEnv(
        tasks=[{"id": "cb", "prompt": "x", "data": {"page_task": "clawgym.envs.gui.tasks.basic:CLICK_BUTTON"}}])
    try:
        env.reset(seed=4)
        assert run_oracle(env)[0] == 1.0
    finally:
        env.close()
    with pytest.raises(ValueError, match="needs data"):
        GUIEnv(tasks=[{"id": "nothing", "prompt": "x"}])
    with pytest.raises(ValueError, match="start page"):
        PageTask(id="t", pages={"a.html": ""}, generate=lambda r: {"prompt": ""}, check=lambda p, s, a: True)
    with pytest.raises(ValueError, match="may only use"):
        PageTask(id="a/b", pages={"index.html": ""}, generate=lambda r: {"prompt": ""}, check=lambda p, s, a: True)


def test_close_from_another_thread_kills_the_browser():
    env = GUIEnv()
    started = threading.Thread(target=lambda: env.reset(seed=0))
    started.start()
    started.join()
    browser = env.browser
    assert browser._browser_pid() is not None
    env.close()  # not the owner thread: the processes are killed, nothing raises
    for _ in range(50):
        if browser._browser_pid() is None:
            break
        threading.Event().wait(0.1)
    assert browser._browser_pid() is None
