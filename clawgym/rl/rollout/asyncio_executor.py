"""The asyncio executor: envs on the driver's event loop itself, with no thread per env.

At 1,024 concurrent episodes the local executor holds 1,024 threads and pays a thread hop per env
call; an env that never blocks needs neither. An env that defines coroutine methods
``areset(seed=..., options=...)`` and ``astep(action)`` on its unwrapped class is awaited (e.g. an env
that is an HTTP client, or a simulator); any other env's ``reset``/``step`` run inline on the loop, so
they must return in microseconds: a blocking call stalls every other episode.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from clawgym.rl.rollout.episode import EnvKwargs, EnvSpec, ResetOptions
from clawgym.rl.rollout.local import make_env

if TYPE_CHECKING:
    import gymnasium

    from clawgym.rl.types import Action

logger = logging.getLogger(__name__)


class AsyncioExecutor:
    """Envs in this process on the event loop; same interface as the local and Ray executors."""

    def __init__(self, env: EnvSpec, env_kwargs: EnvKwargs | None = None) -> None:
        self._spec = env
        self._kwargs = dict(env_kwargs or {})
        self._envs: dict[int, gymnasium.Env] = {}

    async def start(self, num_slots: int) -> None:
        return None

    def _env(self, slot: int) -> gymnasium.Env:
        if slot not in self._envs:
            self._envs[slot] = make_env(self._spec, self._kwargs)
        return self._envs[slot]

    async def reset(self, slot: int, seed: int | None,
                    options: ResetOptions | None) -> tuple[list, dict, list | None]:
        env = self._env(slot)
        areset = getattr(env.unwrapped, "areset", None)
        if areset is not None:
            observation, info = await areset(seed=seed, options=options)
        else:
            observation, info = env.reset(seed=seed, options=options)
        return observation, info, getattr(env.unwrapped, "tools", None)

    async def step(self, slot: int, action: Action) -> tuple[list, float, bool, bool, dict]:
        if slot not in self._envs:
            raise RuntimeError("step() before reset() on this env slot")
        env = self._envs[slot]
        astep = getattr(env.unwrapped, "astep", None)
        if astep is not None:
            observation, reward, terminated, truncated, info = await astep(action)
        else:
            observation, reward, terminated, truncated, info = env.step(action)
        return observation, float(reward), bool(terminated), bool(truncated), info

    async def task_ids(self) -> list[str]:
        task_set = getattr(self._env(0).unwrapped, "task_set", None)
        if task_set is None:
            raise TypeError("this env has no task_set; pass explicit task ids")
        return [task.id for task in task_set]

    async def recycle(self, slot: int) -> None:
        """Drop a slot's env (after a timeout or error); the next reset builds a fresh one."""
        self._close(self._envs.pop(slot, None))

    async def close(self) -> None:
        envs, self._envs = list(self._envs.values()), {}
        for env in envs:
            self._close(env)

    @staticmethod
    def _close(env: gymnasium.Env | None) -> None:
        if env is None:
            return
        try:
            env.close()
        except Exception:  # closing is best effort on a crash path
            logger.exception("closing an env failed")
