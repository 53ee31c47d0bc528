"""The loop itself: :class:`AsyncRLLoop` wires the policy, the collector, the judges and the trainer.

The train step (batch -> staleness -> ``train_step`` in a thread -> publish -> log -> checkpoint)
runs on the event loop, which keeps serving, rolling out and judging meanwhile. ``mode="sync"``
pauses the collector from the moment a batch is taken until its weights are published.

With a ``warm_start`` (:mod:`clawgym.rl.warm_start`), the run begins with SFT on the setting's own
solutions: after the eval before (``before``), the warm start trains on the training tasks, publishes,
checkpoints (step 0), exports its weights (``<output_dir>/warm_start``, with ``export_final``) and is
evaluated (``warm_start``), and only then do the producers start. A resumed
run has its warm start in the checkpoint. ``method="sft"`` is the warm start alone: no RL step.

The batch is :meth:`BatchCollector.take_batch`'s: ``batch_groups`` groups, or fewer when the draw cap
(``max_draws_per_batch``) was hit first. A step that gets no group at all is skipped: it still counts as
a step (the run ends after ``steps`` of them even if every group is all-fail), logs a warning, writes its
row (``step_skipped`` 1, ``draw_cap_hit`` 1) and an empty trained-ids record, and checkpoints; the
weights and the trainer's version stay as they were.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable, Sequence

from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.buffer import SampleBuffer
from clawgym.rl.groups import apply_staleness
from clawgym.rl.judge import Judge, JudgeStage
from clawgym.rl.loop import state as loop_state
from clawgym.rl.loop.collector import BatchCollector
from clawgym.rl.loop.config import CURRICULUM_FILE, EVAL_TRANSCRIPTS_FILE, PENDING_FILE, LoopConfig, LoopResult
from clawgym.rl.loop.evaluation import evaluate_policy, export_hf
from clawgym.rl.loop.training import publish_weights, step_row
from clawgym.rl.methods import USES_HINTS
from clawgym.rl.metrics import MetricsLogger
from clawgym.rl.rollout import EnvKwargs, EnvSpec, RolloutPool
from clawgym.rl.trainer import Trainer
from clawgym.rl.types import JSONObject
from clawgym.rl.warm_start.config import WarmStartConfig

logger = logging.getLogger(__name__)


class AsyncRLLoop:
    """Wires policy, env rollouts, judges and a trainer; ``await loop.run()``. See :mod:`clawgym.rl.loop`.

    ``trainer`` is a :class:`~clawgym.rl.trainer.Trainer` (e.g. :class:`~clawgym.rl.trainer.TorchTrainer`);
    ``policy`` must have ``update_weights`` (hf, sglang). ``on_step(step, metrics)`` runs after each
    checkpoint (tests use it to inject a crash).
    """

    def __init__(
        self,
        env: EnvSpec,
        policy: Policy,
        trainer: Trainer,
        config: LoopConfig | None = None,
        *,
        judges: Sequence[Judge] | None = None,
        env_kwargs: EnvKwargs | None = None,
        eval_env_kwargs: EnvKwargs | None = None,
        task_ids: Sequence[str] | None = None,
        eval_task_ids: Sequence[str] | None = None,
        executor: str = "local",
        executor_options: dict[str, object] | None = None,
        tools: list[JSONObject] | None = None,
        warm_start: WarmStartConfig | None = None,
        on_step: Callable[[int, dict[str, float]], Awaitable[None] | None] | None = None,
    ) -> None:
        self.config = config or LoopConfig()
        self.warm_start = warm_start or WarmStartConfig()
        if not hasattr(policy, "update_weights"):
            raise TypeError(f"policy {getattr(policy, 'name', policy)!r} cannot receive weights (no update_weights); "
                            "train with the hf or sglang backend")
        self.env = env
        self.policy = policy
        self.trainer = trainer
        self.method = str(trainer.config.method)
        if self.method == "sft" and not self.warm_start.enabled:
            raise ValueError("method 'sft' is the warm start alone: give warm_start=WarmStartConfig(enabled=True)")
        self.judges = list(judges or [])
        names = [getattr(j, "name", "") for j in self.judges]
        if self.method in USES_HINTS and "hint" not in names:
            raise ValueError(f"method {self.method!r} needs a hint judge (judge: hint or rules+prm,hint)")
        has_prm = any(n != "hint" for n in names)
        self.reward_mode = (self.config.reward
                            if self.config.reward != "auto" else ("step_wise" if has_prm else "outcome"))
        if self.reward_mode == "step_wise" and not has_prm:
            raise ValueError("reward 'step_wise' needs a PRM or rule judge")
        self.env_kwargs = dict(env_kwargs or {})
        self.eval_env_kwargs = dict(eval_env_kwargs if eval_env_kwargs is not None else self.env_kwargs)
        self.task_ids = list(task_ids) if task_ids else None
        self.eval_task_ids = list(eval_task_ids) if eval_task_ids else None
        self.executor = executor
        self.executor_options = executor_options
        self.tools = tools
        self.on_step = on_step

        self.out = Path(self.config.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.buffer = SampleBuffer(self.config.buffer_groups, self.out / PENDING_FILE)
        self.metrics = MetricsLogger(self.out, tensorboard=self.config.tensorboard)
        self.counters: collections.Counter = collections.Counter()
        self.refused: collections.Counter = collections.Counter()
        self.collector = BatchCollector(self.config, self.buffer, method=self.method, reward_mode=self.reward_mode,
                                        tools=tools, counters=self.counters, refused=self.refused)
        self.consumed: set[str] = set()
        self.step = 0
        self.train_intervals: list[tuple[float, float]] = []  # (start, end) of each train step, wall clock
        self._waiting_for_batch = False  # the train step is waiting for its batch (max_minutes may cancel it)
        self._pools: list[RolloutPool] = []
        self._task_ids: list[str] = list(self.task_ids or [])  # the training pool (set in _run)

    @property
    def sampling(self) -> SamplingParams:
        """The rollouts' sampling: at the trainer's temperature (its logprobs' own), so every sample is on-policy."""
        c = self.config
        return SamplingParams(temperature=self.trainer.config.temperature, top_p=c.top_p, max_tokens=c.max_tokens)

    @property
    def version(self) -> int:
        return int(self.trainer.version)

    # ---- checkpoints -----------------------------------------------------------------------

    def _save_checkpoint(self) -> None:
        loop_state.save_checkpoint(self.out, self.trainer, {
            "step": self.step,
            "version": self.version,
            "groups_started": self.collector.groups_started,
            "consumed": sorted(self.consumed),
            "counters": dict(self.counters),
            "refused": dict(self.refused),
            "config": dataclasses.asdict(self.config),
            **({"curriculum": self.collector.curriculum.state_dict()} if self.collector.curriculum else {}),
        })

    def _resume(self) -> bool:
        """Load the last checkpoint (if any), roll back the trained-ids log, recover pending groups."""
        loaded = loop_state.load_checkpoint(self.out, self.trainer)
        if loaded is not None:
            directory, state = loaded
            self.step = int(state["step"])
            self.collector.groups_started = int(state["groups_started"])
            self.consumed = set(state["consumed"])
            self.counters.update(state.get("counters", {}))
            self.refused.update(state.get("refused", {}))
            if self.collector.curriculum is not None and "curriculum" in state:
                self.collector.curriculum.load_state_dict(state["curriculum"])  # keep the pass rates learnt so far
            logger.info("resumed from %s: step %d, version %d, %d samples consumed", directory, self.step,
                        self.version, len(self.consumed))
        loop_state.rollback_trained_log(self.out, self.step)
        self.counters["groups_recovered"] += self.buffer.recover(self.consumed)
        return loaded is not None

    # ---- the training side -----------------------------------------------------------------

    async def _publish(self) -> None:
        self.collector.version_offset = await publish_weights(self.trainer, self.policy)

    async def _train_one_step(self) -> dict[str, float] | None:
        c = self.config
        collector = self.collector
        step_started = time.perf_counter()
        blocked_before = collector.blocked_s
        rollout_busy_before = collector.rollouts.total()
        tokens_before = collector.generated_tokens

        t0 = time.perf_counter()
        self._waiting_for_batch = True
        try:
            groups, draws = await collector.take_batch()
        finally:
            self._waiting_for_batch = False
        wait_s = time.perf_counter() - t0
        if c.mode == "sync":
            collector.pause()  # no new rollouts until these weights are published
        samples = [s for g in groups for s in g.samples]
        version = self.version
        kept, dropped = apply_staleness(samples, version, c.max_staleness, c.staleness)
        record = {"step": self.step + 1, "trained": [s.sample_id for s in kept],
                  "dropped": [s.sample_id for s in dropped]}
        self.counters["samples_dropped_stale"] += len(dropped)
        train_s = publish_s = 0.0
        metrics: dict[str, float] = {}
        if kept:
            t1 = time.perf_counter()
            wall_start = time.time()
            metrics = await asyncio.to_thread(self.trainer.train_step, kept)
            self.train_intervals.append((wall_start, time.time()))
            train_s = time.perf_counter() - t1
            t2 = time.perf_counter()
            await self._publish()
            publish_s = time.perf_counter() - t2
        elif not groups:
            logger.warning("step %d skipped: the draw cap (%s x %d groups) was hit with no group to train on; "
                           "%d drawn, %d with all-equal rewards, %d untrainable", self.step + 1,
                           c.max_draws_per_batch, c.batch_groups, draws.drawn, draws.dropped_zero_variance,
                           draws.dropped_untrainable)
        else:
            logger.warning("step %d: every sample of the batch was stale; nothing trained", self.step + 1)
        if c.mode == "sync":
            collector.resume()
        groups_trained = len({s.group_id for s in kept})  # groups with a sample trained (group ids are unique)
        self.counters["groups_trained"] += groups_trained
        self.counters["draw_cap_hits"] += int(draws.cap_hit)
        self.counters["steps_skipped"] += int(not groups)
        self.step += 1
        self.consumed.update(record["trained"])
        self.consumed.update(record["dropped"])
        loop_state.append_trained(self.out, record)
        if c.checkpoint_every and self.step % c.checkpoint_every == 0:
            await asyncio.to_thread(self._save_checkpoint)

        out = step_row(
            self.version, version, groups, kept, dropped, metrics,
            wall_s=time.perf_counter() - step_started,
            wait_s=wait_s,
            train_s=train_s,
            publish_s=publish_s,
            rollout_s=collector.rollouts.total() - rollout_busy_before,
            rollout_blocked_s=collector.blocked_s - blocked_before,
            rollout_tokens=collector.generated_tokens - tokens_before,
            buffer_groups=len(self.buffer),
            refused=sum(self.refused.values()),
            groups_drawn=draws.drawn,
            groups_dropped_zero_variance=draws.dropped_zero_variance,
            groups_dropped_untrainable=draws.dropped_untrainable,
            groups_trained=groups_trained,
            draw_cap_hit=draws.cap_hit,
        )
        if collector.curriculum is not None:
            out.update(collector.curriculum.summary(self._task_ids))
            collector.curriculum.write(self.out / CURRICULUM_FILE, self._task_ids)
        self.metrics.log(self.step, out)
        logger.info(
            "step %d v%d: reward %.3f success %.2f | %d samples (%d stale dropped) | %d groups trained, %d drawn "
            "(%d all-equal dropped%s) | train %.1fs publish %.2fs wait %.1fs",
            self.step, self.version, out["reward_mean"], out["success_rate"], len(kept), len(dropped),
            groups_trained, draws.drawn, draws.dropped_zero_variance, ", draw cap hit" if draws.cap_hit else "",
            train_s, publish_s, wait_s,
        )
        return out

    # ---- eval ------------------------------------------------------------------------------

    async def evaluate(self, label: str = "eval") -> dict[str, float]:
        """Play every held-out task once (``eval_temperature``, fixed seeds) with the current weights."""
        version = self.version
        result = await evaluate_policy(self.env, self.policy, self.config, version=version,
                                       task_ids=self.eval_task_ids, env_kwargs=self.eval_env_kwargs,
                                       transcripts=self.out / EVAL_TRANSCRIPTS_FILE, label=label)
        self.metrics.log(self.step, {**result, "label": label}, kind="eval")
        logger.info("%s at step %d (v%d): reward %.3f success %.3f over %d tasks",
                    label, self.step, version, result["eval_reward"], result["eval_success"],
                    int(result["eval_episodes"]))
        return result

    # ---- the warm start ----------------------------------------------------------------------

    async def _run_warm_start(self, task_ids: Sequence[str]) -> None:
        """SFT on the training tasks' solutions, then publish, checkpoint (step 0) and log it; see the module doc."""
        from clawgym.rl.warm_start.stage import WARM_START_FILE, run_warm_start

        c = self.config
        # held out by seed when the eval plays the training tasks themselves (MiniWoB's pages): the warm start
        # then avoids the eval's seeds; otherwise no held-out task id may be among its tasks
        by_seed = self.eval_env_kwargs == self.env_kwargs
        eval_seeds = range(c.eval_seed, c.eval_seed + (c.eval_episodes or 100_000))

        def on_sft_step(index: int, metrics: dict[str, float]) -> None:
            self.metrics.log(index, {k: metrics[k] for k in ("nll", "loss", "grad_norm", "step_time_s", "tokens")
                                     if k in metrics}, kind="warm_start")

        result = await run_warm_start(
            self.warm_start, env=self.env, env_kwargs=self.env_kwargs, policy=self.policy, trainer=self.trainer,
            task_ids=task_ids, held_out_ids=self.eval_task_ids, held_out_by_seed=by_seed, seed=c.seed,
            sampling=self.sampling, rollout_workers=c.num_workers, executor=self.executor,
            episode_timeout_s=c.episode_timeout_s, avoid_seeds=eval_seeds, log_path=self.out / WARM_START_FILE,
            on_step=on_sft_step)
        row = result.to_row()
        self.counters.update({k: v for k, v in row.items() if isinstance(v, (int, float))})
        self.metrics.log(0, row, kind="warm_start_summary")
        if result.steps:
            await self._publish()
            if c.export_final and hasattr(self.policy, "model") and hasattr(self.policy, "tokenizer"):
                # the warm-started weights as an HF checkpoint: `clawgym eval` compares base, warm start and final
                await asyncio.to_thread(export_hf, self.policy, self.out / "warm_start")
        if c.checkpoint_every:
            await asyncio.to_thread(self._save_checkpoint)

    # ---- run -------------------------------------------------------------------------------

    def _make_pools(self) -> list[RolloutPool]:
        c = self.config
        return [
            RolloutPool(
                self.env,
                self.policy,
                num_workers=c.group_size,
                executor=self.executor,
                env_kwargs=self.env_kwargs,
                sampling=self.sampling,
                episode_timeout_s=c.episode_timeout_s,
                on_turn=self.collector.on_turn,
                executor_options=self.executor_options,
            )
            for _ in range(max(1, c.num_workers // c.group_size))
        ]

    async def run(self) -> LoopResult:
        switch_interval = sys.getswitchinterval()
        if self.config.switch_interval_s is not None:
            sys.setswitchinterval(self.config.switch_interval_s)
        try:
            return await self._run()
        finally:
            sys.setswitchinterval(switch_interval)

    async def _run(self) -> LoopResult:
        c = self.config
        collector = self.collector
        resumed = self._resume() if c.resume else False
        if resumed:
            await self._publish()  # serve the checkpoint's weights before any rollout
        eval_before = eval_warm_start = None
        if c.eval_before and not resumed:
            eval_before = await self.evaluate("before")
        history: list[dict[str, float]] = []
        if self.judges:
            collector.stage = JudgeStage(self.judges, workers=c.judge_workers or c.num_workers,
                                         on_judged=collector.on_judged)
            await collector.stage.start()
        self._pools = self._make_pools()
        producers: list[asyncio.Task] = []
        eval_tasks: list[asyncio.Task] = []
        started = time.perf_counter()
        try:
            for pool in self._pools:
                await pool.start()
            task_ids = self.task_ids or await self._pools[0].task_ids()
            self._task_ids = list(task_ids)
            if self.warm_start.enabled and not resumed:
                await self._run_warm_start(task_ids)
                if c.eval_before and self.method != "sft":  # sft: the eval after is the warm start's
                    eval_warm_start = await self.evaluate("warm_start")
                started = time.perf_counter()  # loop.max_minutes is RL's budget; the warm start has its own
            rl = self.method != "sft"  # sft: the warm start was the run
            producers = [asyncio.create_task(collector.produce(pool, task_ids), name=f"clawgym-producer-{i}")
                         for i, pool in enumerate(self._pools)] if rl else []
            while rl and self.step < c.steps:
                if c.max_minutes is not None and time.perf_counter() - started > 60 * c.max_minutes:
                    logger.info("time budget of %.1f min reached after %d steps", c.max_minutes, self.step)
                    break
                step_task = asyncio.create_task(self._train_one_step())
                deadline = None if c.max_minutes is None else started + 60 * c.max_minutes
                await _first_of(step_task, producers, deadline, lambda: self._waiting_for_batch)
                if step_task.cancelled():  # the time budget ran out while the step waited for its batch
                    logger.info("time budget of %.1f min reached while waiting for a batch, after %d steps",
                                c.max_minutes, self.step)
                    break
                out = step_task.result()
                if out is not None:
                    history.append(out)
                if c.eval_every and self.step % c.eval_every == 0 and self.step < c.steps:
                    eval_tasks.append(asyncio.create_task(self.evaluate(f"step {self.step}")))
                if self.on_step is not None:
                    maybe = self.on_step(self.step, out or {})
                    if asyncio.iscoroutine(maybe):
                        await maybe
        finally:
            collector.stop()
            for task in producers:
                task.cancel()
            await asyncio.gather(*producers, return_exceptions=True)
            for pool in self._pools:
                await pool.close()
            if collector.stage is not None:
                await collector.stage.close()
                collector.stage = None
            if eval_tasks:
                await asyncio.gather(*eval_tasks, return_exceptions=True)
        wall = time.perf_counter() - started
        self.counters["wall_s"] = wall
        self.counters["rollout_idle_s"] = max(0.0, wall - collector.rollouts.total())
        self.counters["trainer_wait_s"] = sum(h["time_wait_s"] for h in history)
        eval_after = await self.evaluate("after") if c.eval_after else None
        curve = None
        if c.plot:
            try:
                curve = self.metrics.plot()
            except Exception:  # a plotting problem must not lose a finished run
                logger.exception("plotting the learning curve failed")
        self.metrics.close()
        if c.export_final and hasattr(self.policy, "model") and hasattr(self.policy, "tokenizer"):
            await asyncio.to_thread(export_hf, self.policy, self.out / "final")
        counters = {**{k: float(v) for k, v in self.counters.items()},
                    **{f"refused/{k}": float(v) for k, v in self.refused.items()}}
        return LoopResult(self.step, self.version, history, eval_before, eval_after, counters, self.out, curve,
                          eval_warm_start)


async def _first_of(step_task: asyncio.Task, producers: Sequence[asyncio.Task], deadline: float | None = None,
                    waiting: Callable[[], bool] = lambda: False) -> None:
    """Wait for the train step; if a producer dies first, cancel the step and raise its error.

    Past ``deadline`` (perf_counter) a step still waiting for its batch is cancelled (the time budget
    holds even when rollouts are slow); a step already training is left to finish.
    """
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
        done, _ = await asyncio.wait([step_task, *producers], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if step_task in done:
            return
        if not done and deadline is not None:  # the budget ran out
            if waiting():
                step_task.cancel()
                await asyncio.gather(step_task, return_exceptions=True)
                return
            deadline = None  # training already: let the step finish, then the loop stops
        for task in done:
            if task.cancelled():
                continue
            if task.exception() is not None:
                step_task.cancel()
                await asyncio.gather(step_task, return_exceptions=True)
                raise RuntimeError("a rollout producer failed") from task.exception()
        producers = [p for p in producers if not p.done()]
        if not producers:
            await step_task
            return


def run_loop(*args: object, **kwargs: object) -> LoopResult:
    """``asyncio.run(AsyncRLLoop(*args, **kwargs).run())`` for scripts."""
    return asyncio.run(AsyncRLLoop(*args, **kwargs).run())
