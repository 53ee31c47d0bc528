"""SWE-v0 real-project tasks: validate them (no-op earns 0, gold patch earns 1) and time each project's suite.

    python benchmarks/swe_pypi_tasks.py [--per-project N] [--projects idna-3.10 ...] [--sandbox bwrap]

Every task (or the first N per project) runs twice through the real env: a no-op submission (the base
tree: its FAIL_TO_PASS tests must fail, so the reward is 0) and the gold patch (reward 1). An
evaluation starts a fresh sandbox, rebuilds the base tree, applies the diff, writes the project's
hidden tests and runs its whole pytest suite, so its time is mostly the project's suite. Printed as a
markdown table, one row per project. CI validates one task per project (tests/test_swe_pypi.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

from clawgym.envs.swe.env import SWEEnv

SUBMIT = {"role": "assistant", "content": None,
          "tool_calls": [{"id": "s", "type": "function", "function": {"name": "submit", "arguments": {}}}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-project", type=int, default=0, help="only the first N tasks of each project (0: all)")
    parser.add_argument("--projects", nargs="*", help="only these projects, e.g. idna-3.10 (default: all)")
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()

    env = SWEEnv("pypi", sandbox=args.sandbox, max_turns=5)
    by_project: dict[str, list] = defaultdict(list)
    for task in env.task_set:
        if not args.projects or task.data["repo"] in args.projects:
            by_project[task.data["repo"]].append(task)
    rows, bad = [], []
    try:
        for project, tasks in sorted(by_project.items()):
            chosen = tasks[: args.per_project or None]
            noop_zero = gold_one = 0
            seconds = []
            for task in chosen:
                env.reset(options={"task_id": task.id})
                start = time.perf_counter()
                _, reward, _, _, info = env.step(SUBMIT)
                seconds.append(time.perf_counter() - start)
                failing = {t for t, s in info["test_report"]["FAIL_TO_PASS"].items() if s != "passed"}
                ok = reward == 0.0 and failing == set(task.data["FAIL_TO_PASS"])
                noop_zero += ok
                env.reset(options={"task_id": task.id})
                env.step(env.oracle_action())
                _, reward, *_ = env.step(SUBMIT)
                gold_one += reward == 1.0
                if not ok or reward != 1.0:
                    bad.append(task.id)
            rows.append((project, len(tasks), len(chosen), noop_zero, gold_one, statistics.median(seconds)))
    finally:
        env.close()

    print(f"SWE-v0 real-project tasks, sandbox={args.sandbox}\n")
    print("| project | tasks | validated | no-op 0 (base fails) | gold 1 | eval s (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for project, total, validated, noop, gold, median in rows:
        print(f"| {project} | {total} | {validated} | {noop} | {gold} | {median:.1f} |")
    totals = [sum(r[i] for r in rows) for i in (1, 2, 3, 4)]
    print(f"| all | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | |")
    if bad:
        print(f"\nNOT valid: {', '.join(bad)}")


if __name__ == "__main__":
    main()
