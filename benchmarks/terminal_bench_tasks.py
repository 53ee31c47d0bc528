"""terminal-bench / Harbor task directories on Docker: first and cached reset time, oracle and no-op reward.

For every task of the fixture sets (tests/fixtures/tbench: 10 terminal-bench v1 tasks, 10 Harbor tasks,
written for clawgym) or of the directories given: the first ``reset`` (builds the task's image from
its Dockerfile; with ``--cold`` every image these tasks built before is removed first, so the first
task of each package set pays for its ``apt-get``/``pip install``), a second ``reset`` (the image
cache hit), the image lookup alone inside it (hash the context, find the tag: what the cache adds to
the Docker sandbox's own start), then the oracle's and a do-nothing agent's reward. One private dockerd
(tests/docker_engine.py). Prints a markdown table.

    .venv/bin/python benchmarks/terminal_bench_tasks.py [--cold] [DIR ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import clawgym  # noqa: E402,F401
from clawgym.sandbox.images import build_task_image  # noqa: E402
from tests.docker_engine import start_engine_with_image  # noqa: E402

FIXTURES = [ROOT / "tests" / "fixtures" / "tbench" / "terminal_bench",
            ROOT / "tests" / "fixtures" / "tbench" / "harbor"]


def episode(env, task_id: str, oracle: bool) -> float:
    env.reset(seed=0, options={"task_id": task_id})
    while True:
        action = env.unwrapped.oracle_action() if oracle else "done"
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return reward


def remove_task_images(client) -> None:
    for image in client.images.list(name="clawgym/task"):
        for tag in image.tags:
            client.images.remove(tag, force=True)
    for tag in ("clawgym/python:bookworm", "clawgym/debian:bookworm"):
        try:
            client.images.remove(tag, force=True)
        except Exception:  # not there
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="*", type=Path, default=FIXTURES)
    parser.add_argument("--cold", action="store_true", help="remove clawgym's task and base-layer images first")
    args = parser.parse_args()

    engine = start_engine_with_image()
    rows = []
    try:
        client = engine.client()
        if args.cold:
            remove_task_images(client)
        for directory in args.dirs:
            env = gym.make("clawgym/Terminal-v0", tasks=str(directory), sandbox="docker",
                           sandbox_options={"base_url": engine.base_url})
            try:
                for task in env.unwrapped.task_set:
                    t0 = time.perf_counter()
                    env.reset(seed=0, options={"task_id": task.id})
                    first = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    env.reset(seed=0, options={"task_id": task.id})
                    cached = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    build_task_image(client, task.data["dockerfile"], task.data["context"])
                    lookup = time.perf_counter() - t0
                    rows.append((directory.name, task.id, first, cached, lookup, episode(env, task.id, True),
                                 episode(env, task.id, False)))
                    print(f"  {rows[-1][0]}/{task.id}: first {first:.2f}s cached {cached:.2f}s",
                          file=sys.stderr, flush=True)
            finally:
                env.close()
    finally:
        engine.close()

    print("| layout | task | first reset (s) | cached reset (s) | of which image lookup (ms) | oracle | no-op |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for layout, task_id, first, cached, lookup, oracle, noop in rows:
        print(f"| {layout} | {task_id} | {first:.2f} | {cached:.2f} | {lookup * 1000:.0f} | "
              f"{oracle:.0f} | {noop:.0f} |")
    firsts, cacheds, lookups = [r[2] for r in rows], [r[3] for r in rows], [r[4] * 1000 for r in rows]
    print(f"| all {len(rows)} | median (max) | {statistics.median(firsts):.2f} ({max(firsts):.2f}) | "
          f"{statistics.median(cacheds):.2f} ({max(cacheds):.2f}) | {statistics.median(lookups):.0f} "
          f"({max(lookups):.0f}) | "
          f"{sum(r[5] for r in rows):.0f}/{len(rows)} | {sum(r[6] for r in rows):.0f}/{len(rows)} |")


if __name__ == "__main__":
    main()
