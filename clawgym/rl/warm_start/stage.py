"""The warm start: a few epochs of SFT on the setting's own solutions before RL (ReTool's cold start).

A small model that never calls its tools gives GRPO all-fail groups forever; a few hundred of the
setting's oracle episodes, played through the env (:mod:`~clawgym.rl.warm_start.episodes`), teach it the
first step. ``source``:

- ``oracle``: ``episodes`` oracle episodes over the training tasks (each task once before any repeats);
- ``self``: the policy's own successful episodes (rejection sampling), ``self_attempts`` sampled episodes
  per training task: the source for settings whose oracle is a script, or after the oracle's warm start;
- ``oracle+self``: both.

Only the training tasks are played (the loop's ``task_ids`` on its training ``env_kwargs``); a held-out task
id or held-out seed never reaches the warm start (:func:`check_disjoint`). The SFT steps are the trainer's
own (``train_step(samples, method="sft")``: the same model, optimiser and checkpoint as RL), and the new
weights are published to the policy before the first rollout.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np

from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.rollout import EnvKwargs, EnvSpec
from clawgym.rl.types import Sample, Trajectory, write_jsonl
from clawgym.rl.warm_start.config import WarmStartConfig
from clawgym.rl.warm_start.episodes import collect_demonstrations, collect_successes
from clawgym.rl.warm_start.samples import sft_samples

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from clawgym.rl.trainer.base import Trainer

logger = logging.getLogger(__name__)

WARM_START_FILE = "warm_start.jsonl"  # one line per episode played for the warm start (task, seed, source, success)


def check_disjoint(train_ids: Sequence[str], held_out_ids: Sequence[str] | None, by_seed: bool = False) -> None:
    """Refuse a warm start whose training tasks include a held-out one (it would be tested on what it was shown).

    ``by_seed``: the held-out eval plays the training tasks themselves on seeds of its own (MiniWoB's pages),
    which the warm start never plays (:func:`demonstration_plan`'s ``avoid_seeds``), so shared ids are fine."""
    shared = sorted(set(train_ids) & set(held_out_ids or ()))
    if shared and not by_seed:
        raise ValueError(f"{len(shared)} held-out task(s) are among the warm start's training tasks "
                         f"(e.g. {shared[:3]}); the held-out split never reaches the warm start")


def demonstration_plan(task_ids: Sequence[str], episodes: int, seed: int,
                       avoid_seeds: range = range(0)) -> list[tuple[str, int]]:
    """(task id, env seed) of each oracle episode: every task once (a seeded order) before any repeats, on seeds
    outside ``avoid_seeds`` (the held-out eval's)."""
    rng = np.random.default_rng([seed, 7])
    plan: list[tuple[str, int]] = []
    env_seed = seed * 1_000_003 + 500_000
    while len(plan) < episodes:
        for index in rng.permutation(len(task_ids)):
            if len(plan) == episodes:
                break
            while env_seed in avoid_seeds:
                env_seed += 1
            plan.append((task_ids[int(index)], env_seed))
            env_seed += 1
    return plan


@dataclass
class WarmStartResult:
    episodes: int = 0  # played
    kept: int = 0  # successful, trained on
    samples: int = 0
    tokens: int = 0  # trained (assistant) tokens
    steps: int = 0  # SFT optimiser calls (train_step)
    collect_s: float = 0.0
    train_s: float = 0.0
    nll_first: float = float("nan")
    nll_last: float = float("nan")
    by_source: dict[str, int] = dataclasses.field(default_factory=dict)  # kept episodes per source

    def to_row(self) -> dict[str, float | dict[str, int]]:
        return {f"warm_start_{k}": v for k, v in dataclasses.asdict(self).items()}


async def collect(config: WarmStartConfig, env: EnvSpec, env_kwargs: EnvKwargs, policy: Policy,
                  tokenizer: PreTrainedTokenizerBase, task_ids: Sequence[str], *, seed: int, sampling: SamplingParams,
                  rollout_workers: int, executor: str, episode_timeout_s: float | None,
                  avoid_seeds: range = range(0)) -> tuple[list[Trajectory], int]:
    """The warm start's successful episodes and how many were played (oracle and/or the policy's own)."""
    kept: list[Trajectory] = []
    played = 0
    if config.source in ("oracle", "oracle+self") and config.episodes:
        plan = demonstration_plan(task_ids, config.episodes, seed, avoid_seeds)
        demos = await collect_demonstrations(env, env_kwargs, tokenizer, plan, workers=config.workers)
        played += len(demos)
        failed = [t for t in demos if t.error is not None]
        if failed:
            logger.warning("warm start: %d of %d oracle episodes failed (first: %s)", len(failed), len(demos),
                           failed[0].error)
        kept += [t for t in demos if t.error is None and t.success]
    if config.source in ("self", "oracle+self"):
        rng = np.random.default_rng([seed, 11])
        chosen = list(task_ids) if config.self_tasks is None or config.self_tasks >= len(task_ids) else \
            [task_ids[int(i)] for i in rng.choice(len(task_ids), config.self_tasks, replace=False)]
        wins, tried = await collect_successes(env, env_kwargs, policy, chosen, config.self_attempts, sampling,
                                              seed=seed * 1_000_003 + 700_000, workers=rollout_workers,
                                              executor=executor, episode_timeout_s=episode_timeout_s)
        played += tried
        kept += wins
    return kept, played


@contextlib.contextmanager
def learning_rate(trainer: Trainer, lr: float | None) -> Iterator[None]:
    """The optimiser's learning rate set to ``lr`` for the warm start's steps, the trainer's own put back after."""
    if lr is None:
        yield
        return
    groups = getattr(getattr(trainer, "optimizer", None), "param_groups", None)
    if not groups:
        raise ValueError("warm_start.lr sets the torch trainer's optimiser; this trainer has none to set")
    before = [group["lr"] for group in groups]
    for group in groups:
        group["lr"] = lr
    try:
        yield
    finally:
        for group, value in zip(groups, before):
            group["lr"] = value


def train(trainer: Trainer, samples: Sequence[Sample], config: WarmStartConfig, seed: int,
          on_step: Callable[[int, dict[str, float]], None] | None = None) -> tuple[int, list[float], float]:
    """``epochs`` passes of SFT steps over ``samples`` (a seeded shuffle each epoch) at ``config.lr``; returns
    (steps, each step's NLL, seconds). Blocking: the caller runs it in a thread."""
    with learning_rate(trainer, config.lr):
        return _train(trainer, samples, config, seed, on_step)


def _train(trainer: Trainer, samples: Sequence[Sample], config: WarmStartConfig, seed: int,
           on_step: Callable[[int, dict[str, float]], None] | None) -> tuple[int, list[float], float]:
    started = time.perf_counter()
    rng = np.random.default_rng([seed, 13])
    nlls: list[float] = []
    steps = 0
    for _ in range(config.epochs):
        order = rng.permutation(len(samples))
        for start in range(0, len(order), config.batch_size):
            batch = [samples[int(i)] for i in order[start:start + config.batch_size]]
            metrics = trainer.train_step(batch, method="sft")
            steps += 1
            nlls.append(float(metrics.get("nll", float("nan"))))
            if on_step is not None:
                on_step(steps, metrics)
            if config.max_minutes is not None and time.perf_counter() - started > 60 * config.max_minutes:
                logger.info("warm start: time budget of %.1f min reached after %d SFT steps", config.max_minutes, steps)
                return steps, nlls, time.perf_counter() - started
    return steps, nlls, time.perf_counter() - started


async def run_warm_start(config: WarmStartConfig, *, env: EnvSpec, env_kwargs: EnvKwargs, policy: Policy,
                         trainer: Trainer, task_ids: Sequence[str], held_out_ids: Sequence[str] | None,
                         held_out_by_seed: bool, seed: int,
                         sampling: SamplingParams, rollout_workers: int, executor: str = "local",
                         episode_timeout_s: float | None = None, avoid_seeds: range = range(0),
                         log_path: str | Path | None = None,
                         on_step: Callable[[int, dict[str, float]], None] | None = None) -> WarmStartResult:
    """Collect the episodes, train the SFT steps, publish nothing (the caller publishes); see the module docstring."""
    check_disjoint(task_ids, held_out_ids, held_out_by_seed)
    tokenizer = getattr(trainer, "tokenizer", None) or getattr(policy, "tokenizer", None)
    if tokenizer is None:
        raise TypeError("the warm start needs the policy's tokenizer (an in-process hf policy or the torch trainer)")
    result = WarmStartResult()
    t0 = time.perf_counter()
    kept, result.episodes = await collect(config, env, env_kwargs, policy, tokenizer, task_ids, seed=seed,
                                          sampling=sampling, rollout_workers=rollout_workers, executor=executor,
                                          episode_timeout_s=episode_timeout_s, avoid_seeds=avoid_seeds)
    result.collect_s = time.perf_counter() - t0
    if log_path is not None:
        write_jsonl(log_path, [{"task_id": t.task_id, "seed": t.seed, "success": t.success, "turns": len(t.turns),
                                "source": t.info.get("source", "policy")} for t in kept])
    samples = [s for t in kept for s in sft_samples(t)]
    result.kept = len(kept)
    for t in kept:
        source = str(t.info.get("source", "policy"))
        result.by_source[source] = result.by_source.get(source, 0) + 1
    result.samples = len(samples)
    result.tokens = sum(sum(s.loss_mask) for s in samples)
    if not samples:
        logger.warning("warm start: no successful episode to train on (%d played); RL starts from the base weights",
                       result.episodes)
        return result
    logger.info("warm start: %d samples (%d assistant tokens) from %d of %d episodes in %.0f s", len(samples),
                result.tokens, result.kept, result.episodes, result.collect_s)
    result.steps, nlls, result.train_s = await asyncio.to_thread(train, trainer, samples, config, seed, on_step)
    if nlls:
        result.nll_first, result.nll_last = nlls[0], nlls[-1]
    logger.info("warm start: %d SFT steps in %.0f s, NLL %.3f -> %.3f", result.steps, result.train_s,
                result.nll_first, result.nll_last)
    return result
