"""Rollout pool orchestration overhead, measured as such: a 1 s policy, a trivial env, up to 1,024 episodes.

A scripted policy that sleeps a fixed latency (default 1 s, no CPU) drives a trivial env (each step
returns one short message; no tools, no sandbox) for ``--steps`` steps. A zero-cost pool would finish
``concurrency / (steps x latency)`` episodes per second (``ideal``); whatever falls short of it is
the pool's own cost: the event loop, the env thread hop (``local``), the actor round trip (``ray``),
message copies and Turn bookkeeping. Executors: ``local`` (a thread per env), ``asyncio`` (envs on the
event loop, no threads), ``ray`` and ``ray-batched`` (``batch_calls=True``). For each concurrency level
the executors run back to back in this one process (Ray is started once), so they share the machine's
load, which the table states (1-minute load average before and after each row).

    .venv/bin/python benchmarks/rollout_overhead.py                        # 64, 256, 1024; all executors
    .venv/bin/python benchmarks/rollout_overhead.py --executors local asyncio --concurrency 1024

Columns: ``eps/s`` on a warm pool (a warm-up round builds the envs first) and its share of the ideal;
``overhead/step`` = episode wall time / steps - latency, averaged over episodes; ``orchestration CPU/step``
= CPU time per step, in microseconds, of this process (local, asyncio: the env threads included) or of
this process and all its descendants (ray: the actors, raylet and GCS too): the cost that grows with
concurrency, whatever the load.

About a third of the asyncio executor's CPU per step at 1,024 episodes is CPython's cyclic garbage
collector re-scanning the live turns and trajectories (every 700 container allocations, and the
whole heap now and then). ``--gc-threshold 10000`` (``gc.set_threshold(10000, 10, 10)`` for the
measured run) shows what a long-running rollout process gains by collecting less often; the
default leaves CPython's setting alone.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import time
from typing import Any

from clawgym.core.env import AgentEnv
from clawgym.core.messages import Message
from clawgym.core.tasks import Task
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.rollout import RolloutPool, make_groups
from clawgym.sandbox.procs import children_of, stat_fields

TICK = os.sysconf("SC_CLK_TCK")


class TrivialEnv(AgentEnv):
    """Every action gets one short user message back; the episode ends after ``steps`` actions."""

    def __init__(self, steps: int = 4, **kwargs: Any) -> None:
        self.steps = steps
        super().__init__([Task("t0", "count"), Task("t1", "count again")], max_turns=steps + 1, **kwargs)

    def on_message(self, message: Message) -> tuple[list[Message], bool, str | None]:
        return [{"role": "user", "content": f"ok {self.turn}"}], self.turn >= self.steps, None


def reply(messages: list[Message]) -> str:
    return f"step {len(messages)}"


def tree_cpu_s() -> float:
    """CPU seconds (user + system) of this process and every live descendant (Ray's daemons, actors)."""
    total, stack = 0.0, [os.getpid()]
    while stack:
        pid = stack.pop()
        fields = stat_fields(pid)
        if fields is not None:  # utime and stime are fields 14 and 15 of /proc/<pid>/stat
            total += (int(fields[11]) + int(fields[12])) / TICK
        stack += children_of(pid)
    return total


async def measure(executor: str, concurrency: int, args: argparse.Namespace) -> dict[str, Any]:
    policy = ScriptedPolicy(reply, latency_s=args.latency_ms / 1000)
    options = None
    if executor.startswith("ray"):
        options = {"batch_calls": executor == "ray-batched", "num_actors": args.ray_actors}
    episodes = args.rounds * concurrency
    load_before = os.getloadavg()[0]
    pool = RolloutPool(TrivialEnv, policy, num_workers=concurrency, executor=executor.split("-")[0],
                       env_kwargs={"steps": args.steps}, env_name="trivial", executor_options=options)
    async with pool:
        await pool.run(make_groups(["t0"] * concurrency, 1, seed=0))  # warm-up: build every env
        specs = make_groups(["t0", "t1"] * (episodes // 2), 1, seed=1)
        cpu_s = tree_cpu_s if executor.startswith("ray") else time.process_time
        threshold = gc.get_threshold()
        if args.gc_threshold:
            gc.set_threshold(args.gc_threshold, 10, 10)
        try:
            started, cpu_started = time.perf_counter(), cpu_s()
            trajectories = await pool.run(specs)
            wall, cpu = time.perf_counter() - started, cpu_s() - cpu_started
        finally:
            gc.set_threshold(*threshold)
    errors = [t.error for t in trajectories if t.error]
    if errors:
        raise RuntimeError(f"{len(errors)} episodes failed, e.g. {errors[0]}")
    steps = sum(len(t.turns) for t in trajectories)
    latency = args.latency_ms / 1000
    ideal = concurrency / (args.steps * latency)
    return {
        "executor": executor,
        "concurrency": concurrency,
        "episodes": len(trajectories),
        "wall_s": wall,
        "episodes_per_s": len(trajectories) / wall,
        "ideal_episodes_per_s": ideal,
        "share_of_ideal": len(trajectories) / wall / ideal,
        "overhead_per_step_ms": statistics.mean(t.wall_s / len(t.turns) - latency for t in trajectories) * 1000,
        "cpu_per_step_us": cpu / steps * 1e6,
        "load": (load_before, os.getloadavg()[0]),
    }


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        f"policy latency {args.latency_ms:g} ms, {args.steps} steps/episode, {args.rounds} episodes per slot; "
        f"{os.cpu_count()} CPUs; gc threshold {args.gc_threshold or gc.get_threshold()[0]}",
        "",
        "| concurrency | executor | eps/s | ideal eps/s | % of ideal | overhead/step | "
        "orchestration CPU/step | load (1 min) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['concurrency']} | {r['executor']} | {r['episodes_per_s']:.1f} | {r['ideal_episodes_per_s']:.1f} "
            f"| {100 * r['share_of_ideal']:.0f} % | {r['overhead_per_step_ms']:.0f} ms | {r['cpu_per_step_us']:.0f} µs "
            f"| {r['load'][0]:.1f} -> {r['load'][1]:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    choices = ["local", "asyncio", "ray", "ray-batched"]
    parser.add_argument("--executors", nargs="+", default=choices, choices=choices)
    parser.add_argument("--concurrency", nargs="+", type=int, default=[64, 256, 1024])
    parser.add_argument("--latency-ms", type=float, default=1000.0)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="episodes per slot in the measured run")
    parser.add_argument("--ray-cpus", type=int, default=2)
    parser.add_argument("--ray-actors", type=int, default=None, help="default: one per Ray CPU")
    parser.add_argument("--gc-threshold", type=int, default=None,
                        help="gc.set_threshold(N, 10, 10) for the measured runs")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args()

    uses_ray = any(e.startswith("ray") for e in args.executors)
    if uses_ray:
        import ray

        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        for concurrency in args.concurrency:
            for executor in args.executors:
                rows.append(asyncio.run(measure(executor, concurrency, args)))
                print(table(rows[-1:], args).splitlines()[-1], flush=True)
    finally:
        if uses_ray:
            ray.shutdown()
    print()
    print(table(rows, args))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
