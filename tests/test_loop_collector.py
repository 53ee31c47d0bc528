"""The loop's producers: a group's judging does not hold up the next group, and a group that cannot be
finished fails its producer at once, even while the producer waits for a buffer slot."""

from __future__ import annotations

import asyncio
import collections

import pytest

import clawgym.rl.loop.collector as collector_module
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.buffer import SampleBuffer
from clawgym.rl.judge import JudgeStage
from clawgym.rl.loop import LoopConfig
from clawgym.rl.loop.collector import BatchCollector
from clawgym.rl.rollout import RolloutPool
from clawgym.rl.types import JudgeResult
from tests.loop_envs import make_parity_env


class GateJudge:
    """Gives every turn a verdict, but only once ``gate`` is open (a judge that is slow for now)."""

    name = "gate"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.judged = 0

    async def judge(self, turn):
        await self.gate.wait()
        self.judged += 1
        return JudgeResult(score=1.0, source="prm")


async def until(condition, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out waiting for the condition")
        await asyncio.sleep(0.01)


async def start(tmp_path, capacity: int):
    """One producer (a pool of 2 workers, groups of 2) feeding a buffer through a judge stage."""
    config = LoopConfig(batch_groups=1, group_size=2, num_workers=2, buffer_groups=capacity, drop_zero_advantage=False,
                        output_dir=str(tmp_path), max_tokens=8)
    buffer = SampleBuffer(capacity, tmp_path / "pending.jsonl")
    collector = BatchCollector(config, buffer, method="grpo", reward_mode="outcome", tools=None,
                               counters=collections.Counter(), refused=collections.Counter())
    judge = GateJudge()
    collector.stage = JudgeStage([judge], workers=4, on_judged=collector.on_judged)
    await collector.stage.start()
    replies = iter(["ab", "abc"] * 100)  # even and odd lengths: rewards differ inside a group
    pool = RolloutPool(make_parity_env, ScriptedPolicy(lambda messages: next(replies), byte_tokens=True),
                       num_workers=2, env_kwargs={"split": "train"}, on_turn=collector.on_turn)
    await pool.start()
    producer = asyncio.create_task(collector.produce(pool, ["parity-00", "parity-01"]))
    return collector, buffer, judge, pool, producer


async def stop(collector, pool, producer) -> None:
    collector.stop()
    producer.cancel()
    await asyncio.gather(producer, return_exceptions=True)
    await pool.close()
    await collector.stage.close(timeout_s=1)


async def test_the_next_group_plays_while_the_last_one_is_judged(tmp_path):
    collector, buffer, judge, pool, producer = await start(tmp_path, capacity=2)
    try:
        await until(lambda: collector.groups_started == 2 and collector.counters["episodes"] == 4)
        assert len(buffer) == 0 and judge.judged == 0  # both groups played, neither judged yet
        judge.gate.set()
        await until(lambda: len(buffer) == 2)
        groups = await buffer.get(2)
        assert [len(g.samples) for g in groups] == [2, 2] and judge.judged == 4
        assert collector.counters["groups_played"] == 2
    finally:
        await stop(collector, pool, producer)


async def test_a_group_that_cannot_be_built_fails_its_producer_while_it_waits_for_a_slot(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("cannot build this group")

    monkeypatch.setattr(collector_module, "build_group", broken)
    collector, buffer, judge, pool, producer = await start(tmp_path, capacity=1)
    try:
        await until(lambda: collector.groups_started == 1 and collector.counters["episodes"] == 2)
        await asyncio.sleep(0.05)
        assert not producer.done()  # waiting for the only slot, held by the group being judged
        judge.gate.set()
        with pytest.raises(RuntimeError, match="cannot build this group"):
            await asyncio.wait_for(producer, 10)
    finally:
        await stop(collector, pool, producer)


def test_judge_concurrency_defaults_to_one_slot_per_rollout_worker(tmp_path):
    assert LoopConfig(output_dir=str(tmp_path)).judge_workers is None  # the loop then uses num_workers
    assert LoopConfig(output_dir=str(tmp_path), judge_workers=2).judge_workers == 2
    with pytest.raises(ValueError, match="judge_workers"):
        LoopConfig(output_dir=str(tmp_path), judge_workers=0)
