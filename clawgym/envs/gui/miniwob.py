"""MiniWoB-v0: every MiniWoB++ task of the ``miniwob`` package (1.1.0), on the GUI setting's browser.

The task pages, their JavaScript and CSS come from the package's ``html/`` directory, served by the
GUI env's own task server on 127.0.0.1 (``TaskServer.mount``); nothing of the package's Selenium
driver is used (install it with ``pip install --no-deps miniwob==1.1.0``; ``make setup`` does). The
agent has GUI-v0's tools, observation and render modes.

An episode, as MiniWoB++ runs one: load the task page, ``Math.seedrandom(<page seed>)`` (a number,
as MiniWoB++'s and BrowserGym's drivers pass it; ``Math.seedrandom("1")`` would give another problem),
set ``core.EPISODE_MAX_TIME``, ``core.startEpisodeReal()``, then the page's utterance is the goal.
The page itself decides the reward: ``core.endEpisode`` sets a raw reward in [-1, 1] and a
time-discounted one; only the first ending of the episode counts (a hook records it, because a click
on MiniWoB's START cover after the end would start a new, unseeded problem). The env ends the episode
as soon as the page has ended it (a right or wrong action, or its timer: raw reward -1).

Choices, written down:

- ``reward="raw"`` (default): the raw reward, as the parity benchmark compares it; ``"discounted"``:
  MiniWoB++'s time-scaled reward; ``"binary"``: BrowserGym's ``float(raw > 0)``. ``info`` always has
  ``raw_reward``, ``discounted_reward`` and ``reason``; ``success`` is ``raw == 1`` (MiniWoB++'s binary).
- ``episode_max_time_s=1000`` (default) lifts the page timer as BrowserGym does, so a reward does not
  depend on how fast the policy's machine is; ``None`` keeps each task's own timer (10 s for most).
- ``reset(seed=s)`` draws the task and a page seed from ``s``; ``options={"page_seed": n}`` runs
  ``Math.seedrandom(n)`` instead (BrowserGym's seed ``s`` is ``RandomState(s).randint(0, 1000000)``).
- The HUD (last reward, time left) is hidden, as BrowserGym removes it: it changes every second.
- The three ``flight.*`` tasks are left out: their page lives in an iframe, which the GUI observation
  does not walk. That leaves 125 tasks.
- ``max_turns=50`` by default (GUI-v0's is 20): use-slider's handle moves one step per arrow key over a
  range of up to 100 (PageUp/PageDown move a fifth of it), so an agent that uses arrows alone needs tens
  of presses; the longest scripted oracle takes 21 actions.
- A task that ends without the page's verdict (``done``, an answer, max_turns) gets reward 0: MiniWoB++
  gives 0 to an episode that did not end.
"""

from __future__ import annotations

import difflib
import importlib.util
import logging
from pathlib import Path
from typing import Any, Callable

from clawgym.core.messages import Message, user
from clawgym.core.tasks import Task, TaskSet
from clawgym.core.tools import ToolResult
from clawgym.envs.gui.browser import PageBroken
from clawgym.envs.gui.env import GUIEnv, _short
from clawgym.envs.gui.server import TaskServer
from clawgym.envs.gui.task import act

log = logging.getLogger(__name__)

INSTALL_HINT = "MiniWoB-v0 needs the miniwob package: pip install --no-deps miniwob==1.1.0 (make setup installs it)"
LEFT_OUT = {"flight.AA", "flight.Alaska", "flight.Alaska-auto"}  # iframe pages: see the module docstring
REWARDS = ("raw", "discounted", "binary")

SYSTEM_PROMPT = """You control a web browser to complete a small task on a web page (MiniWoB++).
After every action you see the page as a list of elements, one per line: [ref] role "name" and state
(value=..., checked, options=[...]). Act with the tools, always using a ref from the latest page:
click, type (fills a field; submit=true presses Enter), select (a dropdown option), check, hover,
press (a key such as Enter), scroll and wait. The page itself decides when the task is over and
scores it; a wrong click can end the episode with a negative reward."""

# Runs after the page's load event (its window.onload shows MiniWoB's START cover first).
START_JS = r"""
([seed, maxTime]) => {
  if (typeof core === 'undefined' || typeof core.startEpisodeReal !== 'function' || typeof genProblem !== 'function')
    return 'the page is not a MiniWoB++ task (no core.startEpisodeReal / genProblem)';
  const style = document.createElement('style');
  style.textContent = '#reward-display, #click-canvas { display: none !important; }';
  document.head.appendChild(style);
  window.__cgEnd = null;
  const end = core.endEpisode;
  core.endEpisode = function (reward, timeProportional, reason) {
    const first = core.EP_TIMER !== null && window.__cgEnd === null;
    end.apply(this, arguments);
    if (first) window.__cgEnd = {raw: WOB_RAW_REWARD_GLOBAL, discounted: WOB_REWARD_GLOBAL,
                                 reason: WOB_REWARD_REASON == null ? null : String(WOB_REWARD_REASON)};
  };
  Math.seedrandom(seed);
  if (maxTime) core.EPISODE_MAX_TIME = maxTime;
  core.startEpisodeReal();
  return null;
}
"""
UTTERANCE_JS = r"""() => { const u = core.getUtterance(); return typeof u === 'object' && u ? u.utterance : u; }"""
END_JS = "() => window.__cgEnd === undefined ? 'missing' : window.__cgEnd"


def html_dir() -> Path:
    """The ``html/`` directory of the installed ``miniwob`` package (found without importing Selenium)."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(INSTALL_HINT)
    return Path(list(spec.submodule_search_locations)[0]) / "html"


def task_ids() -> list[str]:
    """Every task the package registers (``miniwob/<task>-v1``), less the iframe ``flight.*`` tasks."""
    try:
        import gymnasium
        import miniwob  # noqa: F401  (its import registers the ids; the envs themselves are not imported)
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    ids = [key[len("miniwob/"):-len("-v1")] for key in gymnasium.registry
           if key.startswith("miniwob/") and key.endswith("-v1")]
    return sorted(i for i in ids if i not in LEFT_OUT)


def miniwob_tasks(ids: list[str] | None = None) -> TaskSet:
    """The tasks as a TaskSet (split ``test``: MiniWoB++ is a benchmark; train on other page seeds)."""
    known = task_ids()
    chosen = known if ids is None else list(ids)
    for task_id in chosen:
        if task_id not in known:
            close = difflib.get_close_matches(task_id, known, n=3)
            hint = (f"; did you mean {', '.join(close)}?"
                    if close else f"; {len(known)} tasks, e.g. {', '.join(known[:4])}")
            raise ValueError(f"unknown MiniWoB++ task {task_id!r}{hint}")
    return TaskSet([Task(id=t, prompt=f"MiniWoB++ task {t}", split="test", data={"miniwob": t}) for t in chosen],
                   name="miniwob")


class MiniWoBEnv(GUIEnv):
    """MiniWoB++ on GUI-v0's browser and tools; the page computes the reward."""

    default_max_turns = 50

    def __init__(
        self,
        tasks: Any = None,
        *,
        reward: str = "raw",
        episode_max_time_s: float | None = 1000.0,
        ready_timeout_ms: int = 5000,
        html: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.reward_kind = reward
        self.episode_max_time_s = episode_max_time_s
        self.ready_timeout_ms = ready_timeout_ms
        self.html = Path(html) if html is not None else None
        self.page_seed = 0
        self.utterance = ""
        self._page_seed_option: int | None = None
        self._end: dict[str, Any] | None = None
        self._url = ""
        self._oracle: Any = None
        super().__init__(tasks, **kwargs)

    # ---------------------------------------------------------------- tasks
    def load_tasks(self, source: Any) -> TaskSet:
        """None: every task; a list of ids; or Tasks / a TaskSet whose ``data["miniwob"]`` names the page."""
        if source is None or (isinstance(source, list) and all(isinstance(s, str) for s in source)):
            if self.html is not None:  # a user's own MiniWoB-style pages: trust the ids given
                ids = source or sorted(p.stem for p in (self.html / "miniwob").glob("*.html"))
                return TaskSet([Task(id=t, prompt=f"MiniWoB++ task {t}", split="test",
                                     data={"miniwob": t}) for t in ids],
                               name="miniwob")
            return miniwob_tasks(source)
        task_set = source if isinstance(source, TaskSet) else TaskSet.load(source)
        for task in task_set:
            if not task.data.get("miniwob"):
                raise ValueError(f"MiniWoB task {task.id!r} needs data['miniwob'] (the page name, e.g. 'click-test')")
        return task_set

    def page_task(self) -> None:
        return None

    # ---------------------------------------------------------------- episode
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list, dict[str, Any]]:
        options = dict(options or {})
        page_seed = options.pop("page_seed", None)
        self._page_seed_option = None if page_seed is None else int(page_seed)
        observation, info = super().reset(seed=seed, options=options)
        info["page_seed"] = self.page_seed
        return observation, info

    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT

    def task_prompt(self, task: Task) -> str:
        """Start the page's episode here: its utterance is the task prompt (``setup`` then shows the page)."""
        self._fatal, self.view, self._end, self.utterance, self._oracle = None, None, None, "", None
        self.page_seed = self._page_seed_option if self._page_seed_option is not None else self.episode_seed
        try:
            self._start(task)
        except PageBroken as exc:
            self._fatal = str(exc)
        except Exception as exc:  # a page that does not load or never gets ready
            self._fatal = f"the task page did not start: {_short(exc)}"
        return self.utterance or task.prompt

    def _start(self, task: Task) -> None:
        if self.server is None:
            self.server = TaskServer()
        base = self.server.mount("miniwob", self.html or html_dir())
        self._url = f"{base}miniwob/{task.data['miniwob']}.html"
        self.browser.new_episode({self.server.origin})
        self.browser.goto(self._url)
        page = self.browser.page
        max_time = None if self.episode_max_time_s is None else int(self.episode_max_time_s * 1000)
        with self.browser.guard():
            page.wait_for_load_state("load", timeout=self.browser.load_timeout_ms)
            problem = page.evaluate(START_JS, [self.page_seed, max_time])
            if problem:
                raise RuntimeError(problem)
            page.wait_for_function("() => WOB_TASK_READY", timeout=self.ready_timeout_ms)
            self.utterance = str(page.evaluate(UTTERANCE_JS) or "").strip()
            self.browser.settle()

    def setup(self, task: Task) -> list[Message]:
        if self._fatal:
            return [user(f"Error: {self._fatal}. Any action ends the episode.")]
        return self._first_view()

    def page_end(self) -> dict[str, Any] | None:
        """The page's first ending of this episode (raw, discounted, reason), or None while it runs."""
        if self._end is None and not self._fatal and self.browser.page is not None:
            with self.browser.guard():
                end = self.browser.page.evaluate(END_JS)
            if end == "missing":  # the agent reloaded or left the page: the episode cannot be scored
                self._fatal = "the task page was reloaded or left; MiniWoB++ episodes live in one page load"
            else:
                self._end = end
        return self._end

    def score(self, answer: str | None) -> tuple[float, dict[str, Any]]:
        try:
            end = self.page_end()
        except PageBroken as exc:
            self._fatal, end = str(exc), None
        if self._fatal:
            return 0.0, {"success": False, "error": self._fatal, "raw_reward": 0.0, "discounted_reward": 0.0,
                         "page_seed": self.page_seed}
        raw = float(end["raw"]) if end else 0.0
        discounted = float(end["discounted"]) if end else 0.0
        reward = {"raw": raw, "discounted": discounted, "binary": float(raw > 0)}[self.reward_kind]
        return reward, {"success": raw >= 1.0, "raw_reward": raw, "discounted_reward": discounted,
                        "reason": end["reason"] if end else "the page did not end the episode",
                        "page_ended": end is not None, "page_seed": self.page_seed, "utterance": self.utterance}

    def _run(self, fn: Callable[[Any], None]) -> ToolResult:
        """GUI-v0's action, bracketed by a look at the page's verdict: it ends the episode once given."""
        try:
            if not self._fatal and self.page_end() is not None:
                return ToolResult("The task page had already ended the episode (its timer ran out); nothing was done.",
                                  done=True, answer=None)
        except PageBroken as exc:
            self._fatal = str(exc)
        result = super()._run(fn)
        if result.done:
            return result
        try:
            end = self.page_end()
        except PageBroken as exc:
            self._fatal = str(exc)
            return self._end_broken()
        if self._fatal:
            return self._end_broken()
        if end is not None:
            return ToolResult(f"{result.content}\nThe task page ended the episode.",
                              error=result.error, done=True, answer=None)
        return result

    def _goto(self, url: str) -> ToolResult:
        return ToolResult("Error: goto is not available in MiniWoB++ tasks: the task lives on this "
                          "one page.", error=True)

    def _go_back(self) -> ToolResult:
        return ToolResult("Error: go_back is not available in MiniWoB++ tasks: the task lives on this "
                          "one page.", error=True)

    def oracle_action(self) -> Any:
        """The next action of the task's scripted solution (``miniwob_scripts``), which reads only the
        utterance and the observation; NotImplementedError for a task without one."""
        from clawgym.envs.gui.miniwob_scripts import start

        assert self.task is not None and self.view is not None
        try:
            if self._oracle is None:
                self._oracle = start(self.task.data["miniwob"], self.utterance, self.view)
                return next(self._oracle)
            return self._oracle.send(self.view)
        except StopIteration:
            return act("done")


__all__ = ["MiniWoBEnv", "html_dir", "miniwob_tasks", "task_ids"]
