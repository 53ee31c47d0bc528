"""What the RL loop is told (:class:`LoopConfig`), what it hands back (:class:`LoopResult`), its file names."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PENDING_FILE = "pending.jsonl"
TRAINED_FILE = "trained_ids.jsonl"
CHECKPOINT_DIR = "checkpoint"
LOOP_STATE = "loop_state.json"
CURRICULUM_FILE = "curriculum.json"
EVAL_TRANSCRIPTS_FILE = "eval_transcripts.jsonl"  # every held-out episode: what the policy did and what it saw


@dataclass
class LoopConfig:
    """How the four loops run. The trainer's own settings (lr, eps, KL, LoRA) live in TrainerConfig, and so does
    the sampling temperature: the rollouts sample at the temperature the trainer computes logprobs at
    (``TrainerConfig.temperature``, the launchers' ``rollout.temperature``), read from the trainer.

    The launcher config's ``loop`` and ``rollout`` keys and ``judge.workers`` are these fields (types and
    defaults defined here only; see :func:`clawgym.rl.launch.schema.plain_fields`).
    """

    steps: int = 10
    max_minutes: float | None = None  # stop after the step that crosses this training wall time
    batch_groups: int = 4  # GRPO groups per train step
    group_size: int = 4  # G rollouts per task
    num_workers: int = 8  # concurrent episodes (num_workers // group_size groups at once)
    buffer_groups: int = 8  # groups in flight + waiting; >= batch_groups
    max_staleness: int = 2  # policy versions
    staleness: Literal["drop", "reweight"] = "drop"
    reward: Literal["auto", "outcome", "step_wise"] = "auto"
    prm_coef: float = 1.0
    # skip grpo groups whose samples all have A = 0 (all rewards equal: nothing to learn) and play another in
    # their place (DAPO's dynamic sampling); opd, hybrid and opd_topk keep them (their distillation term
    # teaches without reward variance)
    drop_zero_advantage: bool = True
    # the cap on dynamic sampling: a train step waits for at most max_draws_per_batch * batch_groups groups
    # to be played (finished, dropped or not) since the previous step took its batch; at the cap it trains
    # on the groups buffered (fewer than batch_groups), or with none it is skipped (counted as a step, so
    # a setting where every group fails still ends). None: wait for a full batch however long it takes
    max_draws_per_batch: int | None = 8
    # which task a group plays: uniform, or pass_rate (clawgym.rl.loop.curriculum: weight p(1-p) on each
    # task's Beta(1,1) pass rate, so tasks near 50 % and unseen ones are drawn most)
    curriculum: Literal["uniform", "pass_rate"] = "uniform"
    curriculum_floor: float = 0.05  # pass_rate: the least weight a task gets (0.25 is the most), in [0, 1)
    top_p: float = 1.0
    max_tokens: int = 256
    episode_timeout_s: float | None = None
    # concurrent judge calls (None: num_workers). Fewer than the rollout workers judges a batch in waves of
    # that size, and the trainer waits on the last wave (benchmarks/loop_overlap.py; docs/benchmarks.md,
    # "Async vs synchronous loop"); an external judge with a rate limit is the reason to set it lower
    judge_workers: int | None = None
    eval_every: int = 0  # train steps between evals (0: only before/after, when eval_before/eval_after)
    eval_before: bool = False
    eval_after: bool = False
    eval_episodes: int | None = None  # held-out tasks per eval (None: all)
    eval_temperature: float = 0.0  # 0 = greedy
    eval_seed: int = 12345
    checkpoint_every: int = 1
    resume: bool = True
    output_dir: str = "runs/train"
    mode: Literal["async", "sync"] = "async"
    seed: int = 0
    tensorboard: bool = True
    plot: bool = True
    export_final: bool = True  # save the served weights as an HF checkpoint in <output_dir>/final
    # CPython's GIL switch interval while the loop runs (None: leave it). In-process serving, training and
    # the event loop are three threads that each give up the GIL around every torch op; at CPython's 5 ms
    # default a thread that wants it back waits for the others' switch interval (a convoy), which makes
    # overlapped train steps 2-5x slower than alone (benchmarks/loop_overlap.py --switch-interval 0.005)
    switch_interval_s: float | None = 0.0005

    def __post_init__(self) -> None:
        checks = {
            **{name: getattr(self, name) in values for name, values in _CHOICES.items()},
            "steps": self.steps >= 0,
            "batch_groups": self.batch_groups >= 1,
            "group_size": self.group_size >= 1,
            "num_workers": self.num_workers >= 1,
            "buffer_groups": self.buffer_groups >= self.batch_groups,
            "max_staleness": self.max_staleness >= 0,
            "max_tokens": self.max_tokens >= 1,
            "checkpoint_every": self.checkpoint_every >= 0,
            "eval_every": self.eval_every >= 0,
            "judge_workers": self.judge_workers is None or self.judge_workers >= 1,
            "switch_interval_s": self.switch_interval_s is None or self.switch_interval_s > 0,
            "max_draws_per_batch": self.max_draws_per_batch is None or self.max_draws_per_batch >= 1,
            "curriculum_floor": 0 <= self.curriculum_floor < 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if not bad and self.top_p != 1.0:
            # the rollout logprobs are those of the tempered softmax over the full vocabulary; the trainer
            # recomputes them at its temperature (the rollouts' too; TrainerConfig refuses 0, greedy rollouts
            # being drawn from no distribution it could train), never with top-p
            raise ValueError(f"invalid loop settings: rollout top_p={self.top_p!r}; "
                             "training needs a temperature above 0 and top_p 1.0")
        if bad:
            detail = ", ".join(f"{n}={getattr(self, n)!r}" for n in bad)
            hints = {"buffer_groups": "buffer_groups must be >= batch_groups",
                     "max_draws_per_batch": "max_draws_per_batch must be None or >= 1",
                     "curriculum_floor": "curriculum_floor must be in [0, 1)"}
            hints.update({n: f"{n} must be one of {', '.join(map(repr, v))}" for n, v in _CHOICES.items()})
            named = [hints[n] for n in bad if n in hints]
            hint = f" ({'; '.join(named)})" if named else ""
            raise ValueError(f"invalid loop settings: {detail}{hint}")


# the values of each Literal field, read from its type
_CHOICES = {name: typing.get_args(hint) for name, hint in typing.get_type_hints(LoopConfig).items()
            if typing.get_origin(hint) is Literal}


@dataclass
class LoopResult:
    steps: int
    version: int
    history: list[dict[str, float]]  # the step rows, as metrics.jsonl has them
    eval_before: dict[str, float] | None
    eval_after: dict[str, float] | None
    counters: dict[str, float]
    output_dir: Path
    curve_path: Path | None
    eval_warm_start: dict[str, float] | None = None  # the held-out eval right after the warm start
