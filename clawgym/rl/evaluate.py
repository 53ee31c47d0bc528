"""Evaluation: every held-out task played once with fixed seeds, greedy by default.

The one implementation behind ``clawgym eval`` and the training loop's before/during/after evals, so a
number printed by one is comparable with a number printed by the other. Errored episodes (an env
crash, a timeout) are counted apart and left out of the means.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Sequence, TypedDict

import numpy as np

from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.rollout import EnvKwargs, EnvSpec, RolloutPool, make_groups
from clawgym.rl.types import Trajectory

EVAL_SEED = 12345


class EvalRow(TypedDict):
    """One row of an eval table: a group's episode counts, means over the episodes that did not error,
    and each named check's pass rate."""

    episodes: int
    errors: int
    mean_reward: float
    success_rate: float
    checks: dict[str, float]


async def play_tasks(env: EnvSpec, policy: Policy, task_ids: Sequence[str] | None = None, *, limit: int | None = None,
                     env_kwargs: EnvKwargs | None = None, sampling: SamplingParams | None = None,
                     num_workers: int = 4, seed: int = EVAL_SEED,
                     episode_timeout_s: float | None = None) -> list[Trajectory]:
    """One episode per task (all of the env's tasks unless ``task_ids``; the first ``limit`` of them)."""
    sampling = sampling or SamplingParams(temperature=0.0, max_tokens=256)
    pool = RolloutPool(env, policy, num_workers=max(1, num_workers), executor="local", env_kwargs=env_kwargs or {},
                       sampling=sampling, episode_timeout_s=episode_timeout_s)
    async with pool:
        ids = list(task_ids) if task_ids else list(await pool.task_ids())
        return await pool.run(make_groups(ids[:limit], 1, seed=seed))


def check_rates(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Pass rate of each named check an env reports in its final info (``info["preferences"]``, as
    OpenClawChat-v0's personas do), over the episodes that did not error; empty when none reports any."""
    passed: dict[str, list[bool]] = defaultdict(list)
    for trajectory in trajectories:
        if trajectory.error is None:
            for name, ok in (trajectory.info.get("preferences") or {}).items():
                passed[name].append(bool(ok))
    return {name: float(np.mean(values)) for name, values in passed.items()}


def eval_rows(trajectories: Sequence[Trajectory], by: str | None = None) -> dict[str, EvalRow]:
    """Rows ``{group: {"episodes", "errors", "mean_reward", "success_rate", "checks"}}``: an ``"all"`` row, plus
    one per value of the final-info key ``by`` (``--by persona`` gives OpenClawChat-v0's score per persona).
    ``checks`` is :func:`check_rates` of the group (the persona's checks one by one)."""
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for trajectory in trajectories:
        groups["all"].append(trajectory)
        if by:
            groups[f"{by}={trajectory.info.get(by)}"].append(trajectory)
    rows = {}
    for name, items in sorted(groups.items()):
        ok = [t for t in items if t.error is None]
        rows[name] = {"episodes": len(items), "errors": len(items) - len(ok),
                      "mean_reward": float(np.mean([t.reward for t in ok])) if ok else float("nan"),
                      "success_rate": float(np.mean([t.success for t in ok])) if ok else float("nan"),
                      "checks": check_rates(items)}
    return rows or {"all": {"episodes": 0, "errors": 0, "mean_reward": float("nan"),
                            "success_rate": float("nan"), "checks": {}}}


def evaluate(env_id: str, policy: Policy, *, split: str | None = "test", by: str | None = None,
             limit: int | None = None, env_kwargs: EnvKwargs | None = None, max_tokens: int = 256,
             temperature: float = 0.0, num_workers: int = 4, seed: int = EVAL_SEED) -> dict[str, EvalRow]:
    """Synchronous :func:`play_tasks` + :func:`eval_rows` on a split (what ``clawgym eval`` prints)."""
    kwargs = dict(env_kwargs or {})
    if split:
        kwargs["split"] = split
    trajectories = asyncio.run(play_tasks(env_id, policy, limit=limit, env_kwargs=kwargs, num_workers=num_workers,
                                          seed=seed,
                                          sampling=SamplingParams(temperature=temperature, max_tokens=max_tokens)))
    return eval_rows(trajectories, by)


def format_table(rows: dict[str, dict[str, float]], title: str) -> str:
    lines = [f"### {title}", "", "| group | episodes | errors | mean reward | success |", "|---|---:|---:|---:|---:|"]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['episodes']} | {row['errors']} | {row['mean_reward']:.3f} | "
                     f"{row['success_rate']:.3f} |")
    checks = {name: row["checks"] for name, row in rows.items() if row.get("checks")}
    if checks:  # the env's named checks, one by one: what the mean reward is made of
        lines += ["", "| group | " + " | ".join(next(iter(checks.values()))) + " |",
                  "|---|" + "---:|" * len(next(iter(checks.values())))]
        for name, rates in checks.items():
            lines.append(f"| {name} | " + " | ".join(f"{rate:.3f}" for rate in rates.values()) + " |")
    return "\n".join(lines)
