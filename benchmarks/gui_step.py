"""GUI step and reset latency: clawgym GUI-v0 vs raw Playwright and BrowserGym, same Chromium and page, one run.

Both drive the system Chromium (``/usr/bin/chromium`` or ``$CLAWGYM_CHROMIUM``) on the bundled
``form-fill`` page served by clawgym's task server on 127.0.0.1, and alternate the same two actions
(fill the name field, click Submit). Latency is wall time per ``reset()`` / ``step()``, p50 and p95.
The envs take turns (one reset or step each, round robin; ``--block N``: N in a row each), so a change in
machine load hits them all. A new-context reset leaves a renderer starting and one exiting for a while
after it returns, which strict round robin charges to the next env's call; ``--block 10`` keeps that
to the first call of each block.

GUI-v0 runs twice: as shipped (one warm page reused across episodes and wiped between them, see
``clawgym/envs/gui/browser.py``) and with ``reuse_pages=False`` (a new browser context per episode).
The floor of a fresh-context reset is raw Playwright: close the context, open a new one, a page, and
``goto`` the page (no observation); its step is a bare ``fill`` or ``click`` (no observation either).

BrowserGym (``pip install --no-deps browsergym-core beautifulsoup4 lxml``: it pins playwright==1.44,
which would downgrade ours) launches Chromium twice per reset (the page and a chat window), and its
chat launch takes no launch options; so ``BrowserType.launch`` is patched, while BrowserGym runs, to
pass ``executable_path``. Nothing else of it changes. Rows: BrowserGym as shipped (task ``slow_mo``
1000 ms, 0.5 s ``pre_observation_delay``) and tuned (both 0). Playwright allows one sync driver per
thread and BrowserGym keeps a global one, so each side lives in its own worker thread.

Run: ``.venv/bin/python benchmarks/gui_step.py [--steps 40] [--resets 20] [--block 10] [--skip-browsergym]``
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import threading
import time
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from clawgym.envs.gui import GUIEnv, act  # noqa: E402
from clawgym.envs.gui.browser import CHROMIUM_ARGS, DEFAULT_CHROMIUM  # noqa: E402
from clawgym.envs.gui.server import TaskServer  # noqa: E402
from clawgym.envs.gui.tasks.forms import FORM_FILL  # noqa: E402

CHROMIUM = os.environ.get("CLAWGYM_CHROMIUM") or DEFAULT_CHROMIUM
SEED = 0


class Worker:
    """A thread that owns some envs and runs calls on them, one at a time, for the main thread."""

    def __init__(self) -> None:
        self.calls: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            fn, reply = self.calls.get()
            if fn is None:
                return
            try:
                reply.put((True, fn()))
            except BaseException as exc:
                reply.put((False, exc))

    def call(self, fn: Callable[[], Any]) -> Any:
        reply: queue.Queue = queue.Queue()
        self.calls.put((fn, reply))
        ok, value = reply.get()
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        self.calls.put((None, None))
        self.thread.join()


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


class ClawgymRunner:
    def __init__(self, screenshots: bool, reuse_pages: bool = True) -> None:
        self.env = GUIEnv(tasks=[FORM_FILL], screenshots=screenshots, max_turns=100_000, reuse_pages=reuse_pages)
        self.env.reset(seed=SEED)  # the browser launch, not counted

    def reset(self) -> float:
        seconds = timed(lambda: self.env.reset(seed=SEED))
        self.name, self.submit = self.env.view.find("textbox", "Full name"), self.env.view.find("button", "Submit")
        return seconds

    def step(self, i: int) -> float:
        action = act("type", ref=self.name, text=f"Ada {i}") if i % 2 == 0 else act("click", ref=self.submit)
        t = time.perf_counter()
        _, _, terminated, truncated, info = self.env.step(action)
        seconds = time.perf_counter() - t
        assert info["tool_errors"] == 0 and not (terminated or truncated), info
        return seconds

    def close(self) -> None:
        self.env.close()


class PlaywrightRunner:
    """The floor: Playwright alone, a new context + page + goto per reset, a bare fill or click per step."""

    def __init__(self, url: str) -> None:
        from playwright.sync_api import sync_playwright

        self.url = url
        self.driver = sync_playwright().start()
        self.browser = self.driver.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        self.context: Any = None
        self.reset()

    def reset(self) -> float:
        t = time.perf_counter()
        if self.context is not None:
            self.context.close()
        self.context = self.browser.new_context(viewport={"width": 800, "height": 600}, service_workers="block")
        self.page = self.context.new_page()
        self.page.goto(self.url, wait_until="domcontentloaded")
        return time.perf_counter() - t

    def step(self, i: int) -> float:
        t = time.perf_counter()
        if i % 2 == 0:
            self.page.fill("#name", f"Ada {i}")
        else:
            self.page.get_by_role("button", name="Submit").click()
        return time.perf_counter() - t

    def close(self) -> None:
        self.browser.close()
        self.driver.stop()


class BrowserGymRunner:
    def __init__(self, url: str, tuned: bool) -> None:
        from browsergym.core.env import BrowserEnv
        from browsergym.core.task import AbstractBrowserTask

        class SamePage(AbstractBrowserTask):
            @classmethod
            def get_task_id(cls) -> str:
                return "clawgym-form-fill"

            def __init__(self, seed: int) -> None:
                super().__init__(seed)
                if tuned:
                    self.slow_mo = 0

            def setup(self, page: Any) -> tuple[str, dict]:
                page.goto(url)
                return "Fill the form.", {}

            def validate(self, page: Any, chat_messages: list) -> tuple[float, bool, str, dict]:
                return 0.0, False, "", {}

            def teardown(self) -> None:
                pass

        self.env = BrowserEnv(task_entrypoint=SamePage, headless=True, pre_observation_delay=0.0 if tuned else 0.5)
        self.env.reset(seed=SEED)

    def reset(self) -> float:
        seconds = timed(lambda: self.env.reset(seed=SEED))
        page = self.env.page
        self.name = page.get_attribute("#name", "bid")
        self.submit = page.evaluate(
            "() => Array.from(document.querySelectorAll('button')).find(b => b.textContent === "
            "'Submit').getAttribute('bid')")
        return seconds

    def step(self, i: int) -> float:
        action = f'fill("{self.name}", "Ada {i}")' if i % 2 == 0 else f'click("{self.submit}")'
        t = time.perf_counter()
        obs, *_ = self.env.step(action)
        seconds = time.perf_counter() - t
        assert not obs["last_action_error"], obs["last_action_error"]
        return seconds

    def close(self) -> None:
        self.env.close()


def patch_launch() -> Callable[[], None]:
    """Give every Playwright Chromium launch our executable unless it names one; returns the undo."""
    from playwright.sync_api._generated import BrowserType

    original = BrowserType.launch

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("executable_path", CHROMIUM)
        return original(self, *args, **kwargs)

    BrowserType.launch = launch

    def undo() -> None:
        BrowserType.launch = original

    return undo


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--resets", type=int, default=20)
    parser.add_argument("--browsergym-resets", type=int, default=4,
                        help="BrowserGym resets (two browser launches each)")
    parser.add_argument("--shipped-steps", type=int, default=10, help="steps for BrowserGym as shipped (~1.5 s each)")
    parser.add_argument("--skip-browsergym", action="store_true")
    parser.add_argument("--block", type=int, default=1,
                        help="consecutive calls per env before the next takes its turn (1: strict round robin); a "
                             "new-context reset leaves a renderer starting and one exiting, which lands in the next "
                             "env's call, so larger blocks keep that cross-talk to the first call of each block")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    server = TaskServer({FORM_FILL.id: FORM_FILL})
    url = server.url(FORM_FILL, SEED)
    ours, raw, theirs = Worker(), Worker(), Worker()
    runners: list[tuple[str, Worker, Any, int, int]] = [
        ("clawgym GUI-v0 (warm page, wiped)", ours, ours.call(lambda: ClawgymRunner(False)), args.resets, args.steps),
        ("clawgym GUI-v0, reuse_pages=False (new context)", ours, ours.call(lambda: ClawgymRunner(False, False)),
         args.resets, args.steps),
        ("clawgym GUI-v0, screenshots=True", ours, ours.call(lambda: ClawgymRunner(True)), args.resets, args.steps),
        ("raw Playwright: new context + page + goto; bare fill/click", raw, raw.call(lambda: PlaywrightRunner(url)),
         args.resets, args.steps),
    ]
    undo = None
    if not args.skip_browsergym:
        try:
            undo = patch_launch()
            runners.append(("BrowserGym, tuned (slow_mo 0, no delay)", theirs,
                            theirs.call(lambda: BrowserGymRunner(url, True)), args.browsergym_resets, args.steps))
            runners.append(("BrowserGym as shipped (slow_mo 1000 ms, 0.5 s delay)", theirs,
                            theirs.call(lambda: BrowserGymRunner(url, False)),
                            args.browsergym_resets, args.shipped_steps))
        except ImportError as exc:
            print(f"(BrowserGym not installed: {exc}; pip install --no-deps browsergym-core beautifulsoup4 lxml)")
    resets: dict[str, list[float]] = {name: [] for name, *_ in runners}
    steps: dict[str, list[float]] = {name: [] for name, *_ in runners}
    try:
        block = max(1, args.block)
        for start in range(0, max(n for *_, n, _ in runners), block):
            for name, worker, runner, n_resets, _ in runners:
                for i in range(start, min(start + block, n_resets)):
                    resets[name].append(worker.call(runner.reset))
        for start in range(0, max(n for *_, n in runners), block):
            for name, worker, runner, _, n_steps in runners:
                for i in range(start, min(start + block, n_steps)):
                    steps[name].append(worker.call(lambda: runner.step(i)))
    finally:
        for _, worker, runner, *_ in runners:
            worker.call(runner.close)
        ours.stop()
        raw.stop()
        theirs.stop()
        if undo:
            undo()
        server.close()

    base = statistics.median(steps[runners[0][0]])
    print(f"\nGUI latency, same page ({FORM_FILL.id}), Chromium {CHROMIUM}, {os.cpu_count()} CPUs, "
          f"1-min load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    print("| env | reset p50 (ms) | reset p95 (ms) | step p50 (ms) | step p95 (ms) | "
          "step p50 vs GUI-v0 | resets / steps |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, *_ in runners:
        r, s = resets[name], steps[name]
        print(f"| {name} | {1000 * pct(r, .5):.0f} | {1000 * pct(r, .95):.0f} | {1000 * pct(s, .5):.1f} | "
              f"{1000 * pct(s, .95):.1f} | {statistics.median(s) / base:.1f}x | {len(r)} / {len(s)} |")


if __name__ == "__main__":
    main()
