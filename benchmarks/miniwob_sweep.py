"""MiniWoB-v0 sweep: every task with a scripted oracle, solved through refs from the observation alone.

Each scripted oracle (``clawgym/envs/gui/miniwob_scripts.py``) gets only the task's utterance and the
page as the agent sees it (``PageView``), and acts with GUI tool calls on its refs. For every scripted
task and page seed, the sweep plays the oracle in ``clawgym/MiniWoB-v0`` as shipped (default
``max_turns``) and checks that every ref it used was on the latest observation the agent was shown
(the ``[ref]`` lines of the previous message); the page's raw reward decides success. A table per task
(solved / seeds, actions per episode) and the total go to stdout.

Run: ``.venv/bin/python benchmarks/miniwob_sweep.py [--seeds 5] [--tasks click-link use-slider ...]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gymnasium as gym  # noqa: E402

import clawgym  # noqa: E402,F401
from clawgym.envs.gui.miniwob import task_ids  # noqa: E402
from clawgym.envs.gui.miniwob_scripts import SCRIPTS, play_oracle  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="page seeds per task (reset(seed=0..n-1))")
    parser.add_argument("--tasks", nargs="*", default=None, help="default: every scripted task")
    args = parser.parse_args()
    tasks = args.tasks or sorted(SCRIPTS)
    env = gym.make("clawgym/MiniWoB-v0")
    rows, started = [], time.perf_counter()
    try:
        for task in tasks:
            runs = [play_oracle(env, task, seed) for seed in range(args.seeds)]
            rows.append((task, runs))
            print(f"  {task}: {sum(r['solved'] for r in runs)}/{len(runs)}", file=sys.stderr, flush=True)
    finally:
        env.close()
    wall = time.perf_counter() - started

    print(f"\nMiniWoB-v0 sweep: {len(tasks)} scripted tasks of {len(task_ids())}, seeds 0-{args.seeds - 1}, "
          f"max_turns {env.unwrapped.max_turns}; Chromium, {os.cpu_count()} CPUs, {wall:.0f} s\n")
    print("| task | solved | actions (mean / max) | refs not on the latest observation | failures |")
    print("|---|---:|---:|---:|---|")
    for task, runs in rows:
        solved = sum(r["solved"] for r in runs)
        actions = [r["actions"] for r in runs]
        failures = "; ".join(sorted({f"raw {r['raw']:g}" + (f" ({r['error']})" if r["error"] else "")
                                     for r in runs if not r["solved"]}))
        print(f"| {task} | {solved}/{len(runs)} | {sum(actions) / len(actions):.1f} / {max(actions)} | "
              f"{sum(len(r['unseen']) for r in runs)} | {failures} |")
    tasks_solved = sum(all(r["solved"] for r in runs) for _, runs in rows)
    episodes = [r for _, runs in rows for r in runs]
    print(f"\n{tasks_solved}/{len(rows)} tasks solved on every seed; "
          f"{sum(r['solved'] for r in episodes)}/{len(episodes)} "
          f"episodes; longest episode {max(r['actions'] for r in episodes)} actions")
    if tasks_solved < len(rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
