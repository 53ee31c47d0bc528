"""GUI-v0 safety: only allowed origins are reachable; hung, crashed or runaway pages end episodes cleanly."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("playwright")

from clawgym.envs.gui import GUIEnv, PageTask, act, run_oracle, url_task
from clawgym.envs.gui.tasks.basic import CLICK_BUTTON


class Site:
    """A second web server on 127.0.0.1 that records every request it gets."""

    def __init__(self, body: str) -> None:
        self.requests: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                site.requests.append(self.path)
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def outside():
    site = Site("<html><head><title>Outside</title></head><body><p>The secret is 4711.</p></body></html>")
    yield site
    site.close()


def misbehaving(outside_origin: str) -> PageTask:
    return PageTask(
        id="misbehave",
        pages={"index.html": f"""<p id="out">waiting</p>
<button onclick="fetch('{outside_origin}/fetched').then(r => r.text()).then(t => CG.set('fetch', 'got ' + t), e => CG.set('fetch', 'failed: ' + e.name))">Fetch</button>
<button onclick="var i = new Image(); i.onerror = () => CG.set('img', 'failed'); i.onload = () => CG.set('img', 'loaded'); i.src = '{outside_origin}/pixel.png'">Image</button>
<button onclick="while (true) {{}}">Hang</button>
<button onclick="for (;;) alert('storm')">Storm</button>
<button onclick="location.href = '{outside_origin}/away'">Away</button>
<a href="{outside_origin}/link">Outside link</a>"""},  # noqa: E501  (a test page: kept as written)
        generate=lambda rng: {"prompt": "Misbehave."},
        check=lambda p, s, a: True,
    )


@pytest.fixture(scope="module")
def env(outside):
    env = GUIEnv(tasks=[misbehaving(outside.origin), CLICK_BUTTON], hang_timeout_s=2.0)
    yield env
    env.close()


def start(env):
    env.reset(seed=0, options={"task_id": "misbehave"})
    return env.view


def assert_next_episode_works(env):
    env.reset(seed=3, options={"task_id": "click-button"})
    reward, terminated, truncated, info = run_oracle(env)
    assert (reward, terminated, truncated) == (1.0, True, False)


def test_requests_to_a_not_allowed_local_server_are_blocked(env, outside):
    v = start(env)
    env.step(act("click", ref=v.find("button", "Fetch")))
    env.step(act("click", ref=v.find("button", "Image")))
    state = env.browser.read_state()["state"]
    assert state["fetch"].startswith("failed") and state["img"] == "failed"
    assert outside.requests == []
    assert f"{outside.origin}/fetched" in env.browser.blocked and f"{outside.origin}/pixel.png" in env.browser.blocked
    obs, *_ = env.step(act("goto", url=outside.origin + "/typed"))
    assert "is not on an allowed site" in obs[0]["content"] and outside.requests == []


@pytest.mark.parametrize("button, error", [
    ("Away", "navigated away from the allowed origins"),
    ("Hang", "hung for more than 2 s"),
    ("Storm", "alert storm"),
])
def test_runaway_pages_end_the_episode_and_the_next_reset_works(env, outside, button, error):
    v = start(env)
    obs, reward, terminated, truncated, info = env.step(act("click", ref=v.find("button", button)))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert error in info["error"] and info["truncated_by"] == "page_error" and info["success"] is False
    assert error in obs[0]["content"]
    assert outside.requests == []
    assert_next_episode_works(env)


def test_following_a_link_off_site_ends_the_episode(env, outside):
    v = start(env)
    _, _, terminated, truncated, info = env.step(act("click", ref=v.find("link", "Outside link")))
    assert truncated and "navigated away" in info["error"] and outside.requests == []
    assert_next_episode_works(env)


def test_a_crashed_renderer_ends_the_episode(env):
    start(env)
    env.browser._kill(renderers_only=True)  # what an out-of-memory kill does to a tab
    _, reward, terminated, truncated, info = env.step(act("click", ref=1))
    assert (reward, terminated, truncated) == (0.0, False, True) and "crashed" in info["error"]
    assert_next_episode_works(env)


def test_a_url_task_on_an_allow_listed_origin(outside):
    tasks = [
        url_task("secret", outside.origin + "/page", "What is the secret number?", answer="4711"),
        url_task("title", outside.origin + "/page", "Open the page.", check_js="document.title === 'Outside'"),
    ]
    env = GUIEnv(tasks=tasks)
    try:
        obs, _ = env.reset(seed=0, options={"task_id": "secret"})
        assert 'text "The secret is 4711."' in obs[-1]["content"]
        _, reward, terminated, _, info = env.step(act("done", answer=" 4711 "))
        assert (reward, terminated, info["success"]) == (1.0, True, True)
        env.reset(seed=0, options={"task_id": "secret"})
        _, reward, *_ = env.step(act("done", answer="42"))
        assert reward == 0.0
        env.reset(seed=0, options={"task_id": "title"})
        _, reward, *_ = env.step(act("done"))
        assert reward == 1.0
        assert outside.requests.count("/page") == 3
    finally:
        env.close()
    with pytest.raises(ValueError, match="answer or a check_js"):
        url_task("x", outside.origin, "x")


def test_an_unreachable_url_task_ends_cleanly():
    env = GUIEnv(tasks=[url_task("dead", "http://127.0.0.1:9/", "Nothing here.", answer="x")])
    try:
        obs, info = env.reset(seed=0)
        assert "did not load" in info["error"] and "did not load" in obs[-1]["content"]
        _, reward, terminated, truncated, info = env.step(act("done", answer="x"))
        assert (reward, truncated) == (0.0, True) and "did not load" in info["error"]
    finally:
        env.close()


def test_the_allow_list_follows_the_episode_on_a_reused_page(outside):
    """A URL task allows its origin for that episode only: the next episode on the same warm page blocks it."""
    env = GUIEnv(tasks=[url_task("secret", outside.origin + "/page", "Read it.", answer="4711"),
                        misbehaving(outside.origin)])
    try:
        env.reset(seed=0, options={"task_id": "secret"})
        assert outside.origin in env.browser.allowed and 'text "The secret is 4711."' in env.view.text()
        seen = len(outside.requests)
        v = start(env)
        assert env.browser.reused, env.browser.not_reused_because
        assert outside.origin not in env.browser.allowed
        env.step(act("click", ref=v.find("button", "Fetch")))
        env.browser.page.wait_for_function("() => CG.state().fetch !== undefined")  # the rejection comes a moment later
        assert env.browser.read_state()["state"]["fetch"].startswith("failed")
        assert len(outside.requests) == seen and f"{outside.origin}/fetched" in env.browser.blocked
        env.reset(seed=1, options={"task_id": "secret"})
        assert env.browser.reused, env.browser.not_reused_because
        assert 'text "The secret is 4711."' in env.view.text()
    finally:
        env.close()


def test_what_the_route_blocks():
    """Allowed: an allow-listed origin followed by its path, and data:, blob:, about:; anything else is aborted."""
    from clawgym.envs.gui.browser import blocked_pattern

    blocked = blocked_pattern({"http://127.0.0.1:8000", "https://a-b.example.com"}).search
    for url in ("http://127.0.0.1:8000/x?y=1", "https://a-b.example.com/", "data:text/plain,x",
                "about:blank", "blob:http://x/1"):
        assert not blocked(url), url
    for url in ("http://127.0.0.1:8000@evil.test/", "http://127.0.0.1:80001/", "https://a-bxexample.com/",
                "http://127.0.0.1:8001/", "https://127.0.0.1:8000/", "ws://127.0.0.1:8000/"):
        assert blocked(url), url
    assert blocked_pattern(set()).search("http://127.0.0.1:8000/")


def test_a_dialog_whose_page_went_away_is_noted_and_not_raised():
    """Playwright refuses to answer a dialog whose document a navigation replaced; the step goes on."""
    from clawgym.envs.gui.browser import Browser

    class GoneDialog:
        type, message = "alert", "late"

        def accept(self):
            raise RuntimeError("Dialog.accept: Protocol error (Page.handleJavaScriptDialog): Not attached")

    browser = Browser()  # nothing launched: the handler alone
    browser._on_dialog(GoneDialog())
    assert browser.notes() == ["Dialogs (accepted): alert 'late'"] and browser.broken is None
