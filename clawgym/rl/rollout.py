"""The async rollout pool: N env workers play episodes of any gym id with any :class:`Policy`.

Shape (OpenClaw-RL's rollout loop, as a library):

- ``EpisodeSpec`` says what to play (task id, seed, GRPO group); :func:`make_groups` builds G specs per
  task with the same ``task_id`` and distinct seeds.
- :class:`RolloutPool` runs at most ``num_workers`` episodes at once. The episode loop
  (reset -> (policy -> step)*) runs in the driver's event loop; only ``reset``/``step`` go to the
  executor, so the policy (and its weights) stays in one process.
- Every finished :class:`Turn` is handed to ``on_turn`` (the judge queue, see
  :class:`clawgym.rl.judge.JudgeStage`) as soon as its next state exists, before the policy is asked
  for the next action. Trajectories come back as an async iterator in completion order
  (:meth:`RolloutPool.stream`) or as a list in spec order (:meth:`RolloutPool.run`).
- A failed episode (env error, policy error, timeout) is a :class:`Trajectory` with ``error`` set,
  never an exception out of the pool. The env that failed is discarded and rebuilt for the next episode.

Executors share one interface (:class:`Executor`): ``local`` runs each env on its own dedicated thread
(created, used and closed on that thread; envs are never shared across threads), ``ray`` places the
same env hosts inside Ray actors (``import ray`` happens only there) so envs can live on other machines.

Wiring with the judge (the rollout loop only enqueues; judging runs as its own stage)::

    stage = JudgeStage([CompositeJudge(llm=PRMJudge(judge_policy, m=3))], on_judged=buffer.put)
    async with stage, RolloutPool("clawgym/Terminal-v0", policy, num_workers=16,
                                  on_turn=stage.submit) as pool:
        async for group in pool.stream_groups(await pool.sample_groups(8, group_size=4)):
            ...  # a complete GRPO group; its turns' judge results arrive in turn.judge

Determinism: an episode is fixed by its seed (``env.reset(seed=...)``) and its sampling seed, derived
from the episode seed and the turn index, so the same specs give the same trajectories with a
deterministic policy on either executor.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Protocol, Sequence, Union

import numpy as np

from clawgym.core.messages import Message, parse_action
from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.rl.types import Trajectory, Turn, new_id

logger = logging.getLogger(__name__)

EnvSpec = Union[str, Callable[[], Any]]  # a gym id ("clawgym/ToolCall-v0", "module:Id") or a factory
TurnSink = Callable[[Turn], Union[Awaitable[None], None]]
TrajectorySink = Callable[[Trajectory], Union[Awaitable[None], None]]


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to play. ``index`` orders results; ``task_id=None`` lets the env pick by seed."""

    index: int
    seed: int
    task_id: str | None = None
    group_id: str = ""
    episode_id: str = ""


def make_groups(task_ids: Sequence[str | None], group_size: int = 1, seed: int = 0) -> list[EpisodeSpec]:
    """G specs per task (a GRPO group): same ``task_id``, distinct seeds ``seed, seed+1, ...``.

    Group ids are fresh per call so groups from different calls never merge in a trainer.
    """
    if group_size < 1:
        raise ValueError("group_size must be at least 1")
    specs = []
    for g, task_id in enumerate(task_ids):
        group_id = new_id()
        for k in range(group_size):
            index = g * group_size + k
            specs.append(EpisodeSpec(index, seed + index, task_id, group_id, f"{group_id}-{k}"))
    return specs


def sampling_seed(episode_seed: int, turn_index: int) -> int:
    """The sampling seed of one policy call: fixed by the episode seed and the turn, never global."""
    return (episode_seed * 1_000_003 + turn_index) % (2**31 - 1)


# ---------------------------------------------------------------------------------------------- env hosts
def _make_env(env: EnvSpec, env_kwargs: dict[str, Any]) -> Any:
    if callable(env):
        return env(**env_kwargs)
    import gymnasium

    import clawgym  # noqa: F401  (registers the clawgym ids in this process, e.g. a Ray worker)

    return gymnasium.make(env, **env_kwargs)


def _describe(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)  # ray.exceptions.RayTaskError carries the original exception
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")


class _EnvSlot:
    """One env on its own thread: created, stepped and closed there, never touched by another thread."""

    def __init__(self, env: EnvSpec, env_kwargs: dict[str, Any]) -> None:
        self._spec = env
        self._kwargs = env_kwargs
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clawgym-env")
        self._env: Any = None
        self.inflight = 0  # calls submitted to the thread and not yet returned

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self.inflight += 1
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._run, fn, args)

    def _run(self, fn: Callable[..., Any], args: tuple) -> Any:
        try:
            return fn(*args)
        finally:
            self.inflight -= 1

    def _ensure(self) -> Any:
        if self._env is None:
            self._env = _make_env(self._spec, self._kwargs)
        return self._env

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[list, dict, list | None]:
        env = self._ensure()
        observation, info = env.reset(seed=seed, options=options)
        return observation, info, getattr(env.unwrapped, "tools", None)

    def step(self, action: Any) -> tuple[list, float, bool, bool, dict]:
        if self._env is None:
            raise RuntimeError("step() before reset() on this env slot")
        observation, reward, terminated, truncated, info = self._env.step(action)
        return observation, float(reward), bool(terminated), bool(truncated), info

    def task_ids(self) -> list[str]:
        task_set = getattr(self._ensure().unwrapped, "task_set", None)
        if task_set is None:
            raise TypeError("this env has no task_set; pass explicit task ids")
        return [task.id for task in task_set]

    def close_env(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            try:
                env.close()
            except Exception:  # closing is best effort on a crash path
                logger.exception("closing an env failed")

    def abandon(self) -> None:
        """Close the env on its own thread after whatever call is still running there, then let it go."""
        self._thread.submit(self.close_env)
        self._thread.shutdown(wait=False)


class EnvHost:
    """Env slots addressed by index. The local executor owns one; each Ray actor wraps one."""

    def __init__(self, env: EnvSpec, env_kwargs: dict[str, Any] | None = None) -> None:
        self._spec = env
        self._kwargs = dict(env_kwargs or {})
        self._slots: dict[int, _EnvSlot] = {}

    def _slot(self, slot: int) -> _EnvSlot:
        if slot not in self._slots:
            self._slots[slot] = _EnvSlot(self._spec, self._kwargs)
        return self._slots[slot]

    async def reset(self, slot: int, seed: int | None, options: dict[str, Any] | None) -> tuple[list, dict, list | None]:
        env_slot = self._slot(slot)
        return await env_slot.call(env_slot.reset, seed, options)

    async def step(self, slot: int, action: Any) -> tuple[list, float, bool, bool, dict]:
        env_slot = self._slot(slot)
        return await env_slot.call(env_slot.step, action)

    async def task_ids(self, slot: int) -> list[str]:
        env_slot = self._slot(slot)
        return await env_slot.call(env_slot.task_ids)

    async def recycle(self, slot: int) -> None:
        """Drop a slot's env (after a timeout or error); the next reset builds a fresh one."""
        env_slot = self._slots.pop(slot, None)
        if env_slot is not None:
            env_slot.abandon()

    async def close(self) -> None:
        """Close idle envs now; an env stuck in a call is closed on its thread when the call returns."""
        slots, self._slots = list(self._slots.values()), {}
        for env_slot in slots:
            if env_slot.inflight:
                env_slot.abandon()
            else:
                await env_slot.call(env_slot.close_env)
                env_slot._thread.shutdown(wait=False)

    async def call_batch(self, calls: list[tuple[str, int, tuple]]) -> list[tuple[bool, Any]]:
        """Run several ``(method, slot, args)`` calls at once: one Ray round trip for many env calls."""
        allowed = ("reset", "step")
        results = await asyncio.gather(
            *(getattr(self, name)(slot, *args) for name, slot, args in calls if name in allowed), return_exceptions=True
        )
        if len(results) != len(calls):
            raise ValueError(f"call_batch only runs {allowed}")
        return [(not isinstance(r, BaseException), r) for r in results]

    def ping(self) -> bool:
        return True


# ---------------------------------------------------------------------------------------------- executors
class Executor(Protocol):
    """Where envs live. Slots ``0..num_slots-1`` each hold at most one env, used by one episode at a time."""

    async def start(self, num_slots: int) -> None: ...

    async def reset(self, slot: int, seed: int | None, options: dict[str, Any] | None) -> tuple[list, dict, list | None]: ...

    async def step(self, slot: int, action: Any) -> tuple[list, float, bool, bool, dict]: ...

    async def task_ids(self) -> list[str]: ...

    async def recycle(self, slot: int) -> None: ...

    async def close(self) -> None: ...


class LocalExecutor:
    """Envs in this process, one dedicated thread per env."""

    def __init__(self, env: EnvSpec, env_kwargs: dict[str, Any] | None = None) -> None:
        self.host = EnvHost(env, env_kwargs)

    async def start(self, num_slots: int) -> None:
        return None

    async def reset(self, slot: int, seed: int | None, options: dict[str, Any] | None) -> tuple[list, dict, list | None]:
        return await self.host.reset(slot, seed, options)

    async def step(self, slot: int, action: Any) -> tuple[list, float, bool, bool, dict]:
        return await self.host.step(slot, action)

    async def task_ids(self) -> list[str]:
        return await self.host.task_ids(0)

    async def recycle(self, slot: int) -> None:
        await self.host.recycle(slot)

    async def close(self) -> None:
        await self.host.close()


class RayExecutor:
    """Envs inside Ray actors (each an :class:`EnvHost` with several env threads); the policy stays here.

    ``address=None`` joins a running Ray instance or starts a local one with ``num_cpus``
    (the driver's ``sys.path`` is passed to the workers so test and script modules import there);
    ``address="ray://..."``/``"auto"`` joins a cluster. Actors default to ``num_cpus=1`` each and
    there are ``num_actors`` of them (default: the cluster's CPU count, at most one per slot).

    ``batch_calls=True`` sends the reset/step calls that are ready in the same event-loop tick to an
    actor as one Ray call. A Ray call costs about a millisecond of CPU, so this raises throughput at
    high concurrency, but a slow env call then delays the answers of the calls batched with it
    (each batch returns when its slowest call does). Off by default.
    """

    def __init__(
        self,
        env: EnvSpec,
        env_kwargs: dict[str, Any] | None = None,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        num_actors: int | None = None,
        actor_options: dict[str, Any] | None = None,
        batch_calls: bool = False,
    ) -> None:
        self._spec = env
        self.batch_calls = batch_calls
        self._pending: list[tuple[Any, str, int, tuple, asyncio.Future]] = []
        self._batch_tasks: set[asyncio.Task] = set()
        self._kwargs = dict(env_kwargs or {})
        self.address = address
        self.num_cpus = num_cpus
        self.num_actors = num_actors
        self.actor_options = dict(actor_options or {"num_cpus": 1})
        self._actors: list[Any] = []
        self._actor_cls: Any = None
        self._placement: dict[int, tuple[Any, int]] = {}
        self._started_ray = False

    async def start(self, num_slots: int) -> None:
        import ray  # the `ray` extra; imported only when this executor is used

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                kwargs["num_cpus"] = self.num_cpus
                path = os.pathsep.join(p for p in sys.path if p)
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            ray.init(address=self.address, **kwargs)
            self._started_ray = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        per_actor = float(self.actor_options.get("num_cpus", 1) or 0)
        default_actors = max(1, int(cpus // per_actor)) if per_actor > 0 else cpus
        count = max(1, min(num_slots, self.num_actors or default_actors))
        slots_per_actor = -(-num_slots // count)
        self._actor_cls = ray.remote(EnvHost).options(max_concurrency=4 * slots_per_actor + 16, **self.actor_options)
        self._actors = [self._actor_cls.remote(self._spec, self._kwargs) for _ in range(count)]
        await asyncio.gather(*(actor.ping.remote() for actor in self._actors))
        self._placement = {slot: (self._actors[slot % count], slot // count) for slot in range(num_slots)}
        logger.info("ray executor: %d actors, %d env slots", count, num_slots)

    async def reset(self, slot: int, seed: int | None, options: dict[str, Any] | None) -> tuple[list, dict, list | None]:
        actor, local = self._placement[slot]
        if self.batch_calls:
            return await self._batched(actor, "reset", local, (seed, options))
        return await actor.reset.remote(local, seed, options)

    async def step(self, slot: int, action: Any) -> tuple[list, float, bool, bool, dict]:
        actor, local = self._placement[slot]
        if self.batch_calls:
            return await self._batched(actor, "step", local, (action,))
        return await actor.step.remote(local, action)

    def _batched(self, actor: Any, name: str, local: int, args: tuple) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append((actor, name, local, args, future))
        return future

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        by_actor: dict[int, tuple[Any, list]] = {}
        for actor, name, local, args, future in pending:
            by_actor.setdefault(id(actor), (actor, []))[1].append((name, local, args, future))
        for actor, calls in by_actor.values():
            task = asyncio.get_running_loop().create_task(self._send(actor, calls))
            self._batch_tasks.add(task)
            task.add_done_callback(self._batch_tasks.discard)

    async def _send(self, actor: Any, calls: list[tuple[str, int, tuple, asyncio.Future]]) -> None:
        try:
            results = await actor.call_batch.remote([(name, local, args) for name, local, args, _ in calls])
        except Exception as exc:  # the actor died or the batch failed: every caller sees it
            results = [(False, exc)] * len(calls)
        for (_, _, _, future), (ok, value) in zip(calls, results):
            if future.done():  # its episode timed out or was cancelled
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    async def task_ids(self) -> list[str]:
        actor, local = self._placement[0]
        return await actor.task_ids.remote(local)

    async def recycle(self, slot: int) -> None:
        if not self._actors:  # already closed
            return
        import ray

        actor, local = self._placement[slot]
        try:
            await actor.recycle.remote(local)
        except ray.exceptions.RayActorError:  # the actor died (e.g. an env crashed its process)
            self._respawn(actor)
        except Exception:
            logger.exception("recycling env slot %d failed", slot)

    def _respawn(self, dead: Any) -> None:
        """Replace a dead actor; every slot it held moves to the new one (with fresh envs)."""
        if not any(actor is dead for actor in self._actors):
            return  # another slot of the same actor already replaced it
        index = next(i for i, actor in enumerate(self._actors) if actor is dead)
        fresh = self._actor_cls.remote(self._spec, self._kwargs)
        self._actors[index] = fresh
        for slot, (actor, local) in self._placement.items():
            if actor is dead:
                self._placement[slot] = (fresh, local)
        logger.warning("ray env actor %d died; replaced it", index)

    async def close(self) -> None:
        import ray

        if self._actors:
            try:
                await asyncio.wait_for(asyncio.gather(*(a.close.remote() for a in self._actors)), 30)
            except Exception:
                logger.exception("closing ray env hosts failed")
            for actor in self._actors:
                ray.kill(actor)
        self._actors = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False


def make_executor(kind: str, env: EnvSpec, env_kwargs: dict[str, Any] | None = None, **options: Any) -> Executor:
    if kind == "local":
        if options:
            raise TypeError(f"the local executor takes no options, got {sorted(options)}")
        return LocalExecutor(env, env_kwargs)
    if kind == "ray":
        return RayExecutor(env, env_kwargs, **options)
    raise ValueError(f"unknown executor {kind!r}: use 'local' or 'ray'")


# ---------------------------------------------------------------------------------------------- the pool
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
    """Plays episodes with ``num_workers`` at once; see the module docstring.

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
            await asyncio.wait_for(self._play(slot, spec, trajectory), limit)
        except Exception as exc:
            elapsed = time.perf_counter() - started
            if isinstance(exc, asyncio.TimeoutError) and limit is not None and elapsed >= limit:
                trajectory.error = f"timeout: the episode ran past {limit} s"
                self.stats.timeouts += 1
            else:  # includes a TimeoutError raised by the env or the policy themselves
                trajectory.error = _describe(exc)
            logger.warning("episode %s failed: %s", trajectory.episode_id, trajectory.error)
        trajectory.wall_s = time.perf_counter() - started
        self.stats.episodes += 1
        if trajectory.error is not None:
            self.stats.errors += 1
            trajectory.success = False
            await self.executor.recycle(slot)  # the env may be mid-call or broken: rebuild it
        return trajectory

    async def _play(self, slot: int, spec: EpisodeSpec, trajectory: Trajectory) -> None:
        options = {"task_id": spec.task_id} if spec.task_id is not None else None
        observation, info, tools = await self.executor.reset(slot, spec.seed, options)
        trajectory.task_id = str(info.get("task_id", trajectory.task_id))
        context: list[Message] = list(observation)
        turn_index = 0
        while True:
            sampling = dataclasses.replace(self.sampling, seed=sampling_seed(spec.seed, turn_index))
            t0 = time.perf_counter()
            # a fresh list of shallow copies: cheap (a deep copy was the pool's main cost), and a policy
            # that edits top-level message fields cannot change the recorded turns
            generation: Generation = await self.policy.generate([dict(m) for m in context], tools, sampling)
            t1 = time.perf_counter()
            action: Any = generation.message or generation.text
            message, _ = parse_action(action)
            observation, reward, terminated, truncated, info = await self.executor.step(slot, action)
            t2 = time.perf_counter()
            turn = Turn(
                episode_id=trajectory.episode_id,
                turn_index=turn_index,
                context=context,
                action=message,
                next_state=list(observation),
                prompt_ids=list(generation.prompt_ids),
                response_ids=list(generation.response_ids),
                response_logprobs=list(generation.response_logprobs),
                policy_version=generation.policy_version,
                env_id=self.env_name,
                task_id=trajectory.task_id,
                group_id=spec.group_id,
                env_reward=reward,
                terminated=terminated,
                truncated=truncated,
                info=info,
                timings={"generate_s": t1 - t0, "step_s": t2 - t1, "ready_at": time.time()},
            )
            trajectory.turns.append(turn)
            trajectory.reward += reward
            self.stats.turns += 1
            await self._emit(turn)
            context = context + [message] + list(observation)
            turn_index += 1
            if terminated or truncated:
                trajectory.success = bool(info.get("success", False))
                trajectory.info = dict(info)
                return

    async def _emit(self, turn: Turn) -> None:
        if self.on_turn is None:
            return
        try:
            await _maybe_await(self.on_turn(turn))
        except Exception:  # a sink bug must not kill rollouts; it is counted and logged
            self.stats.sink_errors += 1
            logger.exception("on_turn failed for turn %s", turn.turn_id)


def summarize(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
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
    judge: Any = None,
    group_size: int = 1,
    num_workers: int = 4,
    executor: str = "local",
    seed: int = 0,
    task_ids: Sequence[str] | None = None,
    episode_timeout_s: float | None = None,
    env_kwargs: dict[str, Any] | None = None,
    sampling: SamplingParams | None = None,
    judge_workers: int = 4,
    executor_options: dict[str, Any] | None = None,
    on_trajectory: TrajectorySink | None = None,
) -> tuple[list[Trajectory], dict[str, Any]]:
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


def run_rollout_cli(env: EnvSpec, policy: Policy, n: int, *, out_path: str | os.PathLike, judge: Any = None, **options: Any) -> dict[str, Any]:
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


__all__ = [
    "rollout_and_judge",
    "run_rollout_cli",
    "EnvHost",
    "EpisodeSpec",
    "Executor",
    "LocalExecutor",
    "PoolStats",
    "RayExecutor",
    "RolloutPool",
    "TurnSink",
    "make_executor",
    "make_groups",
    "sampling_seed",
    "summarize",
]
