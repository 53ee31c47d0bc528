"""The Ray executor: the same env hosts inside Ray actors (``import ray`` happens only here, lazily)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import TYPE_CHECKING

from clawgym.rl.rollout.episode import EnvKwargs, EnvSpec, ResetOptions
from clawgym.rl.rollout.local import EnvHost, settle

if TYPE_CHECKING:
    from ray.actor import ActorClass, ActorHandle

    from clawgym.rl.types import Action

logger = logging.getLogger(__name__)


def _use_token_auth_if_present() -> None:
    """Join a cluster given by address the way Ray joins ``address="auto"``: with its token when one exists.

    Ray >= 2.5x's ``ray start --head`` turns token authentication on when a token exists
    (``~/.ray/auth_token``, ``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH``), but ``ray.init(address=HOST:PORT)``
    never does, and then retries for minutes on ``InvalidAuthToken``. ``RAY_AUTH_MODE`` set by the user wins.
    """
    try:
        from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


# Executors of one process share its Ray connection (the training loop runs a pool per producer): Ray is
# shut down (a private instance stopped, a cluster left) when the last of them closes, not the first.
_RAY_USERS: dict[str, int | bool] = {"count": 0, "started_here": False}


class RayExecutor:
    """Envs inside Ray actors (each an :class:`EnvHost` with several env threads); the policy stays here.

    ``address=None`` joins a running Ray instance or starts a local one with ``num_cpus``
    (the driver's ``sys.path`` is passed to the workers so test and script modules import there);
    ``address="HOST:6379"``/``"ray://..."``/``"auto"`` joins a cluster (with its auth token when one exists).
    Actors default to ``num_cpus=1`` each and there are ``num_actors`` of them (default: the cluster's CPU count, at
    most one per slot).

    ``batch_calls=True`` sends the reset/step calls that are ready in the same event-loop tick to an
    actor as one Ray call. A Ray call costs about a millisecond of CPU, so this raises throughput at
    high concurrency, but a slow env call then delays the answers of the calls batched with it
    (each batch returns when its slowest call does). Off by default.
    """

    def __init__(
        self,
        env: EnvSpec,
        env_kwargs: EnvKwargs | None = None,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        num_actors: int | None = None,
        actor_options: dict[str, object] | None = None,
        batch_calls: bool = False,
    ) -> None:
        self._spec = env
        self.batch_calls = batch_calls
        self._pending: list[tuple[ActorHandle, str, int, tuple, asyncio.Future]] = []
        self._batch_tasks: set[asyncio.Task] = set()
        self._kwargs = dict(env_kwargs or {})
        self.address = address
        self.num_cpus = num_cpus
        self.num_actors = num_actors
        self.actor_options = dict(actor_options or {"num_cpus": 1})
        self._actors: list[ActorHandle] = []
        self._actor_cls: ActorClass | None = None  # EnvHost as a Ray actor class, with its options
        self._placement: dict[int, tuple[ActorHandle, int]] = {}
        self._joined = False  # counted in _RAY_USERS until close
        self.start_timeout_s = 300.0  # actors not placed by then cannot be (resources) or the cluster is unwell

    async def start(self, num_slots: int) -> None:
        import ray  # the `ray` extra; imported only when this executor is used

        if not ray.is_initialized():
            if self.address not in (None, "auto"):
                _use_token_auth_if_present()
            kwargs: dict[str, object] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                kwargs["num_cpus"] = self.num_cpus
                path = os.pathsep.join(p for p in sys.path if p)
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            ray.init(address=self.address, **kwargs)
            _RAY_USERS["started_here"] = True
        _RAY_USERS["count"] += 1
        self._joined = True
        # Several executors may share one cluster (the training loop runs one pool per producer): size the
        # default from the CPUs still free, and when none is free share them (num_cpus=0) rather than
        # queue actors that would never be placed.
        options = dict(self.actor_options)
        free = int(ray.available_resources().get("CPU", 0))
        per_actor = float(options.get("num_cpus", 1) or 0)
        if per_actor > 0 and free < per_actor and not self.num_actors:
            logger.warning("ray executor: no free CPU in the cluster (%d in all): these env actors share CPUs with "
                           "the ones already placed", int(ray.cluster_resources().get("CPU", 0)))
            options["num_cpus"], per_actor = 0, 0.0
            free = int(ray.cluster_resources().get("CPU", 1))
        default_actors = max(1, int(free // per_actor)) if per_actor > 0 else max(1, free)
        count = max(1, min(num_slots, self.num_actors or default_actors))
        slots_per_actor = -(-num_slots // count)
        self._actor_cls = ray.remote(EnvHost).options(max_concurrency=4 * slots_per_actor + 16, **options)
        self._actors = [self._actor_cls.remote(self._spec, self._kwargs) for _ in range(count)]
        try:
            await asyncio.wait_for(asyncio.gather(*(actor.ping.remote() for actor in self._actors)),
                                   self.start_timeout_s)
        except asyncio.TimeoutError:
            raise RuntimeError(f"ray executor: {count} env actors ({options}) were not placed within "
                               f"{self.start_timeout_s:.0f} s; "
                               f"the cluster has {ray.available_resources().get('CPU', 0)} "
                               "CPUs free: lower rollout.workers or num_actors, or add nodes") from None
        self._placement = {slot: (self._actors[slot % count], slot // count) for slot in range(num_slots)}
        logger.info("ray executor: %d actors, %d env slots", count, num_slots)

    async def reset(self, slot: int, seed: int | None,
                    options: ResetOptions | None) -> tuple[list, dict, list | None]:
        actor, local = self._placement[slot]
        if self.batch_calls:
            return await self._batched(actor, "reset", local, (seed, options))
        return await actor.reset.remote(local, seed, options)

    async def step(self, slot: int, action: Action) -> tuple[list, float, bool, bool, dict]:
        actor, local = self._placement[slot]
        if self.batch_calls:
            return await self._batched(actor, "step", local, (action,))
        return await actor.step.remote(local, action)

    def _batched(self, actor: ActorHandle, name: str, local: int, args: tuple) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append((actor, name, local, args, future))
        return future

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        by_actor: dict[int, tuple[ActorHandle, list]] = {}
        for actor, name, local, args, future in pending:
            by_actor.setdefault(id(actor), (actor, []))[1].append((name, local, args, future))
        for actor, calls in by_actor.values():
            task = asyncio.get_running_loop().create_task(self._send(actor, calls))
            self._batch_tasks.add(task)
            task.add_done_callback(self._batch_tasks.discard)

    async def _send(self, actor: ActorHandle, calls: list[tuple[str, int, tuple, asyncio.Future]]) -> None:
        try:
            results = await actor.call_batch.remote([(name, local, args) for name, local, args, _ in calls])
        except Exception as exc:  # the actor died or the batch failed: every caller sees it
            results = [(False, exc)] * len(calls)
        for (_, _, _, future), (ok, value) in zip(calls, results):
            settle(future, ok, value)

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

    def _respawn(self, dead: ActorHandle) -> None:
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

        if self._actors and ray.is_initialized():
            try:
                await asyncio.wait_for(asyncio.gather(*(a.close.remote() for a in self._actors)), 30)
            except Exception:
                logger.exception("closing ray env hosts failed")
            for actor in self._actors:
                ray.kill(actor)
        self._actors = []
        if self._joined:
            self._joined = False
            _RAY_USERS["count"] -= 1
            if _RAY_USERS["count"] == 0 and _RAY_USERS["started_here"]:  # the last executor out disconnects
                ray.shutdown()
                _RAY_USERS["started_here"] = False
