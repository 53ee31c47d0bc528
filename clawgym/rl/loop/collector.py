"""The rollout and judge side of the loop: producers that play GRPO groups and fill the buffer.

Each producer owns one :class:`RolloutPool` of G env workers and plays one group after another. It
reserves a buffer slot *before* it starts a group (so ``buffer_groups`` bounds groups in flight +
waiting, and so how stale data can get). Once a group's episodes are played, a finisher task waits
until every turn is judged, builds the group's samples (:func:`clawgym.rl.groups.build_group`) and
puts the group in the buffer, while the producer already plays its next group (if a slot is free):
the judge's verdicts and the next group's answers then share the server's batches instead of taking
turns, which is what keeps the trainer fed (``benchmarks/loop_overlap.py``). A finisher's error
fails its producer.

The synchronous schedule is a gate: :meth:`BatchCollector.pause` holds producers before their next
group until :meth:`BatchCollector.resume` (the loop pauses from batch to publish in ``mode="sync"``).
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any, Sequence

import numpy as np

from clawgym.rl.buffer import SampleBuffer
from clawgym.rl.groups import build_group
from clawgym.rl.judge import JudgeStage
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.rollout import RolloutPool, make_groups
from clawgym.rl.types import Trajectory, Turn


class BusyClock:
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


class BatchCollector:
    """Plays groups, tracks their judgements and puts finished groups in ``buffer``.

    ``counters`` and ``refused`` are the loop's own Counters (updated in place). ``version_offset``
    (trainer version - served version) is set by the loop after each publication; samples are
    stamped with it so staleness is counted in trainer versions.
    """

    def __init__(self, config: LoopConfig, buffer: SampleBuffer, *, method: str, reward_mode: str,
                 tools: list[dict[str, Any]] | None, counters: collections.Counter,
                 refused: collections.Counter) -> None:
        self.config = config
        self.buffer = buffer
        self.method = method
        self.reward_mode = reward_mode
        self.tools = tools
        self.counters = counters
        self.refused = refused
        self.groups_started = 0
        self.version_offset = 0
        self.generated_tokens = 0
        self.blocked_s = 0.0  # producers waiting for buffer room or the sync gate
        self.rollouts = BusyClock()  # groups being played
        self.stage: JudgeStage | None = None
        self._judged: dict[str, asyncio.Event] = {}
        self._stopping = False
        self._gate = asyncio.Event()
        self._gate.set()

    # ---- the schedule ----------------------------------------------------------------------

    def pause(self) -> None:
        """No new group starts until :meth:`resume` (groups already playing finish)."""
        self._gate.clear()

    def resume(self) -> None:
        self._gate.set()

    def stop(self) -> None:
        self._stopping = True
        self._gate.set()

    # ---- the judge side --------------------------------------------------------------------

    def on_turn(self, turn: Turn) -> None:
        """Every finished turn (the pools' ``on_turn``): counted, and sent to the judge stage if any."""
        self.generated_tokens += len(turn.response_ids)
        if self.stage is None:
            return
        self._judged[turn.turn_id] = asyncio.Event()
        self.stage.submit(turn)

    def on_judged(self, turn: Turn) -> None:
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

    # ---- the producers ---------------------------------------------------------------------

    def _next_task(self, index: int, task_ids: Sequence[str]) -> str:
        rng = np.random.default_rng([self.config.seed, index])
        return task_ids[int(rng.integers(len(task_ids)))]

    async def produce(self, pool: RolloutPool, task_ids: Sequence[str]) -> None:
        """One producer: play a group, hand it to a finisher (judged -> buffered), play the next; until :meth:`stop`."""
        c = self.config
        producer = asyncio.current_task()
        finishing: set[asyncio.Task] = set()
        failed: list[BaseException] = []

        def finished(task: asyncio.Task) -> None:
            finishing.discard(task)
            if not task.cancelled() and task.exception() is not None and not failed:
                failed.append(task.exception())  # type: ignore[arg-type]
                producer.cancel()  # wherever the producer waits (a slot, a group): it fails now

        try:
            while not self._stopping:
                t0 = time.perf_counter()
                await self.buffer.reserve()
                await self._gate.wait()
                self.blocked_s += time.perf_counter() - t0
                if self._stopping:
                    self.buffer.release()
                    return
                index = self.groups_started
                self.groups_started += 1
                specs = make_groups([self._next_task(index, task_ids)], c.group_size,
                                    seed=(c.seed * 1_000_003 + index * c.group_size) % (2**31 - 1))
                self.rollouts.up()
                try:
                    trajectories = await pool.run(specs)
                finally:
                    self.rollouts.down()
                self.counters["episodes"] += len(trajectories)
                self.counters["episode_errors"] += sum(t.error is not None for t in trajectories)
                task = asyncio.create_task(self._finish(trajectories), name="clawgym-finisher")
                finishing.add(task)
                task.add_done_callback(finished)
        except asyncio.CancelledError:
            if failed:
                raise failed[0] from None
            raise
        finally:
            for task in list(finishing):
                task.cancel()
            await asyncio.gather(*finishing, return_exceptions=True)

    async def _finish(self, trajectories: Sequence[Trajectory]) -> None:
        """Wait for the group's judgements, build its samples, buffer it (or free its slot)."""
        c = self.config
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
            return
        await self.buffer.put(group, reserved=True)

