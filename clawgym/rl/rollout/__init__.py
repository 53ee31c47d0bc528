"""The async rollout pool: N env workers play episodes of any gym id with any :class:`Policy`.

Modules: ``episode`` (specs, groups, one episode's loop), ``local`` (env hosts, the local executor),
``asyncio_executor``, ``ray_executor``, ``pool`` (:class:`RolloutPool`), ``summary`` (summaries,
``clawgym rollout``).

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
(created, used and closed on that thread; envs are never shared across threads), ``asyncio`` runs envs
that never block (or define ``areset``/``astep`` coroutines) on the event loop itself, ``ray`` places the
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

from clawgym.rl.rollout.asyncio_executor import AsyncioExecutor
from clawgym.rl.rollout.episode import (
    EnvKwargs,
    EnvSpec,
    EpisodeSpec,
    TrajectorySink,
    TurnSink,
    make_groups,
    play_episode,
    sampling_seed,
)
from clawgym.rl.rollout.local import EnvHost, Executor, LocalExecutor
from clawgym.rl.rollout.pool import PoolStats, RolloutPool, make_executor
from clawgym.rl.rollout.ray_executor import RayExecutor
from clawgym.rl.rollout.summary import rollout_and_judge, run_rollout_cli, summarize

__all__ = [
    "rollout_and_judge",
    "run_rollout_cli",
    "AsyncioExecutor",
    "EnvHost",
    "EnvKwargs",
    "EnvSpec",
    "EpisodeSpec",
    "Executor",
    "LocalExecutor",
    "PoolStats",
    "RayExecutor",
    "RolloutPool",
    "TrajectorySink",
    "TurnSink",
    "make_executor",
    "make_groups",
    "play_episode",
    "sampling_seed",
    "summarize",
]
