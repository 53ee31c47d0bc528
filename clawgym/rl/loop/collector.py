"""The rollout and judge side of the loop: producers that play GRPO groups and fill the buffer.

Each producer owns one :class:`RolloutPool` of G env workers and plays one group after another. It
reserves a buffer slot *before* it starts a group (so ``buffer_groups`` bounds groups in flight +
waiting, and so how stale data can get). Once a group's episodes are played, a finisher task waits
until every turn is judged, builds the group's samples (:func:`clawgym.rl.groups.build_group`) and
puts the group in the buffer, while the producer already plays its next group (if a slot is free):
the judge's verdicts and the next group's answers then share the server's batches instead of taking
turns, which is what keeps the trainer fed (``benchmarks/loop_overlap.py``). A finisher's error
fails its producer.

Dynamic sampling (DAPO): a grpo group whose rewards are all equal (every advantage 0) is dropped by
``build_group`` and its slot freed, so producers play another in its place. The collector counts, in a
:class:`Draws` window, the groups finished since the trainer last took a batch; :meth:`take_batch` waits
for ``batch_groups`` buffered groups or, with ``max_draws_per_batch`` set, until the window holds
``max_draws_per_batch * batch_groups`` finished groups (the cap): then it takes what is buffered, possibly
fewer groups or none (the train step is then skipped). A group counts once it is finished (played,
judged and built, so dropped or kept), never when it starts: a group still playing or being judged at the
cap counts in the next window, and a kept one is in the buffer before a batch taken at the cap is.
opd, hybrid and opd_topk groups are never dropped for equal rewards (their distillation term teaches
without reward variance).

Tasks are drawn uniformly, or by pass rate (``curriculum="pass_rate"``,
:class:`~clawgym.rl.loop.curriculum.PassRateCurriculum`, updated with every finished group, dropped or
not), each draw from ``np.random.default_rng([seed, group index])``.

The synchronous schedule is a gate: :meth:`BatchCollector.pause` holds producers before their next
group until :meth:`BatchCollector.resume` (the loop pauses from batch to publish in ``mode="sync"``).
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import KW_ONLY, dataclass
from typing import Sequence

import numpy as np

from clawgym.rl.buffer import SampleBuffer, SampleGroup
from clawgym.rl.groups import build_group
from clawgym.rl.judge import JudgeStage
from clawgym.rl.loop.config import LoopConfig
from clawgym.rl.loop.curriculum import PassRateCurriculum
from clawgym.rl.rollout import RolloutPool, make_groups
from clawgym.rl.types import JSONObject, Trajectory, Turn


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


@dataclass
class Draws:
    """The groups finished since the trainer last took a batch (one train step's dynamic-sampling window).

    ``drawn`` = groups buffered + ``dropped_zero_variance`` (grpo, all rewards equal) + ``dropped_untrainable``
    (nothing trainable: every episode failed or every turn was refused). ``cap_hit``: the batch was taken
    at the draw cap, not because ``batch_groups`` groups were buffered.
    """

    drawn: int = 0
    dropped_zero_variance: int = 0
    dropped_untrainable: int = 0
    cap_hit: bool = False


@dataclass(eq=False)
class BatchCollector:
    """Plays groups, tracks their judgements and puts finished groups in ``buffer``.

    ``counters`` and ``refused`` are the loop's own Counters (updated in place). ``version_offset``
    (trainer version - served version) is set by the loop after each publication; samples are
    stamped with it so staleness is counted in trainer versions.
    """

    config: LoopConfig
    buffer: SampleBuffer
    _: KW_ONLY
    method: str
    reward_mode: str
    tools: list[JSONObject] | None
    counters: collections.Counter
    refused: collections.Counter

    def __post_init__(self) -> None:
        self.groups_started = 0
        self.version_offset = 0
        self.generated_tokens = 0
        self.blocked_s = 0.0  # producers waiting for buffer room or the sync gate
        self.rollouts = BusyClock()  # groups being played
        self.stage: JudgeStage | None = None
        c = self.config
        self.curriculum = PassRateCurriculum(c.curriculum_floor) if c.curriculum == "pass_rate" else None
        self.draws = Draws()  # since the last batch was taken
        self._finished = asyncio.Condition()  # notified whenever a group is finished (buffered or dropped)
        self._putting = 0  # groups counted in the window but still being written to the buffer
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
        if self.curriculum is not None:
            return self.curriculum.draw(task_ids, rng)
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
                task_id = self._next_task(index, task_ids)
                specs = make_groups([task_id], c.group_size,
                                    seed=(c.seed * 1_000_003 + index * c.group_size) % (2**31 - 1))
                self.rollouts.up()
                try:
                    trajectories = await pool.run(specs)
                finally:
                    self.rollouts.down()
                self.counters["episodes"] += len(trajectories)
                self.counters["episode_errors"] += sum(t.error is not None for t in trajectories)
                task = asyncio.create_task(self._finish(task_id, trajectories), name="clawgym-finisher")
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

    async def _finish(self, task_id: str, trajectories: Sequence[Trajectory]) -> None:
        """Wait for the group's judgements, update the curriculum, build its samples, buffer it (or free its slot)."""
        c = self.config
        await self._wait_judged(trajectories)
        if self.curriculum is not None:  # before the drop: an all-equal group is evidence too
            self.curriculum.update(task_id, [t.success for t in trajectories])
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
        self.draws.drawn += 1
        if group is None:
            self.counters["groups_empty"] += 1
            if refused["zero_advantage_group"]:
                self.counters["groups_dropped_zero_variance"] += 1
                self.draws.dropped_zero_variance += 1
            else:
                self.draws.dropped_untrainable += 1
            self.buffer.release()
        else:
            self._putting += 1  # counted already: a batch taken at the cap waits until it is in the buffer
            try:
                await self.buffer.put(group, reserved=True)
            finally:
                self._putting -= 1
        async with self._finished:
            self._finished.notify_all()

    # ---- the trainer side ------------------------------------------------------------------

    def _draw_cap(self) -> int | None:
        c = self.config
        return None if c.max_draws_per_batch is None else c.max_draws_per_batch * c.batch_groups

    async def take_batch(self) -> tuple[list[SampleGroup], Draws]:
        """Wait for a full batch or the draw cap; take the buffered groups (at most ``batch_groups``, maybe none).

        Returns the groups and the window's :class:`Draws`; a new window starts.
        """
        n = self.config.batch_groups
        cap = self._draw_cap()

        def ready() -> bool:
            return len(self.buffer) >= n or (cap is not None and self.draws.drawn >= cap and self._putting == 0)

        async with self._finished:
            await self._finished.wait_for(ready)
            draws, self.draws = self.draws, Draws()
            draws.cap_hit = len(self.buffer) < n
            take = min(n, len(self.buffer))
        groups = await self.buffer.get(take) if take else []
        return groups, draws
