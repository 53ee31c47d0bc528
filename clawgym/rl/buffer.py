"""The bounded, durable buffer of judged sample groups between the judge loop and the trainer.

Why groups: GRPO compares the G rollouts of one task, so the unit that enters and leaves the buffer is a
whole judged group (:class:`SampleGroup`), never part of one.

Bounded: a producer reserves a slot (:meth:`SampleBuffer.reserve`) *before* it starts playing a group
and the trainer frees it when it takes the group, so ``capacity`` bounds groups in flight plus groups
waiting. That bounds how far rollouts run ahead of the weights (staleness) without ever making a
finished group wait to get in.

Durable: :meth:`SampleBuffer.put` appends the group to an append-only JSONL (``pending.jsonl``,
flushed and fsynced) before the trainer can see it. The trainer's consumed sample ids live in its
checkpoint; after a crash :meth:`SampleBuffer.recover` re-reads the file and re-queues every sample
that is not in the consumed set, so a judged sample is neither lost nor trained on twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from clawgym.rl.types import JSONObject, Sample, from_dict_with_records, read_jsonl

logger = logging.getLogger(__name__)


@dataclass
class SampleGroup:
    """The training samples of one GRPO group, with the numbers the metrics need."""

    group_id: str
    samples: list[Sample]
    task_id: str = ""
    rewards: list[float] = field(default_factory=list)  # one outcome reward per trajectory
    successes: list[bool] = field(default_factory=list)
    prm_scores: list[float] = field(default_factory=list)  # one per judged turn (empty without a PRM)
    judge_s: float = 0.0  # summed judge latency of the group's turns
    created_at: float = field(default_factory=time.time)
    reserved: bool = field(default=False, compare=False)  # holds a buffer slot (not persisted)

    def to_dict(self) -> JSONObject:
        return {
            "group_id": self.group_id,
            "samples": [s.to_dict() for s in self.samples],
            "task_id": self.task_id,
            "rewards": self.rewards,
            "successes": self.successes,
            "prm_scores": self.prm_scores,
            "judge_s": self.judge_s,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: JSONObject) -> "SampleGroup":
        return from_dict_with_records(cls, data, "samples", Sample)

    @property
    def sample_ids(self) -> list[str]:
        return [s.sample_id for s in self.samples]


class SampleBuffer:
    """FIFO of :class:`SampleGroup` with slot reservation and an optional append-only log."""

    def __init__(self, capacity: int, path: str | Path | None = None) -> None:
        if capacity < 1:
            raise ValueError("buffer capacity must be at least 1 group")
        self.capacity = capacity
        self.path = Path(path) if path is not None else None
        self._groups: deque[SampleGroup] = deque()
        self._slots = asyncio.Semaphore(capacity)
        self._changed = asyncio.Condition()
        self.put_count = 0
        self.recovered = 0

    def __len__(self) -> int:
        return len(self._groups)

    # ---- producer side ---------------------------------------------------------------------

    async def reserve(self) -> None:
        """Wait for a free slot; call before playing a group, then :meth:`put` or :meth:`release`."""
        await self._slots.acquire()

    def release(self) -> None:
        """Give back a slot whose group produced nothing to train on."""
        self._slots.release()

    async def put(self, group: SampleGroup, reserved: bool = True) -> None:
        """Persist the group (append + fsync), then make it visible to :meth:`get`."""
        group.reserved = reserved
        if self.path is not None:
            await asyncio.to_thread(self._append, [group])
        async with self._changed:
            self._groups.append(group)
            self.put_count += 1
            self._changed.notify_all()

    def _append(self, groups: Iterable[SampleGroup]) -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            for group in groups:
                handle.write(json.dumps(group.to_dict(), ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    # ---- consumer side ---------------------------------------------------------------------

    async def get(self, num_groups: int) -> list[SampleGroup]:
        """Wait until ``num_groups`` groups are buffered and take them (oldest first)."""
        if num_groups > self.capacity:
            raise ValueError(f"cannot take {num_groups} groups from a buffer of capacity {self.capacity}")
        async with self._changed:
            await self._changed.wait_for(lambda: len(self._groups) >= num_groups)
            taken = [self._groups.popleft() for _ in range(num_groups)]
        for group in taken:
            if group.reserved:
                group.reserved = False
                self._slots.release()
        return taken

    # ---- recovery --------------------------------------------------------------------------

    def recover(self, consumed: set[str]) -> int:
        """Re-queue the logged groups' samples that are not in ``consumed``; returns groups re-queued.

        A group with some samples consumed (possible only if the log was edited) keeps the rest. The
        recovered groups hold no slot, so they never block producers.
        """
        if self.path is None or not self.path.exists():
            return 0
        seen: set[str] = set()
        count = 0
        for record in read_jsonl(self.path):
            group = SampleGroup.from_dict(record)  # type: ignore[arg-type]
            if group.group_id in seen:
                continue
            seen.add(group.group_id)
            group.samples = [s for s in group.samples if s.sample_id not in consumed]
            if not group.samples:
                continue
            self._groups.append(group)
            count += 1
        self.recovered = count
        if count:
            logger.info("recovered %d judged, untrained groups from %s", count, self.path)
        return count


def logged_sample_ids(path: str | Path) -> list[str]:
    """Every sample id in a pending log, in order (for audits and tests)."""
    ids: list[str] = []
    for record in read_jsonl(path):
        ids.extend(s["sample_id"] for s in record.get("samples", []))  # type: ignore[union-attr]
    return ids
