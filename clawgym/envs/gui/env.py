"""GUI-v0: a web browser (system Chromium via Playwright) as a Gymnasium environment.

The agent sees the page as text (``observe.py``: ``[12] button "Submit"`` lines with stable refs, the
URL, the title, the focused element, the last action's error) and acts with tool calls: ``click``,
``type``, ``select``, ``check``, ``hover``, ``press``, ``scroll``, ``goto``, ``go_back``, ``wait`` and
``done``. Each tool result carries the page as it is after the action. A message without tool calls
is the final answer, like ``done``.

One Chromium per env (launched on the first reset) and one warm page reused across episodes, wiped
between them (``browser.py``: storage, cookies, history, caches; a new context after a crash or hang;
``reuse_pages=False`` opens a new context per episode, whose renderer start then dominates a reset); pages
come from the env's own task server on 127.0.0.1, and every request to an origin that is not allowed
is aborted. Tasks (``tasks/``) are seeded page generators with Python checkers and oracles; users add
their own with :class:`PageTask` or point at allow-listed URLs with :func:`url_task`.

**Threads:** an env must be used from one thread (Playwright's sync API); the browser starts on the
first ``reset`` in the calling thread. Not for use inside a running asyncio loop: call it via
``asyncio.to_thread`` or a worker thread.

A page that hangs (endless script, alert storm), crashes or navigates away from the allowed origins
ends the episode: ``truncated=True``, reward 0, ``info["error"]`` says why; the next ``reset`` works.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, Callable, SupportsFloat

import numpy as np

from clawgym.core.env import AgentEnv, EpisodeOptions
from clawgym.core.messages import Message, user
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import FunctionTool, Tool, ToolResult, arguments_schema, prop
from clawgym.envs.gui.browser import Browser, PageBroken, origin_of
from clawgym.envs.gui.observe import PageView
from clawgym.envs.gui.server import TaskServer
from clawgym.envs.gui.task import PageTask, act, normalise

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = logging.getLogger(__name__)

SYSTEM_PROMPT = """You control a web browser to complete a task on a web page.
After every action you see the page as a list of elements, one per line: [ref] role "name" and state
(value=..., checked, options=[...]). Act with the tools, always using a ref from the latest page:
click, type (fills a field; submit=true presses Enter; dates as YYYY-MM-DD), select (a dropdown option),
check (tick or untick), hover, press (a key such as Enter or ArrowDown), scroll, goto (a URL on the
task's site), go_back and wait. When the task is complete, call done; if the task asks a question, pass
the answer to done."""


class ActionError(Exception):
    """The action could not be carried out (bad ref, option, URL): shown to the agent as an error."""


REF = prop("integer", "The element's ref, the number in [brackets] in the latest page.")


class GUIEnv(AgentEnv):
    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}
    default_max_turns = 20

    def __init__(
        self,
        tasks: Any = None,
        *,
        chromium: str | None = None,
        viewport: tuple[int, int] = (800, 600),
        screenshots: bool = False,
        allowed_origins: list[str] | tuple[str, ...] = (),
        hang_timeout_s: float = 10.0,
        action_timeout_ms: int = 3000,
        max_elements: int = 400,
        reuse_pages: bool = True,
        **episode: Unpack[EpisodeOptions],
    ) -> None:
        super().__init__(tasks, **episode)
        self.screenshots = screenshots
        self.allowed_origins = [origin_of(o) for o in allowed_origins]
        self.browser = Browser(chromium, viewport=viewport, hang_timeout_s=hang_timeout_s,
                               action_timeout_ms=action_timeout_ms, max_items=max_elements, reuse_pages=reuse_pages)
        self.server: TaskServer | None = None
        self.view: PageView | None = None
        self.params: dict[str, Any] = {}
        self._fatal: str | None = None

    # ---------------------------------------------------------------- tasks
    def load_tasks(self, source: Any) -> TaskSet:
        if source is None:
            from clawgym.envs.gui.tasks import bundled_tasks

            return TaskSet([t.to_task() for t in bundled_tasks()], name="gui")
        if isinstance(source, PageTask):
            source = [source]
        if isinstance(source, list):
            source = [t.to_task() if isinstance(t, PageTask) else t for t in source]
        task_set = TaskSet.load(source)
        for task in task_set:
            _page_task(task)  # fail early on a task the env cannot run
        return task_set

    def page_task(self) -> PageTask | None:
        return _page_task(self.task) if self.task is not None else None

    # ---------------------------------------------------------------- hooks
    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT

    def task_prompt(self, task: Task) -> str:
        page_task = _page_task(task)
        if page_task is None:
            self.params = {}
            return task.prompt
        self.params = page_task.params(self.episode_seed)
        return self.params["prompt"]

    def setup(self, task: Task) -> list[Message]:
        self._fatal, self.view = None, None
        page_task = _page_task(task)
        if self.server is None:
            self.server = TaskServer()
        allowed = {self.server.origin, *self.allowed_origins}
        if page_task is not None:
            self.server.tasks[page_task.id] = page_task
            url = self.server.url(page_task, self.episode_seed)
        else:
            url = task.data["url"]
            allowed |= {origin_of(url), *(origin_of(o) for o in task.data.get("allowed_origins") or [])}
        self.browser.new_episode(allowed)
        try:
            self.browser.goto(url)
            return self._first_view()
        except PageBroken as exc:
            return self._broken(exc)
        except Exception as exc:  # an unreachable URL task, a page that never loads
            self._fatal = f"the task page did not load: {_short(exc)}"
            return [user(f"Error: {self._fatal}. Any action ends the episode.")]

    def _first_view(self) -> list[Message]:
        """The loaded page as the episode's first observation; a broken page ends the episode at the next action."""
        try:
            self.view = self.browser.snapshot()
            if self.browser.broken:
                raise PageBroken(self.browser.broken)
        except PageBroken as exc:
            return self._broken(exc)
        return [user(self.view.text())]

    def _broken(self, exc: PageBroken) -> list[Message]:
        self._fatal = str(exc)
        return [user(f"Error: the task page could not be shown: {exc}. Any action ends the episode.")]

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        if self._fatal:
            return 0.0, {"success": False, "error": self._fatal}
        try:
            state = self.browser.read_state()
            assert self.task is not None
            page_task = _page_task(self.task)
            if page_task is not None:
                value = page_task.check(self.params, state, answer)
            else:
                value = self._check_url_task(self.task, answer)
        except PageBroken as exc:
            self._fatal = str(exc)
            return 0.0, {"success": False, "error": str(exc)}
        except Exception as exc:
            log.exception("checker of task %s failed", self.task.id if self.task else "?")
            return 0.0, {"success": False, "error": f"the checker failed: {type(exc).__name__}: {exc}"}
        reward = float(value)
        return reward, {"success": reward >= 1.0}

    def _check_url_task(self, task: Task, answer: str | None) -> bool:
        ok = True
        if task.answer is not None:
            ok = normalise(answer) == normalise(task.answer)
        if task.data.get("check_js"):
            with self.browser.guard():
                ok = ok and bool(self.browser.page.evaluate(f"() => !!({task.data['check_js']})"))
        return ok

    def teardown(self) -> None:
        self.browser.end_episode()

    def oracle_action(self) -> Any:
        """The next action of the task's oracle (a generator fed the latest page view)."""
        page_task = _page_task(self.task) if self.task is not None else None
        if page_task is None or page_task.solve is None or self.view is None:
            raise NotImplementedError("this episode's task has no oracle")
        if self.turn == 0 or getattr(self, "_oracle", None) is None:
            self._oracle = page_task.solve(self.params, self.view)
            return next(self._oracle)
        try:
            return self._oracle.send(self.view)
        except StopIteration:
            return act("done")

    # ---------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list, dict[str, Any]]:
        observation, info = super().reset(seed=seed, options=options)
        if self._fatal:
            info["error"] = self._fatal
        if self.screenshots:
            info["screenshot"] = self._screenshot()
        return observation, info

    def step(self, action: Any) -> tuple[list, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        if terminated and self._fatal:  # a broken page is not the end of the task: truncate
            terminated, truncated = False, True
            self._final_info["truncated_by"] = info["truncated_by"] = "page_error"
        if self.screenshots:
            info["screenshot"] = self._screenshot()
        return observation, reward, terminated, truncated, info

    def render(self) -> Any:
        if self.render_mode == "rgb_array":
            return self._screenshot()
        return super().render()

    def close(self) -> None:
        if self._closed:
            return
        try:
            super().close()
        finally:
            self.browser.close()
            if self.server is not None:
                self.server.close()
                self.server = None

    def _screenshot(self) -> np.ndarray:
        try:
            if self.browser.page is not None and not self.browser.broken:
                return self.browser.screenshot()
        except PageBroken:
            pass
        return np.zeros((self.browser.viewport["height"], self.browser.viewport["width"], 3), dtype=np.uint8)

    # ---------------------------------------------------------------- tools
    def make_tools(self) -> list[Tool]:
        return [
            FunctionTool(self._click, "click", "Click an element.", arguments_schema(["ref"], ref=REF)),
            FunctionTool(self._type, "type", "Replace the text of a field with `text`; submit=true then presses Enter.",
                         arguments_schema(["ref", "text"], ref=REF, text=prop("string", "The text to enter."),
                                 submit=prop("boolean", "Press Enter afterwards."))),
            FunctionTool(self._select, "select", "Choose an option of a dropdown by its label.",
                         arguments_schema(["ref", "option"], ref=REF, option=prop("string", "The option's label."))),
            FunctionTool(self._check, "check",
                         "Tick (checked=true, the default) or untick a checkbox, radio or switch.",
                         arguments_schema(["ref"], ref=REF, checked=prop("boolean", "The state to set."))),
            FunctionTool(self._hover, "hover", "Move the mouse over an element.", arguments_schema(["ref"], ref=REF)),
            FunctionTool(self._press, "press",
                         "Press a key or chord on the focused element (Enter, Tab, ArrowDown, Control+A).",
                         arguments_schema(["key"], key=prop("string", "The key, in Playwright's key names."))),
            FunctionTool(self._scroll, "scroll", "Scroll the page.",
                         arguments_schema(["direction"],
                                          direction=prop("string", "Where to scroll.",
                                                         enum=["up", "down", "left", "right"]))),
            FunctionTool(self._goto, "goto",
                         "Open a URL (absolute, or relative to the current page) on the allowed sites.",
                         arguments_schema(["url"], url=prop("string", "The URL."))),
            FunctionTool(self._go_back, "go_back", "Go back to the previous page.", arguments_schema([])),
            FunctionTool(self._wait, "wait", "Wait for the page to update (up to 5000 ms).",
                         arguments_schema([], ms=prop("integer", "Milliseconds to wait, default 500."))),
            FunctionTool(self._done, "done", "Finish the task; pass the answer if the task asks a question.",
                         arguments_schema([], answer=prop("string", "The answer, if any."))),
        ]

    def _run(self, fn: Callable[[Any], None]) -> ToolResult:
        """Do one browser action, then observe; errors become error observations, breakage ends the episode."""
        if self._fatal:
            return self._end_broken()
        error = None
        try:
            self.browser.act(fn)
        except PageBroken as exc:
            self._fatal = str(exc)
            return self._end_broken()
        except ActionError as exc:
            error = str(exc)
        except Exception as exc:  # Playwright's own errors: a timeout, an unknown key ...
            error = _short(exc)
        try:
            view = self.browser.snapshot()
        except PageBroken as exc:
            self._fatal = str(exc)
            return self._end_broken()
        if self.browser.broken:
            self._fatal = self.browser.broken
            return self._end_broken()
        view.error = error
        self.view = view
        return ToolResult(view.text(), error=error is not None)

    def _end_broken(self) -> ToolResult:
        return ToolResult(f"Error: {self._fatal}. The episode ends.", error=True, done=True, answer=None)

    def _element(self, page: Any, ref: int) -> Any:
        loc = self.browser.locator(ref)
        if loc.count() == 0:
            raise ActionError(f"no element [{ref}] on the page; use a ref from the latest page")
        return loc.first

    def _click(self, ref: int) -> ToolResult:
        def do(page: Any) -> None:
            element = self._element(page, ref)
            if element.is_disabled():
                raise ActionError(f"[{ref}] is disabled")
            # The pointer arrives first and what it starts loads (a :hover style that swaps an icon's
            # image) before the press, as under a person's hand; otherwise the press can miss the icon.
            element.hover(timeout=self.browser.action_timeout_ms)
            self.browser.settle(after_action=True)
            element.click(timeout=self.browser.action_timeout_ms, force=True)  # hover ran the actionability checks
        return self._run(do)

    def _type(self, ref: int, text: str, submit: bool = False) -> ToolResult:
        def do(page: Any) -> None:
            loc = self._element(page, ref)
            kind = loc.evaluate("e => e.tagName === 'INPUT' ? e.type : e.tagName.toLowerCase()")
            if kind == "range":
                loc.evaluate("(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true}));"
                             " e.dispatchEvent(new Event('change', {bubbles: true})); }", text)
            elif kind == "select":
                raise ActionError(f"[{ref}] is a dropdown: use select")
            else:
                loc.fill(text, timeout=self.browser.action_timeout_ms)
            if submit:
                loc.press("Enter", timeout=self.browser.action_timeout_ms)
        return self._run(do)

    def _select(self, ref: int, option: str) -> ToolResult:
        def do(page: Any) -> None:
            loc = self._element(page, ref)
            options = loc.evaluate("e => e.tagName === 'SELECT' ? Array.from(e.options).map(o => [o.label || "
                                   "o.text, o.value]) : null")
            if options is None:
                raise ActionError(f"[{ref}] is not a dropdown (select); click it or use type")
            wanted = normalise(option)
            for label, value in options:
                if normalise(label) == wanted or normalise(value) == wanted:
                    loc.select_option(value=value, timeout=self.browser.action_timeout_ms)
                    return
            raise ActionError(f"[{ref}] has no option {option!r}; options: {[label for label, _ in options]}")
        return self._run(do)

    def _check(self, ref: int, checked: bool = True) -> ToolResult:
        return self._run(
            lambda page: self._element(page, ref).set_checked(checked, timeout=self.browser.action_timeout_ms))

    def _hover(self, ref: int) -> ToolResult:
        return self._run(lambda page: self._element(page, ref).hover(timeout=self.browser.action_timeout_ms))

    def _press(self, key: str) -> ToolResult:
        return self._run(lambda page: page.keyboard.press(key))

    def _scroll(self, direction: str) -> ToolResult:
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[direction]
        return self._run(lambda page: page.evaluate(
            "([dx, dy]) => window.scrollBy({left: dx * innerWidth * 0.8, top: dy * innerHeight * 0.8, "
            "behavior: 'instant'})", [dx, dy]))

    def _goto(self, url: str) -> ToolResult:
        def do(page: Any) -> None:
            target = self.browser.resolve(url)
            if not target.startswith(("http://", "https://")) or origin_of(target) not in self.browser.allowed:
                raise ActionError(f"{target} is not on an allowed site ({', '.join(sorted(self.browser.allowed))})")
            page.goto(target, wait_until="domcontentloaded", timeout=self.browser.load_timeout_ms)
        return self._run(do)

    def _go_back(self) -> ToolResult:
        def do(page: Any) -> None:
            if page.go_back(wait_until="domcontentloaded", timeout=self.browser.load_timeout_ms) is None:
                raise ActionError("there is no previous page")
        return self._run(do)

    def _wait(self, ms: int = 500) -> ToolResult:
        return self._run(lambda page: page.wait_for_timeout(max(0, min(int(ms), 5000))))

    def _done(self, answer: str = "") -> ToolResult:
        return ToolResult("Done.", done=True, answer=str(answer))


def _page_task(task: Task) -> PageTask | None:
    """The PageTask behind a Task (an object, or a ``"module:attr"`` import string), or None for a URL task."""
    ref = task.data.get("page_task")
    if ref is None:
        if not task.data.get("url"):
            raise ValueError(f"GUI task {task.id!r} needs data['page_task'] (a PageTask) or data['url']")
        return None
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        ref = getattr(importlib.import_module(module), attr)
        task.data["page_task"] = ref
    if not isinstance(ref, PageTask):
        raise TypeError(f"GUI task {task.id!r}: data['page_task'] must be a PageTask, got {type(ref).__name__}")
    return ref


def _short(exc: BaseException) -> str:
    """Playwright errors carry a call log; the agent needs the first line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for prefix in ("Locator.", "Page.", "Keyboard.", "Frame."):
        if text.startswith(prefix):
            text = text.split(": ", 1)[-1]
    if text.startswith("Timeout") and "exceeded" in text:
        text += " (the element may be hidden, covered or disabled)"
    return text


def run_oracle(env: Any, max_steps: int = 50) -> tuple[float, bool, bool, dict[str, Any]]:
    """Play the current episode with the task's oracle; returns (reward, terminated, truncated, info)."""
    genv: GUIEnv = env.unwrapped
    page_task = genv.page_task()
    if page_task is None or page_task.solve is None:
        raise ValueError("this episode's task has no oracle")
    assert genv.view is not None
    oracle = page_task.solve(genv.params, genv.view)
    action = next(oracle)
    for _ in range(max_steps):
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return float(reward), terminated, truncated, info
        try:
            action = oracle.send(genv.view)
        except StopIteration:
            action = act("done")
    raise RuntimeError(f"the oracle of {page_task.id} did not finish in {max_steps} steps")


__all__ = ["GUIEnv", "PageTask", "act", "run_oracle"]
