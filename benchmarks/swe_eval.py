"""SWE-v0: how long a reset and an evaluation take, median over the bundled tasks.

    python benchmarks/swe_eval.py [--tasks N] [--sandbox bwrap]

A reset starts the episode's sandbox, unpacks the base tree and makes the base commit. Evaluating a
submission reads the agent's diff, starts a fresh sandbox, rebuilds the base, applies the diff,
writes the hidden tests and runs them. Both are measured around the real env calls
(``env.reset`` and the ``submit`` step), with the gold patch applied beforehand so the full test
suite runs to success. Printed as a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time

from clawgym.envs.swe.env import SWEEnv
from clawgym.sandbox import make_sandbox
from clawgym.sandbox.base import SandboxConfig


def bash(command: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "b", "type": "function", "function": {"name": "bash", "arguments": {"command": command}}}]}


SUBMIT = {"role": "assistant", "content": None,
          "tool_calls": [{"id": "s", "type": "function", "function": {"name": "submit", "arguments": {}}}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=0, help="only the first N bundled tasks (0: all)")
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()

    env = SWEEnv(sandbox=args.sandbox, max_turns=5)
    tasks = list(env.task_set)[: args.tasks or None]
    spawn, resets, evals_gold, evals_noop, solved = [], [], [], [], 0
    try:
        for task in tasks:
            start = time.perf_counter()
            sandbox = make_sandbox(args.sandbox, SandboxConfig(workdir="/repo"))
            sandbox.run("true")
            sandbox.close()
            spawn.append(time.perf_counter() - start)

            start = time.perf_counter()
            env.reset(options={"task_id": task.id})
            resets.append(time.perf_counter() - start)
            env.step(bash(f"git apply <<'EOF'\n{task.data['patch']}EOF"))
            start = time.perf_counter()
            _, reward, *_ = env.step(SUBMIT)
            evals_gold.append(time.perf_counter() - start)
            solved += int(reward == 1.0)

            env.reset(options={"task_id": task.id})
            start = time.perf_counter()
            env.step(SUBMIT)
            evals_noop.append(time.perf_counter() - start)
    finally:
        env.close()

    def row(name: str, values: list[float]) -> str:
        return (f"| {name} | {statistics.median(values) * 1000:.0f} | {min(values) * 1000:.0f} | "
                f"{max(values) * 1000:.0f} |")

    print(f"SWE-v0, {len(tasks)} bundled tasks, sandbox={args.sandbox}; gold patch resolved {solved}/{len(tasks)}\n")
    print("| step | median ms | min ms | max ms |")
    print("|---|---:|---:|---:|")
    print(row("sandbox start + first command + close", spawn))
    print(row("reset (sandbox, base tree, base commit)", resets))
    print(row("evaluate gold submission (diff, fresh sandbox, apply, hidden tests)", evals_gold))
    print(row("evaluate no-op submission", evals_noop))


if __name__ == "__main__":
    main()
