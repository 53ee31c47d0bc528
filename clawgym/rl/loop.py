"""The fully asynchronous RL loop: serving, rollout, judge and training at once (DESIGN.md "The RL side").

Four loops share one asyncio event loop and never wait for each other:

1. **Serving**: the policy answers every request (for ``hf`` the in-process :class:`HFPolicy`, whose
   decoding runs on its own thread; for ``sglang`` a server).
2. **Rollout**: ``num_workers // group_size`` producers, each with its own :class:`RolloutPool` of G
   env workers, play one GRPO group after another. A producer reserves a buffer slot before it starts a
   group, so ``buffer_groups`` bounds groups in flight + waiting (and so how stale data can get).
3. **Judge**: every finished turn goes to a :class:`JudgeStage` as soon as its next state exists; a
   group becomes samples once all its trajectories are done and all its turns are judged.
4. **Training**: takes ``batch_groups`` judged groups from the :class:`SampleBuffer`, drops (or
   down-weights) samples older than ``max_staleness`` versions, runs ``trainer.train_step`` **in a
   thread** (the event loop keeps serving and rolling out meanwhile), publishes the new weights
   (``policy.update_weights``: an in-process copy between two decoding steps for ``hf``, the weight
   update endpoint for ``sglang``) and checkpoints.

Token in, token out: samples are built from each Turn's own prompt/response token ids and logprobs
(:mod:`clawgym.rl.groups`); a turn without them is refused (counted under ``refused/<reason>``).

Rewards (``LoopConfig.reward``):
- ``outcome``: each trajectory's env reward, GRPO-normalised within its group (A_i = (R_i - mean) / std);
  every turn of a trajectory gets its trajectory's advantage.
- ``step_wise`` (Track-2, needs a PRM judge): r_k = R + prm_coef * prm_k, GRPO within (group, turn k).
- ``auto`` (default): ``step_wise`` when a PRM judge is configured, else ``outcome``.
Methods: ``grpo`` trains on those advantages; ``opd`` on hint-judge hints (the trainer computes the
hinted teacher's logprobs; samples without a hint are dropped); ``hybrid`` on both.

Resumability: judged groups are appended to ``pending.jsonl`` before the trainer sees them; each
checkpoint (trainer state + ``loop_state.json`` with the consumed sample ids, written atomically
together) marks what was trained. ``trained_ids.jsonl`` lists, per step, the sample ids trained and
dropped; on resume the entries of steps after the checkpoint are rolled back (those steps are
re-done), so every logged id is in the checkpoint's consumed set exactly once.

``mode="sync"`` is the baseline for :mod:`benchmarks.loop_overlap`: rollout, then train, then publish,
in turn (producers are gated while the trainer works).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import numpy as np

from clawgym.rl.buffer import SampleBuffer
from clawgym.rl.evaluate import eval_rows, play_tasks
from clawgym.rl.groups import apply_staleness, build_group, prm_score, refuse_reason, verdict_source  # noqa: F401 (re-exported)
from clawgym.rl.judge import JudgeStage
from clawgym.rl.metrics import MetricsLogger
from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.rollout import EnvSpec, RolloutPool, make_groups
from clawgym.rl.trainer import checkpoint as ckpt
from clawgym.rl.types import Trajectory, Turn

logger = logging.getLogger(__name__)

PENDING_FILE = "pending.jsonl"
TRAINED_FILE = "trained_ids.jsonl"
CHECKPOINT_DIR = "checkpoint"
LOOP_STATE = "loop_state.json"


@dataclass
class LoopConfig:
    """How the four loops run. The trainer's own settings (lr, eps, KL, LoRA) live in TrainerConfig."""

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
    drop_zero_advantage: bool = True  # skip groups whose samples all have A = 0 (grpo only)
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    episode_timeout_s: float | None = None
    judge_workers: int = 4
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

    def __post_init__(self) -> None:
        checks = {
            "steps": self.steps >= 0,
            "batch_groups": self.batch_groups >= 1,
            "group_size": self.group_size >= 1,
            "num_workers": self.num_workers >= 1,
            "buffer_groups": self.buffer_groups >= self.batch_groups,
            "max_staleness": self.max_staleness >= 0,
            "staleness": self.staleness in ("drop", "reweight"),
            "reward": self.reward in ("auto", "outcome", "step_wise"),
            "max_tokens": self.max_tokens >= 1,
            "temperature": self.temperature >= 0,
            "checkpoint_every": self.checkpoint_every >= 0,
            "eval_every": self.eval_every >= 0,
            "mode": self.mode in ("async", "sync"),
            "judge_workers": self.judge_workers >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if not bad and (self.temperature != 1.0 or self.top_p != 1.0):
            # the trainer's logprobs are the model's plain softmax (temperature 1, full vocabulary): other
            # sampling settings would make every sample silently off-policy, so they are refused
            raise ValueError(f"invalid loop settings: rollout temperature={self.temperature!r}, top_p={self.top_p!r}; "
                             "training needs temperature 1.0 and top_p 1.0 (the trainer computes logprobs at those)")
        if bad:
            detail = ", ".join(f"{n}={getattr(self, n)!r}" for n in bad)
            hint = " (buffer_groups must be >= batch_groups)" if "buffer_groups" in bad else ""
            raise ValueError(f"invalid loop settings: {detail}{hint}")


@dataclass
class LoopResult:
    steps: int
    version: int
    history: list[dict[str, Any]]
    eval_before: dict[str, float] | None
    eval_after: dict[str, float] | None
    counters: dict[str, float]
    output_dir: Path
    curve_path: Path | None


# ============================================================================================
# The loop
# ============================================================================================


class _Clock:
    """Time during which a count is positive (e.g. groups in flight), for the per-loop time split."""

    def __init__(self) -> None:
        self.count = 0
        self.busy_s = 0.0
        self._since = 0.0

    def up(self) -> None:
        if self.count == 0:
            self._since = time.perf_counter()
        self.count += 1

    def down(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.busy_s += time.perf_counter() - self._since

    def total(self) -> float:
        return self.busy_s + (time.perf_counter() - self._since if self.count > 0 else 0.0)


class AsyncRLLoop:
    """Wires policy, env rollouts, judges and a trainer; ``await loop.run()``. See the module docstring.

    ``trainer`` is a :class:`~clawgym.rl.trainer.TorchTrainer` (or anything with ``train_step``,
    ``export_weights``, ``save_checkpoint``, ``load_checkpoint``, ``version`` and ``config.method``);
    ``policy`` must have ``update_weights`` (hf, sglang). ``on_step(step, metrics)`` runs after each
    checkpoint (tests use it to inject a crash).
    """

    def __init__(
        self,
        env: EnvSpec,
        policy: Policy,
        trainer: Any,
        config: LoopConfig | None = None,
        *,
        judges: Sequence[Any] | None = None,
        env_kwargs: dict[str, Any] | None = None,
        eval_env_kwargs: dict[str, Any] | None = None,
        task_ids: Sequence[str] | None = None,
        eval_task_ids: Sequence[str] | None = None,
        executor: str = "local",
        executor_options: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        on_step: Callable[[int, dict[str, Any]], Any] | None = None,
    ) -> None:
        self.config = config or LoopConfig()
        if not hasattr(policy, "update_weights"):
            raise TypeError(f"policy {getattr(policy, 'name', policy)!r} cannot receive weights (no update_weights); "
                            "train with the hf or sglang backend")
        self.env = env
        self.policy = policy
        self.trainer = trainer
        self.method = str(trainer.config.method)
        self.judges = list(judges or [])
        names = [getattr(j, "name", "") for j in self.judges]
        if self.method in ("opd", "hybrid") and "hint" not in names:
            raise ValueError(f"method {self.method!r} needs a hint judge (judge: hint or rules+prm,hint)")
        has_prm = any(n != "hint" for n in names)
        self.reward_mode = self.config.reward if self.config.reward != "auto" else ("step_wise" if has_prm else "outcome")
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
        self.consumed: set[str] = set()
        self.step = 0
        self.groups_started = 0
        self.version_offset = 0
        self.train_intervals: list[tuple[float, float]] = []  # (start, end) of each train step, wall clock
        self._stage: JudgeStage | None = None
        self._judged: dict[str, asyncio.Event] = {}
        self._stopping = False
        self._waiting_for_batch = False  # the train step is waiting for its batch (max_minutes may cancel it)
        self._gate = asyncio.Event()
        self._gate.set()
        self._rollouts = _Clock()
        self._rng = np.random.default_rng(self.config.seed)
        self._timers: collections.Counter = collections.Counter()  # cumulative seconds
        self._generated_tokens = 0
        self._pools: list[RolloutPool] = []

    # ---- sampling --------------------------------------------------------------------------

    @property
    def sampling(self) -> SamplingParams:
        c = self.config
        return SamplingParams(temperature=c.temperature, top_p=c.top_p, max_tokens=c.max_tokens)

    @property
    def version(self) -> int:
        return int(self.trainer.version)

    # ---- the judge side --------------------------------------------------------------------

    def _on_turn(self, turn: Turn) -> None:
        self._generated_tokens += len(turn.response_ids)
        if self._stage is None:
            return
        self._judged[turn.turn_id] = asyncio.Event()
        self._stage.submit(turn)

    def _on_judged(self, turn: Turn) -> None:
        event = self._judged.get(turn.turn_id)
        if event is not None:
            event.set()

    async def _wait_judged(self, trajectories: Sequence[Trajectory]) -> None:
        for trajectory in trajectories:
            for turn in trajectory.turns:
                event = self._judged.get(turn.turn_id)
                if event is not None:
                    await event.wait()  # keep it registered until set: the judge looks it up
                    del self._judged[turn.turn_id]

    # ---- the rollout side ------------------------------------------------------------------

    def _next_task(self, index: int, task_ids: Sequence[str]) -> str:
        rng = np.random.default_rng([self.config.seed, index])
        return task_ids[int(rng.integers(len(task_ids)))]

    async def _producer(self, pool: RolloutPool, task_ids: Sequence[str]) -> None:
        c = self.config
        while not self._stopping:
            t0 = time.perf_counter()
            await self.buffer.reserve()
            await self._gate.wait()
            self._timers["rollout_blocked_s"] += time.perf_counter() - t0
            if self._stopping:
                self.buffer.release()
                return
            index = self.groups_started
            self.groups_started += 1
            specs = make_groups([self._next_task(index, task_ids)], c.group_size, seed=(c.seed * 1_000_003 + index * c.group_size) % (2**31 - 1))
            self._rollouts.up()
            try:
                trajectories = await pool.run(specs)
            finally:
                self._rollouts.down()
            self.counters["episodes"] += len(trajectories)
            self.counters["episode_errors"] += sum(t.error is not None for t in trajectories)
            await self._wait_judged(trajectories)
            group, refused = build_group(
                trajectories,
                method=self.method,
                reward=self.reward_mode,
                prm_coef=c.prm_coef,
                version_offset=self.version_offset,
                drop_zero_advantage=c.drop_zero_advantage,
                tools=self.tools,
            )
            self.refused.update(refused)
            self.counters["groups_played"] += 1
            if group is None:
                self.counters["groups_empty"] += 1
                self.buffer.release()
                continue
            await self.buffer.put(group, reserved=True)

    # ---- checkpoints -----------------------------------------------------------------------

    def _checkpoint_path(self) -> Path:
        return self.out / CHECKPOINT_DIR

    def _save_checkpoint(self) -> None:
        with ckpt.atomic_directory(self._checkpoint_path()) as tmp:
            self.trainer.save_checkpoint(tmp / "trainer")
            ckpt.write_json(
                tmp / LOOP_STATE,
                {
                    "step": self.step,
                    "version": self.version,
                    "groups_started": self.groups_started,
                    "consumed": sorted(self.consumed),
                    "counters": dict(self.counters),
                    "refused": dict(self.refused),
                    "config": dataclasses.asdict(self.config),
                },
            )

    def _resume(self) -> bool:
        """Load the last checkpoint (if any), roll back the trained-ids log, recover pending groups."""
        state: dict[str, Any] = {}
        try:
            directory = ckpt.resolve(self._checkpoint_path())
        except FileNotFoundError:
            directory = None
        if directory is not None:
            self.trainer.load_checkpoint(directory / "trainer")
            state = ckpt.read_json(directory / LOOP_STATE)
            self.step = int(state["step"])
            self.groups_started = int(state["groups_started"])
            self.consumed = set(state["consumed"])
            self.counters.update(state.get("counters", {}))
            self.refused.update(state.get("refused", {}))
            logger.info("resumed from %s: step %d, version %d, %d samples consumed", directory, self.step, self.version, len(self.consumed))
        self._rollback_trained_log(self.step)
        recovered = self.buffer.recover(self.consumed)
        self.counters["groups_recovered"] += recovered
        return directory is not None

    def _rollback_trained_log(self, step: int) -> None:
        path = self.out / TRAINED_FILE
        if not path.exists():
            return
        keep = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if int(record["step"]) <= step:
                keep.append(line)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(k + "\n" for k in keep), encoding="utf-8")
        tmp.replace(path)

    # ---- the training side -----------------------------------------------------------------

    async def _publish(self) -> None:
        weights = await asyncio.to_thread(self.trainer.export_weights)
        policy_version = await self.policy.update_weights(weights)
        self.version_offset = self.version - int(policy_version)

    async def _train_one_step(self) -> dict[str, Any] | None:
        c = self.config
        step_started = time.perf_counter()
        timers_before = dict(self._timers)
        rollout_busy_before = self._rollouts.total()
        tokens_before = self._generated_tokens

        t0 = time.perf_counter()
        self._waiting_for_batch = True
        try:
            groups = await self.buffer.get(c.batch_groups)
        finally:
            self._waiting_for_batch = False
        wait_s = time.perf_counter() - t0
        if c.mode == "sync":
            self._gate.clear()  # no new rollouts until these weights are published
        samples = [s for g in groups for s in g.samples]
        kept, dropped = apply_staleness(samples, self.version, c.max_staleness, c.staleness)
        staleness = [self.version - s.policy_version for s in kept]
        record = {"step": self.step + 1, "trained": [s.sample_id for s in kept], "dropped": [s.sample_id for s in dropped]}
        self.counters["samples_dropped_stale"] += len(dropped)
        train_s = publish_s = 0.0
        metrics: dict[str, Any] = {}
        if kept:
            t1 = time.perf_counter()
            wall_start = time.time()
            metrics = await asyncio.to_thread(self.trainer.train_step, kept)
            self.train_intervals.append((wall_start, time.time()))
            train_s = time.perf_counter() - t1
            t2 = time.perf_counter()
            await self._publish()
            publish_s = time.perf_counter() - t2
        else:
            logger.warning("step %d: every sample of the batch was stale; nothing trained", self.step + 1)
        if c.mode == "sync":
            self._gate.set()
        self.step += 1
        self.consumed.update(record["trained"])
        self.consumed.update(record["dropped"])
        with (self.out / TRAINED_FILE).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        if c.checkpoint_every and self.step % c.checkpoint_every == 0:
            t3 = time.perf_counter()
            await asyncio.to_thread(self._save_checkpoint)
            self._timers["checkpoint_s"] += time.perf_counter() - t3

        wall = time.perf_counter() - step_started
        rewards = [r for g in groups for r in g.rewards]
        successes = [float(s) for g in groups for s in g.successes]
        prm = [p for g in groups for p in g.prm_scores]
        response_tokens = sum(len(s.response_ids) for s in kept)
        out = {
            "version": self.version,
            "reward_mean": float(np.mean(rewards)) if rewards else float("nan"),
            "reward_std": float(np.std(rewards)) if rewards else float("nan"),
            "success_rate": float(np.mean(successes)) if successes else float("nan"),
            "samples": len(kept),
            "groups": len(groups),
            "samples_dropped_stale": len(dropped),
            "staleness_mean": float(np.mean(staleness)) if staleness else 0.0,
            "staleness_max": float(max(staleness)) if staleness else 0.0,
            "verdict_pos": float(np.mean([p > 0 for p in prm])) if prm else float("nan"),
            "verdict_neg": float(np.mean([p < 0 for p in prm])) if prm else float("nan"),
            "verdict_zero": float(np.mean([p == 0 for p in prm])) if prm else float("nan"),
            "verdict_mean": float(np.mean(prm)) if prm else float("nan"),
            "kl": float(metrics.get("kl", 0.0)),
            "abs_logprob_diff": float(metrics.get("abs_logprob_diff", 0.0)),
            "clip_frac": float(metrics.get("clip_frac", 0.0)),
            "loss": float(metrics.get("loss", 0.0)),
            "grad_norm": float(metrics.get("grad_norm", 0.0)),
            "train_tokens": float(metrics.get("tokens", 0.0)),
            "samples_per_s": len(kept) / wall if wall > 0 else 0.0,
            "train_tokens_per_s": float(metrics.get("tokens", 0.0)) / wall if wall > 0 else 0.0,
            "rollout_tokens_per_s": (self._generated_tokens - tokens_before) / wall if wall > 0 else 0.0,
            "response_tokens": response_tokens,
            "time_wait_s": wait_s,
            "time_train_s": train_s,
            "time_publish_s": publish_s,
            "time_rollout_s": self._rollouts.total() - rollout_busy_before,
            "time_rollout_blocked_s": self._timers["rollout_blocked_s"] - timers_before.get("rollout_blocked_s", 0.0),
            "time_judge_s": float(sum(g.judge_s for g in groups)),
            "time_step_s": wall,
            "buffer_groups": len(self.buffer),
            "refused": sum(self.refused.values()),
        }
        self.metrics.log(self.step, out)
        logger.info(
            "step %d v%d: reward %.3f success %.2f | %d samples (%d stale dropped) | train %.1fs publish %.2fs wait %.1fs",
            self.step, self.version, out["reward_mean"], out["success_rate"], len(kept), len(dropped), train_s, publish_s, wait_s,
        )
        return out

    # ---- eval ------------------------------------------------------------------------------

    async def evaluate(self, label: str = "eval") -> dict[str, float]:
        """Play every held-out task once (``eval_temperature``, fixed seeds) with the current weights."""
        c = self.config
        sampling = SamplingParams(temperature=c.eval_temperature, top_p=1.0, max_tokens=c.max_tokens)
        version = self.version
        trajectories = await play_tasks(self.env, self.policy, self.eval_task_ids, limit=c.eval_episodes,
                                        env_kwargs=self.eval_env_kwargs, sampling=sampling, num_workers=c.num_workers,
                                        seed=c.eval_seed, episode_timeout_s=c.episode_timeout_s)
        row = eval_rows(trajectories)["all"]
        result = {
            "eval_reward": row["mean_reward"],
            "eval_success": row["success_rate"],
            "eval_episodes": float(row["episodes"]),
            "eval_errors": float(row["errors"]),
            "eval_version": float(version),
        }
        self.metrics.log(self.step, {**result, "label": label}, kind="eval")
        logger.info("%s at step %d (v%d): reward %.3f success %.3f over %d tasks",
                    label, self.step, version, result["eval_reward"], result["eval_success"], len(trajectories))
        return result

    # ---- run -------------------------------------------------------------------------------

    async def run(self) -> LoopResult:
        c = self.config
        resumed = self._resume() if c.resume else False
        if resumed:
            await self._publish()  # serve the checkpoint's weights before any rollout
        eval_before = None
        if c.eval_before and not resumed:
            eval_before = await self.evaluate("before")
        history: list[dict[str, Any]] = []
        if self.judges:
            self._stage = JudgeStage(self.judges, workers=c.judge_workers, on_judged=self._on_judged)
            await self._stage.start()
        n_producers = max(1, c.num_workers // c.group_size)
        self._pools = [
            RolloutPool(
                self.env,
                self.policy,
                num_workers=c.group_size,
                executor=self.executor,
                env_kwargs=self.env_kwargs,
                sampling=self.sampling,
                episode_timeout_s=c.episode_timeout_s,
                on_turn=self._on_turn,
                executor_options=self.executor_options,
            )
            for _ in range(n_producers)
        ]
        producers: list[asyncio.Task] = []
        eval_tasks: list[asyncio.Task] = []
        started = time.perf_counter()
        self._wall_started = started
        try:
            for pool in self._pools:
                await pool.start()
            task_ids = self.task_ids or await self._pools[0].task_ids()
            producers = [asyncio.create_task(self._producer(pool, task_ids), name=f"clawgym-producer-{i}")
                         for i, pool in enumerate(self._pools)]
            while self.step < c.steps:
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
            self._stopping = True
            self._gate.set()
            for task in producers:
                task.cancel()
            await asyncio.gather(*producers, return_exceptions=True)
            for pool in self._pools:
                await pool.close()
            if self._stage is not None:
                await self._stage.close()
                self._stage = None
            if eval_tasks:
                await asyncio.gather(*eval_tasks, return_exceptions=True)
        wall = time.perf_counter() - started
        self.counters["wall_s"] = wall
        self.counters["rollout_idle_s"] = max(0.0, wall - self._rollouts.total())
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
        counters = {**{k: float(v) for k, v in self.counters.items()}, **{f"refused/{k}": float(v) for k, v in self.refused.items()}}
        return LoopResult(self.step, self.version, history, eval_before, eval_after, counters, self.out, curve)


def export_hf(policy: Any, path: Path) -> Path:
    """The served model as a plain HF checkpoint (``clawgym eval --model PATH`` and any HF tool load it)."""
    policy.model.save_pretrained(path)
    policy.tokenizer.save_pretrained(path)
    return path


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


def run_loop(*args: Any, **kwargs: Any) -> LoopResult:
    """``asyncio.run(AsyncRLLoop(*args, **kwargs).run())`` for scripts."""
    return asyncio.run(AsyncRLLoop(*args, **kwargs).run())
