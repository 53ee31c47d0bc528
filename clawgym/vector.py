"""Vectorised use: ``clawgym.vector.make(id, n)`` runs n copies of an env, each in its own thread.

Agent envs spend their time waiting (on a shell, a browser, a test run), so threads give real
parallelism without pickling envs into subprocesses. Each sub-env is created, stepped and closed on
one dedicated thread and never touched from another: Playwright's sync API and some sandboxes
require that. Observations come batched as tuples (one message list per env), like Gymnasium's
batching of custom spaces; autoreset follows Gymnasium's default NEXT_STEP mode: the step after an
episode ends resets that env and ignores its action.

``gymnasium.vector.SyncVectorEnv`` also works with every clawgym env (sequentially, on the caller's
thread).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space


class ThreadVectorEnv(VectorEnv):
    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]]) -> None:
        if not env_fns:
            raise ValueError("ThreadVectorEnv needs at least one env factory")
        self.num_envs = len(env_fns)
        self._threads = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"clawgym-env{i}")
                         for i in range(self.num_envs)]
        self.envs: list[gym.Env] = self._on_each([lambda fn=fn: fn() for fn in env_fns])
        first = self.envs[0]
        self.metadata = dict(first.metadata)
        self.metadata["autoreset_mode"] = gym.vector.AutoresetMode.NEXT_STEP
        self.render_mode = first.render_mode
        self.spec = first.spec
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._autoreset = np.zeros(self.num_envs, dtype=np.bool_)
        self.closed = False

    def _on_each(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        """Run calls[i] on env i's own thread, all at once, and wait for every result."""
        futures = [pool.submit(call) for pool, call in zip(self._threads, calls)]
        return [future.result() for future in futures]

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        seeds = seed if isinstance(seed, list) else [None if seed is None else seed + i for i in range(self.num_envs)]
        if len(seeds) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        results = self._on_each(
            [lambda env=env, s=s: env.reset(seed=s, options=options) for env, s in zip(self.envs, seeds)])
        self._autoreset[:] = False
        observations = tuple(obs for obs, _ in results)
        infos: dict[str, Any] = {}
        for index, (_, info) in enumerate(results):
            infos = self._add_info(infos, info, index)
        return observations, infos

    def step(self, actions: Sequence[Any]):
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")

        def one(index: int, action: Any):
            env = self.envs[index]
            if self._autoreset[index]:
                obs, info = env.reset()
                return obs, 0.0, False, False, info
            return env.step(action)

        results = self._on_each([lambda i=i, a=a: one(i, a) for i, a in enumerate(actions)])
        observations = tuple(r[0] for r in results)
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminations = np.array([r[2] for r in results], dtype=np.bool_)
        truncations = np.array([r[3] for r in results], dtype=np.bool_)
        infos: dict[str, Any] = {}
        for index, result in enumerate(results):
            infos = self._add_info(infos, result[4], index)
        self._autoreset = np.logical_or(terminations, truncations)
        return observations, rewards, terminations, truncations, infos

    def render(self):
        return tuple(self._on_each([lambda env=env: env.render() for env in self.envs]))

    def close_extras(self, **kwargs: Any) -> None:
        try:
            self._on_each([lambda env=env: env.close() for env in self.envs])
        finally:
            for pool in self._threads:
                pool.shutdown(wait=True)


def make(env_id: str, num_envs: int, **kwargs: Any) -> ThreadVectorEnv:
    """``num_envs`` copies of ``gym.make(env_id, **kwargs)``, each living on its own thread."""
    import clawgym  # noqa: F401  (registers the ids)

    return ThreadVectorEnv([lambda: gym.make(env_id, **kwargs) for _ in range(num_envs)])
