"""The rollout pool: at most ``num_workers`` episodes at once on one executor; see the package docstring."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterable

import numpy as np

from clawgym.core.policy import Policy, SamplingParams
from clawgym.rl.rollout.asyncio_executor import AsyncioExecutor
from clawgym.rl.rollout.episode import EnvSpec, EpisodeSpec, TrajectorySink, TurnSink, make_groups, play_episode
from clawgym.rl.rollout.local import Executor, LocalExecutor, describe
from clawgym.rl.rollout.ray_executor import RayExecutor
from clawgym.rl.types import Trajectory, Turn, new_id

logger = logging.getLogger(__name__)


def make_executor(kind: str, env: EnvSpec, env_kwargs: dict[str, Any] | None = None, **options: Any) -> Executor:
    if kind == "local":
        if options:
            raise TypeError(f"the local executor takes no options, got {sorted(options)}")
        return LocalExecutor(env, env_kwargs)
    if kind == "asyncio":
        if options:
            raise TypeError(f"the asyncio executor takes no options, got {sorted(options)}")
        return AsyncioExecutor(env, env_kwargs)
    if kind == "ray":
        return RayExecutor(env, env_kwargs, **options)
    raise ValueError(f"unknown executor {kind!r}: use 'local', 'asyncio' or 'ray'")


@dataclass
class PoolStats:
    episodes: int = 0
    errors: int = 0
    timeouts: int = 0
    turns: int = 0
    sink_errors: int = 0


async def _maybe_await(value: Any) -> None:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        await value


class RolloutPool:
    """Plays episodes with ``num_workers`` at once; see the package docstring.

    ``async with RolloutPool(env, policy, ...) as pool: trajectories = await pool.run(specs)``.
    ``on_turn`` receives every Turn as soon as its next state exists (keep it quick: put it on a queue);
    ``episode_timeout_s`` bounds a whole episode (policy and env time).
    """

    def __init__(
        self,
        env: EnvSpec,
        policy: Policy,
        *,
        num_workers: int = 4,
        executor: str | Executor = "local",
        env_kwargs: dict[str, Any] | None = None,
        sampling: SamplingParams | None = None,
        episode_timeout_s: float | None = None,
        on_turn: TurnSink | None = None,
        env_name: str | None = None,
        executor_options: dict[str, Any] | None = None,
    ) -> None:
        if num_workers < 1:
            raise ValueError("num_workers must be at least 1")
        self.policy = policy
        self.num_workers = num_workers
        self.sampling = sampling or SamplingParams()
        self.episode_timeout_s = episode_timeout_s
        self.on_turn = on_turn
        self.env_name = env_name or (env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__))
        if isinstance(executor, str):
            executor = make_executor(executor, env, env_kwargs, **(executor_options or {}))
        self.executor: Executor = executor
        self.stats = PoolStats()
        self._started = False
        self._workers: set[asyncio.Task] = set()

    async def start(self) -> "RolloutPool":
        if not self._started:
            await self.executor.start(self.num_workers)
            self._started = True
        return self

    async def close(self) -> None:
        """Cancel episodes still running (e.g. a stream left early), then close every env."""
        workers, self._workers = list(self._workers), set()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if self._started:
            self._started = False
            await self.executor.close()

    async def __aenter__(self) -> "RolloutPool":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def task_ids(self) -> list[str]:
        """The ids of the env's tasks (read from one worker's env)."""
        await self.start()
        return await self.executor.task_ids()

    async def sample_groups(self, num_groups: int, group_size: int = 1, seed: int = 0) -> list[EpisodeSpec]:
        """``num_groups`` tasks drawn without replacement (with, if there are fewer) by ``seed``, G each."""
        ids = await self.task_ids()
        rng = np.random.default_rng(seed)
        chosen = rng.choice(len(ids), size=num_groups, replace=num_groups > len(ids))
        return make_groups([ids[int(i)] for i in chosen], group_size, seed)

    async def run(self, specs: Iterable[EpisodeSpec], on_trajectory: TrajectorySink | None = None) -> list[Trajectory]:
        """Play every spec; return the trajectories in spec order."""
        specs = list(specs)
        position = {id(spec): i for i, spec in enumerate(specs)}
        results: list[Trajectory | None] = [None] * len(specs)
        async for spec, trajectory in self._play_all(specs):
            results[position[id(spec)]] = trajectory
            if on_trajectory is not None:
                await _maybe_await(on_trajectory(trajectory))
        return [t for t in results if t is not None]

    async def stream(self, specs: Iterable[EpisodeSpec]) -> AsyncIterator[Trajectory]:
        """Yield trajectories as they finish.

        Leaving the loop early cancels the remaining episodes once the generator is closed
        (``aclose()``, garbage collection, or :meth:`close` of the pool, which cancels them all).
        """
        async for _, trajectory in self._play_all(list(specs)):
            yield trajectory

    async def stream_groups(self, specs: Iterable[EpisodeSpec]) -> AsyncIterator[list[Trajectory]]:
        """Yield whole GRPO groups (all G trajectories of a ``group_id``) as soon as each completes."""
        specs = list(specs)
        sizes: dict[str, int] = {}
        for spec in specs:
            sizes[spec.group_id] = sizes.get(spec.group_id, 0) + 1
        pending: dict[str, list[Trajectory]] = {}
        async for trajectory in self.stream(specs):
            members = pending.setdefault(trajectory.group_id, [])
            members.append(trajectory)
            if len(members) == sizes[trajectory.group_id]:
                del pending[trajectory.group_id]
                yield sorted(members, key=lambda t: t.seed if t.seed is not None else 0)

    # ------------------------------------------------------------------------------------ internals
    async def _play_all(self, specs: list[EpisodeSpec]) -> AsyncIterator[tuple[EpisodeSpec, Trajectory]]:
        await self.start()
        queue: asyncio.Queue[EpisodeSpec] = asyncio.Queue()
        for spec in specs:
            queue.put_nowait(spec)
        done: asyncio.Queue[tuple[EpisodeSpec, Trajectory]] = asyncio.Queue()
        busy: set[int] = set()
        workers = [
            asyncio.create_task(self._worker(slot, queue, done, busy), name=f"clawgym-rollout-{slot}")
            for slot in range(min(self.num_workers, len(specs)))
        ]
        self._workers.update(workers)
        try:
            for _ in range(len(specs)):
                yield await done.get()
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            self._workers.difference_update(workers)
            for slot in sorted(busy):  # cancelled mid-episode: that env may be mid-step
                await self.executor.recycle(slot)

    async def _worker(self, slot: int, queue: asyncio.Queue, done: asyncio.Queue, busy: set[int]) -> None:
        while True:
            try:
                spec = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            busy.add(slot)
            trajectory = await self._run_episode(slot, spec)
            busy.discard(slot)
            done.put_nowait((spec, trajectory))

    async def _run_episode(self, slot: int, spec: EpisodeSpec) -> Trajectory:
        trajectory = Trajectory(
            episode_id=spec.episode_id or new_id(),
            env_id=self.env_name,
            task_id=spec.task_id or "",
            group_id=spec.group_id,
            seed=spec.seed,
        )
        started = time.perf_counter()
        limit = self.episode_timeout_s
        try:
            await asyncio.wait_for(
                play_episode(self.policy, self.executor, slot, spec, trajectory, self.sampling, self._emit), limit
            )
        except Exception as exc:
            elapsed = time.perf_counter() - started
            if isinstance(exc, asyncio.TimeoutError) and limit is not None and elapsed >= limit:
                trajectory.error = f"timeout: the episode ran past {limit} s"
                self.stats.timeouts += 1
            else:  # includes a TimeoutError raised by the env or the policy themselves
                trajectory.error = describe(exc)
            logger.warning("episode %s failed: %s", trajectory.episode_id, trajectory.error)
        trajectory.wall_s = time.perf_counter() - started
        self.stats.episodes += 1
        if trajectory.error is not None:
            self.stats.errors += 1
            trajectory.success = False
            await self.executor.recycle(slot)  # the env may be mid-call or broken: rebuild it
        return trajectory

    async def _emit(self, turn: Turn) -> None:
        self.stats.turns += 1
        if self.on_turn is None:
            return
        try:
            await _maybe_await(self.on_turn(turn))
        except Exception:  # a sink bug must not kill rollouts; it is counted and logged
            self.stats.sink_errors += 1
            logger.exception("on_turn failed for turn %s", turn.turn_id)

