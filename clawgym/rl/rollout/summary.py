"""Summaries of finished trajectories and the body of ``clawgym rollout`` (play, judge, write turns)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.rollout.episode import EnvKwargs, EnvSpec, TrajectorySink, make_groups
from clawgym.rl.rollout.pool import RolloutPool
from clawgym.rl.types import JSONObject, Trajectory, Turn

if TYPE_CHECKING:
    from clawgym.rl.judge.base import Judge


def summarize(trajectories: Sequence[Trajectory]) -> JSONObject:
    """Counts and means for logs and the CLI."""
    ok = [t for t in trajectories if t.error is None]
    return {
        "episodes": len(trajectories),
        "errors": len(trajectories) - len(ok),
        "turns": sum(len(t.turns) for t in trajectories),
        "mean_reward": float(np.mean([t.reward for t in ok])) if ok else 0.0,
        "success_rate": float(np.mean([t.success for t in ok])) if ok else 0.0,
    }


# ---------------------------------------------------------------------------------------------- CLI entry
async def rollout_and_judge(
    env: EnvSpec,
    policy: Policy,
    n: int,
    *,
    out_path: str | os.PathLike | None = None,
    judge: Judge | Sequence[Judge] | None = None,
    group_size: int = 1,
    num_workers: int = 4,
    executor: str = "local",
    seed: int = 0,
    task_ids: Sequence[str] | None = None,
    episode_timeout_s: float | None = None,
    env_kwargs: EnvKwargs | None = None,
    sampling: SamplingParams | None = None,
    judge_workers: int = 4,
    executor_options: dict[str, object] | None = None,
    on_trajectory: TrajectorySink | None = None,
) -> tuple[list[Trajectory], JSONObject]:
    """Play ``n`` episodes (``n // group_size`` groups), judge every turn, append turns to ``out_path``.

    Each turn is written once, as soon as all judges are done with it (or as soon as it exists when
    there is no judge), so a crash loses at most the turns in flight. ``judge`` is a judge or a list
    of judges (see :mod:`clawgym.rl.judge`). Returns the trajectories and a summary.
    """
    from clawgym.rl.types import write_jsonl

    if n < 1 or n % group_size:
        raise ValueError(f"n ({n}) must be a positive multiple of group_size ({group_size})")
    written = 0

    def record(turn: Turn) -> None:
        nonlocal written
        if out_path is not None:
            write_jsonl(out_path, [turn])
        written += 1

    stage = None
    if judge is not None:
        from clawgym.rl.judge import JudgeStage

        stage = JudgeStage(judge, workers=judge_workers, on_judged=record)
        await stage.start()
    started = time.perf_counter()
    pool = RolloutPool(
        env,
        policy,
        num_workers=num_workers,
        executor=executor,
        env_kwargs=env_kwargs,
        sampling=sampling,
        episode_timeout_s=episode_timeout_s,
        on_turn=stage.submit if stage is not None else record,
        executor_options=executor_options,
    )
    try:
        async with pool:
            groups = n // group_size
            if task_ids:
                specs = make_groups([task_ids[i % len(task_ids)] for i in range(groups)], group_size, seed)
            else:
                specs = await pool.sample_groups(groups, group_size, seed)
            trajectories = await pool.run(specs, on_trajectory=on_trajectory)
    finally:
        if stage is not None:
            await stage.close()
    summary = summarize(trajectories)
    summary.update(turns_written=written, wall_s=time.perf_counter() - started, timeouts=pool.stats.timeouts)
    if stage is not None:
        summary["judge"] = dataclasses.asdict(stage.stats)
    return trajectories, summary


def run_rollout_cli(env: EnvSpec, policy: Policy, n: int, *, out_path: str | os.PathLike,
                    judge: Judge | Sequence[Judge] | None = None, **options: object) -> JSONObject:
    """The body of ``clawgym rollout [--judge ...]``: a fresh ``out_path`` of judged turns; returns the summary.

    ``options`` are those of :func:`rollout_and_judge` (group_size, num_workers, executor, seed, ...).
    """
    from pathlib import Path

    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("", encoding="utf-8")
    _, summary = asyncio.run(rollout_and_judge(env, policy, n, out_path=path, judge=judge, **options))
    summary["out_path"] = str(path)
    return summary
