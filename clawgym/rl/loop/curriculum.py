"""Which task a group plays next: tasks near a 50 % pass rate are drawn most (DESIGN.md "Starting where the
model can act").

GRPO learns only from groups whose rewards differ. A task the policy always passes or always fails gives
all-equal groups, which dynamic sampling drops (the compute is spent, nothing is learnt), so
:class:`PassRateCurriculum` draws tasks in proportion to how likely a group of theirs is to disagree.

Per task id it counts the groups played, their episodes and the successful ones (the trajectory's
``success`` flag; an episode that ended in an error counts as a failure, so a task that always times out
sinks to the floor instead of looking unexplored). The pass rate is the Beta(1,1) posterior mean
``p = (successes + 1) / (episodes + 2)`` and the weight ``max(floor, p * (1 - p))``: an unseen task has
p = 0.5 and the largest weight, 0.25 (it is explored first); a task at 0 % or 100 % sinks to ``floor``
(it is still drawn now and then, so a task the policy starts to solve comes back). Every group played
updates the counts, dropped groups too (they are the evidence that a task is too easy or too hard).

A draw is a function of the rng it is given and of the counts at that moment: the collector passes
``np.random.default_rng([seed, group index])``, so the same counts give the same task.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

MAX_WEIGHT = 0.25  # p(1-p) at p = 0.5


@dataclass
class TaskStats:
    groups: int = 0
    episodes: int = 0
    successes: int = 0


class PassRateCurriculum:
    """Per-task pass rates and the draw weighted by ``max(floor, p(1-p))``; see the module docstring."""

    def __init__(self, floor: float = 0.05) -> None:
        if not 0 <= floor < 1:
            raise ValueError(f"curriculum floor must be in [0, 1), got {floor!r}")
        self.floor = float(floor)
        self.stats: dict[str, TaskStats] = {}

    def update(self, task_id: str, successes: Iterable[bool]) -> None:
        """One played group of ``task_id``: one success flag per trajectory."""
        flags = [bool(s) for s in successes]
        stats = self.stats.setdefault(task_id, TaskStats())
        stats.groups += 1
        stats.episodes += len(flags)
        stats.successes += sum(flags)

    def pass_rate(self, task_id: str) -> float:
        stats = self.stats.get(task_id, TaskStats())
        return (stats.successes + 1) / (stats.episodes + 2)

    def weight(self, task_id: str) -> float:
        p = self.pass_rate(task_id)
        return max(self.floor, p * (1 - p))

    def draw(self, task_ids: Sequence[str], rng: np.random.Generator) -> str:
        """One task id, drawn with probability proportional to its weight."""
        weights = np.array([self.weight(t) for t in task_ids], dtype=np.float64)
        return task_ids[int(rng.choice(len(task_ids), p=weights / weights.sum()))]

    # ---- reporting and state ---------------------------------------------------------------

    def table(self, task_ids: Sequence[str] = ()) -> dict[str, dict[str, float]]:
        """task id -> groups, episodes, successes, pass_rate, weight: the pool's tasks, then any other task seen."""
        ids = list(dict.fromkeys([*task_ids, *self.stats]))
        return {t: {**asdict(self.stats.get(t, TaskStats())), "pass_rate": self.pass_rate(t), "weight": self.weight(t)}
                for t in ids}

    def summary(self, task_ids: Sequence[str] = ()) -> dict[str, float]:
        """A step row's curriculum numbers: tasks seen, and the mean pass rate and weight over the pool."""
        ids = list(task_ids) or list(self.stats)
        return {
            "curriculum_tasks": float(len(ids)),
            "curriculum_tasks_seen": float(sum(t in self.stats for t in ids)),
            "curriculum_mean_pass_rate": float(np.mean([self.pass_rate(t) for t in ids])) if ids else float("nan"),
            "curriculum_mean_weight": float(np.mean([self.weight(t) for t in ids])) if ids else float("nan"),
        }

    def write(self, path: Path, task_ids: Sequence[str] = ()) -> None:
        """:meth:`table` as JSON, atomically (tmp + replace: a reader never sees half a file)."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.table(task_ids), indent=1, sort_keys=False), encoding="utf-8")
        os.replace(tmp, path)

    def state_dict(self) -> dict[str, dict[str, int]]:
        return {t: asdict(s) for t, s in self.stats.items()}

    def load_state_dict(self, state: dict[str, dict[str, int]]) -> None:
        self.stats = {t: TaskStats(**{k: int(v) for k, v in s.items()}) for t, s in state.items()}
