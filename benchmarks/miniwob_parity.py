"""MiniWoB++ parity: the same scripted action sequences through clawgym MiniWoB-v0 and BrowserGym's MiniWoB.

Both read the same task pages: the ``miniwob`` package's ``html/``, served by clawgym's task server on
127.0.0.1 (BrowserGym gets it as ``base_url``), in the same system Chromium. For each task and seed,
BrowserGym's page seed is ``RandomState(seed).randint(0, 1000000)`` (what its MiniWoB task passes to
``Math.seedrandom``); clawgym gets that number as ``options={"page_seed": ...}``, so both pages pose the
same problem (the ``same goal`` column checks it). The scripts (``miniwob_scripts``) read only the
utterance and clawgym's observation and act on its refs. On BrowserGym's side the same observation is
taken of BrowserGym's page (clawgym's snapshot script, with its click-listener hook added to BrowserGym's
browser contexts), and each ref becomes that element's ``bid`` and a high-level action (``click("12")``,
``fill(...)``; a GUI ``check`` is a BrowserGym ``click``, a key press goes to the focused element). That
snapshot is not timed. Rewards compared are MiniWoB++'s raw rewards (BrowserGym's own reward is
``float(raw > 0)``); ``WRONG`` scripts check that both sides agree on -1 and partial rewards too.

BrowserGym runs tuned by default (``slow_mo`` 0, no 0.5 s pre-observation delay: see gui_step.py for
what its shipped sleeps cost); ``--shipped`` keeps its defaults (MiniWoB ``slow_mo`` 100 ms, 0.5 s).

``--all-tasks`` also sweeps every task of MiniWoB-v0 on clawgym alone: reset (seeded), the utterance,
one action accepted. Needs ``make bench-deps`` (browsergym-core and browsergym-miniwob, without deps).

Run: ``.venv/bin/python benchmarks/miniwob_parity.py [--seeds 2] [--all-tasks] [--skip-browsergym] [--tasks ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gymnasium as gym  # noqa: E402

import clawgym  # noqa: E402,F401
from clawgym.envs.gui import act  # noqa: E402
from clawgym.envs.gui.miniwob import html_dir, task_ids  # noqa: E402
from clawgym.envs.gui.miniwob_scripts import SCRIPTS, WRONG  # noqa: E402
from clawgym.envs.gui.observe import LISTEN_JS, SNAPSHOT_JS, PageView  # noqa: E402
from clawgym.envs.gui.server import TaskServer  # noqa: E402
from gui_step import Worker, patch_launch  # noqa: E402

# BrowserGym's action set has no check() (it is commented out there): ticking a box is a click. Its press()
# takes an element: the focused one, as clawgym's press acts on the focused element.
BG_ACTION = {"click": 'click("{id}")', "type": 'fill("{id}", {text!r})', "select": 'select_option("{id}", {option!r})',
             "check": 'click("{id}")', "hover": 'hover("{id}")',
             "press": 'press("{id}", {key!r})', "wait": "noop({ms})"}


def browsergym_page_seed(seed: int) -> int:
    return int(np.random.RandomState(seed).randint(0, 1000000))


class Clawgym:
    def __init__(self) -> None:
        self.env = gym.make("clawgym/MiniWoB-v0", max_turns=100)

    def run(self, task: str, seed: int, script: Any) -> dict[str, Any]:
        inner = self.env.unwrapped
        t = time.perf_counter()
        _, info = self.env.reset(options={"task_id": task, "page_seed": browsergym_page_seed(seed)})
        reset_s = time.perf_counter() - t
        goal, steps_s, ended = inner.utterance, [], False
        actions = script(goal, inner.view)
        try:
            action = next(actions)
            while True:
                t = time.perf_counter()
                _, _, terminated, truncated, info = self.env.step(action)
                steps_s.append(time.perf_counter() - t)
                if terminated or truncated:
                    ended = True
                    break
                action = actions.send(inner.view)
        except StopIteration:
            pass
        if not ended:
            _, _, _, _, info = self.env.step(act("done"))
        return {"goal": goal, "raw": info["raw_reward"], "reset": reset_s, "steps": steps_s}

    def sweep(self, task: str) -> str | None:
        """None when the task resets, shows its utterance and accepts an action; else what went wrong."""
        obs, info = self.env.reset(seed=0, options={"task_id": task})
        if info.get("error"):
            return info["error"]
        if not self.env.unwrapped.utterance:
            return "no utterance"
        _, _, _, truncated, info = self.env.step(act("wait", ms=10))
        return info.get("error") if truncated else None

    def close(self) -> None:
        self.env.close()


class BrowserGym:
    def __init__(self, base_url: str, shipped: bool) -> None:
        import browsergym.miniwob.all as tasks
        from browsergym.core.env import BrowserEnv

        self.classes = {cls.subdomain: cls for cls in vars(tasks).values()
                        if isinstance(cls, type) and getattr(cls, "subdomain", None)}
        self.base_url, self.shipped, self.envs = base_url, shipped, {}
        self.BrowserEnv = BrowserEnv

    def env(self, task: str) -> Any:
        """BrowserGym's env for ``task``; the last task's is closed first (each holds two Chromiums, and
        one per task for all 78 scripted tasks runs the machine out of memory)."""
        if task not in self.envs:
            self.close()
            self.envs = {}
            extra = {} if self.shipped else {"slow_mo": 0, "pre_observation_delay": 0.0}
            self.envs[task] = self.BrowserEnv(task_entrypoint=self.classes[task],
                                              task_kwargs={"base_url": self.base_url}, headless=True, **extra)
        return self.envs[task]

    def run(self, task: str, seed: int, script: Any) -> dict[str, Any]:
        env = self.env(task)
        t = time.perf_counter()
        obs, info = env.reset(seed=seed)
        reset_s = time.perf_counter() - t
        goal, steps_s = obs["goal"], []
        raw, reward = info["task_info"]["RAW_REWARD_GLOBAL"], 0.0
        page = env.unwrapped.page
        actions = script(goal, observe(page))
        try:
            call = next(actions)
            while True:
                action = to_browsergym(page, call)
                t = time.perf_counter()
                obs, reward, terminated, truncated, info = env.step(action)
                steps_s.append(time.perf_counter() - t)
                if obs["last_action_error"]:
                    raise RuntimeError(f"BrowserGym {action}: {obs['last_action_error']}")
                if "RAW_REWARD_GLOBAL" not in info["task_info"]:
                    raise RuntimeError(f"BrowserGym {action}: no RAW_REWARD_GLOBAL in its "
                                       f"task_info {info['task_info']}")
                raw = info["task_info"]["RAW_REWARD_GLOBAL"]
                if terminated or truncated:
                    break
                call = actions.send(observe(page))
        except StopIteration:
            pass
        return {"goal": goal, "raw": raw, "reward": reward, "reset": reset_s, "steps": steps_s}

    def close(self) -> None:
        for env in self.envs.values():
            env.close()


def observe(page: Any) -> PageView:
    """clawgym's observation of a page BrowserGym drives (its elements get ``data-cg-ref`` refs)."""
    return PageView.from_snapshot(page.evaluate(SNAPSHOT_JS, {"maxItems": 400, "maxText": 300}))


def to_browsergym(page: Any, call: dict[str, Any]) -> str:
    """A GUI tool call on a clawgym ref as BrowserGym's high-level action on that element's bid."""
    function = call["tool_calls"][0]["function"]
    name, args = function["name"], json.loads(function["arguments"])
    if name == "press":
        bid = page.evaluate("() => document.activeElement ? document.activeElement.getAttribute('bid') : null")
    elif "ref" in args:
        bid = page.get_attribute(f'[data-cg-ref="{int(args.pop("ref"))}"]', "bid")
    else:
        bid = None
    return BG_ACTION[name].format(id=bid, **args)


def patch_contexts() -> Callable[[], None]:
    """Add clawgym's click-listener hook to every new Playwright browser context; returns the undo."""
    from playwright.sync_api._generated import Browser

    original = Browser.new_context

    def new_context(self: Any, *args: Any, **kwargs: Any) -> Any:
        context = original(self, *args, **kwargs)
        context.add_init_script(LISTEN_JS)
        return context

    Browser.new_context = new_context

    def undo() -> None:
        Browser.new_context = original

    return undo


def ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.0f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2, help="seeds per task (0..n-1)")
    parser.add_argument("--tasks", nargs="*", default=None, help="default: every scripted task")
    parser.add_argument("--all-tasks", action="store_true", help="also sweep every MiniWoB-v0 task on clawgym")
    parser.add_argument("--skip-browsergym", action="store_true")
    parser.add_argument("--shipped", action="store_true", help="BrowserGym with its own slow_mo and delay")
    args = parser.parse_args()

    runs = [(task, kind, script) for task in (args.tasks or sorted(SCRIPTS))
            for kind, script in (("oracle", SCRIPTS[task]), ("wrong", WRONG.get(task))) if script is not None]
    server = TaskServer()
    base_url = server.mount("miniwob", html_dir()) + "miniwob/"
    ours, theirs = Worker(), Worker()
    claw = ours.call(Clawgym)
    bg, undo, undo_contexts = None, None, None
    if not args.skip_browsergym:
        try:
            undo, undo_contexts = patch_launch(), patch_contexts()
            bg = theirs.call(lambda: BrowserGym(base_url, args.shipped))
        except ImportError as exc:
            print(f"(BrowserGym not installed: {exc}; run make bench-deps)")
    rows, failures = [], []
    sweep: list[tuple[str, str | None]] = []
    try:
        for task, kind, script in runs:
            for seed in range(args.seeds):
                try:  # a script that cannot run on one side is a disagreement, not a crash
                    side = "clawgym"
                    mine = ours.call(lambda: claw.run(task, seed, script))
                    side = "BrowserGym"
                    theirs_out = theirs.call(lambda: bg.run(task, seed, script)) if bg else None
                except Exception as exc:
                    failures.append(f"{task} {kind} seed {seed}: {side}: {type(exc).__name__}: {str(exc)[:300]}")
                    continue
                rows.append((task, kind, seed, mine, theirs_out))
                print(f"  {task} {kind} seed={seed}: clawgym raw={mine['raw']}"
                      + (f" BrowserGym raw={theirs_out['raw']}" if theirs_out else ""), file=sys.stderr)
        if args.all_tasks:
            for task in task_ids():
                sweep.append((task, ours.call(lambda: claw.sweep(task))))
    finally:
        ours.call(claw.close)
        if bg:
            theirs.call(bg.close)
        ours.stop()
        theirs.stop()
        for restore in (undo, undo_contexts):
            if restore:
                restore()
        server.close()

    side = "BrowserGym " + ("as shipped" if args.shipped else "tuned (slow_mo 0, no delay)")
    print(f"\nMiniWoB++ parity: same scripted actions, same page seeds; {side}; Chromium, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| task | script | seed | same goal | clawgym raw | BrowserGym raw | BrowserGym reward | agree | "
          "reset ms (clawgym / BG) | step ms (clawgym / BG) |")
    print("|---|---|---:|:---:|---:|---:|---:|:---:|---:|---:|")
    agree = 0
    for task, kind, seed, mine, other in rows:
        if other is None:
            print(f"| {task} | {kind} | {seed} | - | {mine['raw']:g} | - | - | - | {ms([mine['reset']])} / - | "
                  f"{ms(mine['steps'])} / - |")
            continue
        same = mine["goal"] == other["goal"] and float(mine["raw"]) == float(other["raw"])
        agree += same
        if not same:
            failures.append(f"{task} {kind} seed {seed}: {mine} vs {other}")
        print(f"| {task} | {kind} | {seed} | {'yes' if mine['goal'] == other['goal'] else 'NO'} | {mine['raw']:g} | "
              f"{other['raw']:g} | {other['reward']:g} | {'yes' if same else 'NO'} | {ms([mine['reset']])} / "
              f"{ms([other['reset']])} | {ms(mine['steps'])} / {ms(other['steps'])} |")
    if bg:
        all_resets = [[r[3]["reset"] for r in rows], [r[4]["reset"] for r in rows]]
        all_steps = [[s for r in rows for s in r[3]["steps"]], [s for r in rows for s in r[4]["steps"]]]
        print(f"\n{agree}/{agree + len(failures)} episodes agree (same goal, same raw reward) on "
              f"{len({r[0] for r in rows})} tasks; "
              f"median reset {ms(all_resets[0])} ms (clawgym) vs {ms(all_resets[1])} ms ({side}); "
              f"median step {ms(all_steps[0])} ms vs {ms(all_steps[1])} ms")
    if sweep:
        bad = [(t, why) for t, why in sweep if why]
        print(f"\nAll tasks on clawgym: {len(sweep) - len(bad)}/{len(sweep)} load, reset and accept an action")
        for task, why in bad:
            print(f"  {task}: {why}")
    if failures:
        print("\nDisagreements:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
