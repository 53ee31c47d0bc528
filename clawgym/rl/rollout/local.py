"""Env hosts and the local executor: each env on its own dedicated thread, never shared across threads.

Results come back to the event loop through an :class:`_Inbox`: the first result of a batch wakes the
loop (one ``call_soon_threadsafe``, one self-pipe write) and every result that lands before the loop
drains rides along. ``run_in_executor`` paid a wake-up and two chained futures per env call; at
1,024 concurrent episodes dropping them saved a fifth to a third of the orchestration CPU per step
(benchmarks/rollout_overhead.py).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar

from clawgym.rl.rollout.episode import EnvKwargs, EnvSpec, ResetOptions

if TYPE_CHECKING:
    import gymnasium

    from clawgym.rl.types import Action

T = TypeVar("T")

logger = logging.getLogger(__name__)


def make_env(env: EnvSpec, env_kwargs: EnvKwargs) -> gymnasium.Env:
    if callable(env):
        return env(**env_kwargs)
    import gymnasium

    import clawgym  # noqa: F401  (registers the clawgym ids in this process, e.g. a Ray worker)

    return gymnasium.make(env, **env_kwargs)


def describe(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)  # ray.exceptions.RayTaskError carries the original exception
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")


def settle(future: asyncio.Future, ok: bool, value: object) -> None:
    """Resolve an env call's future with its ``(ok, value)`` result, unless its episode gave up on it."""
    if future.done():  # its episode was cancelled or timed out
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class _Inbox:
    """Env-thread results for one event loop, delivered in batches: one wake-up per batch, not per call."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._results: collections.deque = collections.deque()
        self._scheduled = False

    def put(self, future: asyncio.Future, ok: bool, value: object) -> None:
        """From any thread: resolve ``future`` on the loop (with ``value``, or raise it when not ``ok``)."""
        with self._lock:
            self._results.append((future, ok, value))
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    def _drain(self) -> None:
        with self._lock:
            results, self._results = self._results, collections.deque()
            self._scheduled = False
        for future, ok, value in results:
            settle(future, ok, value)


class _EnvSlot:
    """One env on its own thread: created, stepped and closed there, never touched by another thread."""

    def __init__(self, env: EnvSpec, env_kwargs: EnvKwargs, inbox: Callable[[], _Inbox]) -> None:
        self._spec = env
        self._kwargs = env_kwargs
        self._inbox = inbox
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clawgym-env")
        self._env: gymnasium.Env | None = None
        self.inflight = 0  # calls submitted to the thread and not yet returned

    async def call(self, fn: Callable[..., T], *args: object) -> T:
        inbox = self._inbox()
        future = inbox.loop.create_future()
        self.inflight += 1
        self._thread.submit(self._run, fn, args, future, inbox)
        return await future

    def _run(self, fn: Callable[..., object], args: tuple, future: asyncio.Future, inbox: _Inbox) -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the caller, like run_in_executor would
            self.inflight -= 1
            inbox.put(future, False, exc)
            return
        self.inflight -= 1
        inbox.put(future, True, result)

    def _ensure(self) -> gymnasium.Env:
        if self._env is None:
            self._env = make_env(self._spec, self._kwargs)
        return self._env

    def reset(self, seed: int | None, options: ResetOptions | None) -> tuple[list, dict, list | None]:
        env = self._ensure()
        observation, info = env.reset(seed=seed, options=options)
        return observation, info, getattr(env.unwrapped, "tools", None)

    def step(self, action: Action) -> tuple[list, float, bool, bool, dict]:
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

    def __init__(self, env: EnvSpec, env_kwargs: EnvKwargs | None = None) -> None:
        self._spec = env
        self._kwargs = dict(env_kwargs or {})
        self._slots: dict[int, _EnvSlot] = {}
        self._inbox_: _Inbox | None = None

    def _inbox(self) -> _Inbox:
        """The inbox of the running event loop (one per host; a new loop gets a new one)."""
        loop = asyncio.get_running_loop()
        if self._inbox_ is None or self._inbox_.loop is not loop:
            self._inbox_ = _Inbox(loop)
        return self._inbox_

    def _slot(self, slot: int) -> _EnvSlot:
        env_slot = self._slots.get(slot)
        if env_slot is None:
            env_slot = self._slots[slot] = _EnvSlot(self._spec, self._kwargs, self._inbox)
        return env_slot

    async def reset(self, slot: int, seed: int | None,
                    options: ResetOptions | None) -> tuple[list, dict, list | None]:
        env_slot = self._slot(slot)
        return await env_slot.call(env_slot.reset, seed, options)

    async def step(self, slot: int, action: Action) -> tuple[list, float, bool, bool, dict]:
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

    async def call_batch(self, calls: list[tuple[str, int, tuple]]) -> list[tuple[bool, object]]:
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


class Executor(Protocol):
    """Where envs live. Slots ``0..num_slots-1`` each hold at most one env, used by one episode at a time."""

    async def start(self, num_slots: int) -> None: ...

    async def reset(self, slot: int, seed: int | None,
                    options: ResetOptions | None) -> tuple[list, dict, list | None]: ...

    async def step(self, slot: int, action: Action) -> tuple[list, float, bool, bool, dict]: ...

    async def task_ids(self) -> list[str]: ...

    async def recycle(self, slot: int) -> None: ...

    async def close(self) -> None: ...


class LocalExecutor:
    """Envs in this process, one dedicated thread per env."""

    def __init__(self, env: EnvSpec, env_kwargs: EnvKwargs | None = None) -> None:
        self.host = EnvHost(env, env_kwargs)

    async def start(self, num_slots: int) -> None:
        return None

    async def reset(self, slot: int, seed: int | None,
                    options: ResetOptions | None) -> tuple[list, dict, list | None]:
        return await self.host.reset(slot, seed, options)

    async def step(self, slot: int, action: Action) -> tuple[list, float, bool, bool, dict]:
        return await self.host.step(slot, action)

    async def task_ids(self) -> list[str]:
        return await self.host.task_ids(0)

    async def recycle(self, slot: int) -> None:
        await self.host.recycle(slot)

    async def close(self) -> None:
        await self.host.close()

