"""Async RL loop vs the synchronous baseline, on equal terms, with the tiny-random model.

Both loops get the same model (served and judged by one in-process ``HFPolicy``), the same env
(OpenClawChat-v0, scripted teacher persona), the same rollout workers, batch (groups x G), judge and
number of train steps. The only differences are the schedule and the buffer: the synchronous loop
(``mode="sync"``) plays one batch, judges it, trains, publishes, in turn (its buffer holds exactly one
batch); the async loop keeps playing and judging while the trainer works (``buffer_groups`` = 2
batches, ``max_staleness`` 2). The modes run alternately in one process (sync, async, sync, ...), so
both see the same machine load, which the table states.

Where each loop waits, as shares of its wall time (busy = at least one call of that kind running):
``serving`` (rollout generations), ``env`` (env resets and steps), ``judge`` (PRM judge generations),
``trainer busy`` (train step + weight publish), ``trainer idle`` (waiting for judged data) and
``rollouts blocked`` (no episode running: waiting for weights or buffer room).

    .venv/bin/python benchmarks/loop_overlap.py [--steps 6] [--workers 16] [--repeats 2]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

import clawgym  # noqa: F401  (registers the env ids)
from clawgym.core.policy import SamplingParams
from clawgym.rl.judge import PRMJudge
from clawgym.rl.loop import AsyncRLLoop, LoopConfig
from clawgym.rl.policy.hf import HFPolicy
from clawgym.rl.policy.models import load_model
from clawgym.rl.trainer import TorchTrainer, TrainerConfig

ENV = "clawgym/OpenClawChat-v0"
ENV_KWARGS = {"personas": ["teacher"], "max_turns": 1, "split": "train"}


class Busy:
    """Wall time during which at least one call is running (calls may overlap, from any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._since = 0.0
        self.total = 0.0

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._since = time.perf_counter()
            self._running += 1

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                self.total += time.perf_counter() - self._since


class TimedPolicy:
    """The same policy, with its ``generate`` calls timed; everything else passes through."""

    def __init__(self, policy: Any, busy: Busy) -> None:
        self._policy = policy
        self._busy = busy

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        with self._busy:
            return await self._policy.generate(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)


class TimedEnv(gym.Wrapper):
    def __init__(self, env: gym.Env, busy: Busy) -> None:
        super().__init__(env)
        self._busy = busy

    def reset(self, **kwargs: Any) -> Any:
        with self._busy:
            return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        with self._busy:
            return self.env.step(action)


async def run_mode(mode: str, args: argparse.Namespace, out: Path) -> dict[str, float]:
    serve_model, tokenizer = load_model("tiny-random")
    train_model, _ = load_model("tiny-random")
    served = HFPolicy(serve_model, tokenizer, max_batch_size=32)
    serving, env_busy, judging = Busy(), Busy(), Busy()
    policy = TimedPolicy(served, serving)
    judges = []
    if args.judge:
        judge_sampling = SamplingParams(temperature=0.6, max_tokens=args.max_tokens)
        judges = [PRMJudge(TimedPolicy(served, judging), m=1, max_retries=0, sampling=judge_sampling)]
    trainer = TorchTrainer(train_model, tokenizer, TrainerConfig(lr=1e-4, micro_batch_size=8))
    config = LoopConfig(
        steps=args.steps,
        batch_groups=args.batch_groups,
        group_size=4,
        num_workers=args.workers,  # the same for both loops
        buffer_groups=2 * args.batch_groups if mode == "async" else args.batch_groups,
        max_staleness=2,
        max_tokens=args.max_tokens,
        drop_zero_advantage=False,  # random weights: keep every group so the trainer is never starved by design
        output_dir=str(out / f"{mode}-{time.monotonic_ns()}"),
        mode=mode,  # type: ignore[arg-type]
        checkpoint_every=0,
        tensorboard=False,
        plot=False,
        export_final=False,
        seed=args.seed,
    )
    loop = AsyncRLLoop(lambda **kw: TimedEnv(gym.make(ENV, **kw), env_busy), policy, trainer, config,
                       judges=judges, env_kwargs=ENV_KWARGS)
    try:
        result = await loop.run()
    finally:
        await served.close()
    wall = result.counters["wall_s"]
    return {
        "wall_s": wall,
        "samples_per_s": sum(h["samples"] for h in result.history) / wall,
        "trainer_busy": sum(h["time_train_s"] + h["time_publish_s"] for h in result.history) / wall,
        "trainer_idle": result.counters["trainer_wait_s"] / wall,
        "serving": serving.total / wall,
        "env": env_busy.total / wall,
        "judge": judging.total / wall,
        "rollouts_blocked": result.counters["rollout_idle_s"] / wall,
        "staleness": statistics.mean(h["staleness_mean"] for h in result.history) if result.history else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--batch-groups", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2, help="runs per mode, alternating; the table shows means")
    parser.add_argument("--no-judge", dest="judge", action="store_false", help="leave out the PRM judge")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: serving and training each take a core)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    runs: dict[str, list[dict[str, float]]] = {"sync": [], "async": []}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for mode in ("sync", "async"):
                runs[mode].append(asyncio.run(run_mode(mode, args, Path(tmp))))
                loads.append(os.getloadavg()[0])
                print(f"{mode}: {runs[mode][-1]['samples_per_s']:.2f} samples/s", file=sys.stderr)
    rows = {mode: {k: statistics.mean(r[k] for r in rs) for k in rs[0]} for mode, rs in runs.items()}
    print(f"\nRL loop, sync vs async: tiny-random policy{' and PRM judge (m=1)' if args.judge else ''}, {ENV} "
          f"(teacher persona), {args.workers} rollout workers, {args.steps} train steps of {args.batch_groups} groups x 4, "
          f"max_tokens {args.max_tokens}, {args.repeats} alternating runs per loop (means), {os.cpu_count()} CPUs, "
          f"torch threads {args.threads}, 1-min load average {min(loads):.1f}-{max(loads):.1f}\n")
    print("| loop | wall s | samples/s | trainer busy | trainer idle | serving busy | env busy | judge busy "
          "| rollouts blocked | mean staleness |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, label in (("sync", "synchronous (rollout, judge, train, publish in turn)"), ("async", "async (clawgym)")):
        r = rows[mode]
        print(f"| {label} | {r['wall_s']:.1f} | {r['samples_per_s']:.2f} | {r['trainer_busy']:.0%} | {r['trainer_idle']:.0%} "
              f"| {r['serving']:.0%} | {r['env']:.0%} | {r['judge']:.0%} | {r['rollouts_blocked']:.0%} | {r['staleness']:.2f} |")
    speedup = rows["async"]["samples_per_s"] / rows["sync"]["samples_per_s"] if rows["sync"]["samples_per_s"] else float("nan")
    print(f"\nasync / sync samples/s: {speedup:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
