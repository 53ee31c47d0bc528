"""RL that never wastes a group: all-equal grpo groups are dropped and replaced (DAPO's dynamic sampling),
a step waits for at most ``max_draws_per_batch * batch_groups`` finished groups (then trains on fewer, or is
skipped), hybrid groups keep their equal rewards, and the pass-rate curriculum draws tasks near 50 % most.

No model: a scripted policy answers the parity env (an even-length reply scores 1), a fake trainer records
what it is given. One producer (2 workers, groups of 2) plays group k with calls 2k and 2k+1, so a script
of call numbers fixes which groups have variance, and the windows below are exact.
"""

from __future__ import annotations

import asyncio
import collections
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import pytest

from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.buffer import SampleBuffer
from clawgym.rl.loop import CHECKPOINT_DIR, LOOP_STATE, TRAINED_FILE, AsyncRLLoop, LoopConfig
from clawgym.rl.loop.collector import BatchCollector
from clawgym.rl.loop.config import CURRICULUM_FILE
from clawgym.rl.loop.curriculum import MAX_WEIGHT, PassRateCurriculum
from clawgym.rl.rollout import RolloutPool
from tests.loop_envs import make_parity_env

PASS, FAIL = "ab", "abc"  # even length: reward 1; odd: reward 0


def by_group(varied: set[int]) -> Callable[[list[dict[str, Any]]], str]:
    """Group k (calls 2k, 2k+1) gets one pass and one fail if k is in ``varied``, else two fails."""
    calls = iter(range(10**6))

    def respond(messages: list[dict[str, Any]]) -> str:
        call = next(calls)
        return PASS if call // 2 in varied and call % 2 == 0 else FAIL

    return respond


def by_task(rates: dict[str, str]) -> Callable[[list[dict[str, Any]]], str]:
    """By the task's number in the prompt: "pass" always passes, "fail" always fails, "half" alternates."""
    counts: collections.Counter = collections.Counter()

    def respond(messages: list[dict[str, Any]]) -> str:
        number = next(m["content"] for m in messages if m["role"] == "user").split()[-1].rstrip(".")
        kind = rates[f"parity-{int(number):02d}"]
        counts[number] += 1
        return {"pass": PASS, "fail": FAIL, "half": PASS if counts[number] % 2 else FAIL}[kind]

    return respond


class FakePolicy(ScriptedPolicy):
    async def update_weights(self, weights: Any) -> int:
        self._version += 1
        return self._version


class FakeTrainer:
    """Records each batch; checkpoints are its version in a file."""

    def __init__(self, method: str = "grpo") -> None:
        self.config = SimpleNamespace(method=method, temperature=1.0)
        self.version = 0
        self.batches: list[list[Any]] = []

    def train_step(self, samples):
        self.batches.append(list(samples))
        self.version += 1
        return {"loss": 0.0, "tokens": float(sum(len(s.response_ids) for s in samples))}

    def export_weights(self):
        return {}

    def export_adapters(self):
        return {}

    def save_checkpoint(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "version").write_text(str(self.version))

    def load_checkpoint(self, path):
        self.version = int((Path(path) / "version").read_text())


def config(tmp_path: Path, **overrides: Any) -> LoopConfig:
    values: dict[str, Any] = dict(steps=2, batch_groups=2, group_size=2, num_workers=2, buffer_groups=2, max_tokens=8,
                                  output_dir=str(tmp_path / "run"), tensorboard=False, plot=False,
                                  max_draws_per_batch=None)
    values.update(overrides)
    return LoopConfig(**values)


async def run_loop(tmp_path: Path, respond, *, task_ids=("parity-00",), method: str = "grpo", judges=None,
                   **overrides: Any):
    trainer = FakeTrainer(method)
    loop = AsyncRLLoop(make_parity_env, FakePolicy(respond, byte_tokens=True), trainer, config(tmp_path, **overrides),
                       env_kwargs={"split": "train"}, task_ids=list(task_ids), judges=judges)
    result = await asyncio.wait_for(loop.run(), 60)
    return loop, trainer, result


def rows(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == "train"]


# ---------------------------------------------------------------------------------------------- (a) the drop
async def test_all_equal_groups_are_dropped_and_replaced_until_the_batch_is_full(tmp_path):
    # groups 0..4 make step 1's batch (1 and 4 vary), groups 5..7 step 2's (5 and 7 vary)
    loop, trainer, result = await run_loop(tmp_path, by_group({1, 4, 5, 7}))
    assert result.steps == 2 and len(trainer.batches) == 2
    first, second = rows(tmp_path)
    assert (first["groups_drawn"], first["groups_dropped_zero_variance"], first["groups_trained"]) == (5, 3, 2)
    assert (second["groups_drawn"], second["groups_dropped_zero_variance"], second["groups_trained"]) == (3, 1, 2)
    assert first["draw_cap_hit"] == second["draw_cap_hit"] == 0 and first["step_skipped"] == 0
    for batch in trainer.batches:  # only groups with variance reach the trainer: one pass, one fail each
        assert sorted(s.reward for s in batch) == [0.0, 0.0, 1.0, 1.0]
        assert all(s.advantage != 0 for s in batch)
    counters = result.counters
    assert counters["groups_dropped_zero_variance"] >= 4 and counters["groups_trained"] == 4
    assert counters["groups_played"] == counters["groups_dropped_zero_variance"] + counters["groups_trained"] + len(
        loop.buffer)  # every group played is trained, dropped or still buffered
    assert counters["refused/zero_advantage_group"] == 2 * counters["groups_dropped_zero_variance"]


# ---------------------------------------------------------------------------------------------- (b) the cap
async def test_a_setting_where_every_group_fails_does_not_hang_the_loop(tmp_path):
    loop, trainer, result = await run_loop(tmp_path, lambda messages: FAIL, steps=3, max_draws_per_batch=2)
    assert result.steps == 3 and trainer.batches == [] and trainer.version == 0
    for row in rows(tmp_path):
        assert row["draw_cap_hit"] == 1 and row["step_skipped"] == 1 and row["groups_trained"] == 0
        assert row["groups_drawn"] >= 4 and row["groups_dropped_zero_variance"] == row["groups_drawn"]
    assert result.counters["draw_cap_hits"] == 3 and result.counters["steps_skipped"] == 3
    # the skipped steps still count: the trained-ids log and the checkpoint stay one record a step
    records = [json.loads(line) for line in (tmp_path / "run" / TRAINED_FILE).read_text().splitlines()]
    assert [(r["step"], r["trained"], r["dropped"]) for r in records] == [(1, [], []), (2, [], []), (3, [], [])]
    assert json.loads((tmp_path / "run" / CHECKPOINT_DIR / LOOP_STATE).read_text())["step"] == 3


async def test_at_the_cap_a_step_trains_on_the_groups_it_has(tmp_path):
    # cap 2 x 2 groups: step 1 sees groups 0..3 (more if they finish while group 0 is written to the
    # buffer) and trains on group 0 alone; step 2 gets none
    loop, trainer, result = await run_loop(tmp_path, by_group({0}), max_draws_per_batch=2)
    first, second = rows(tmp_path)
    assert (first["groups_trained"], first["draw_cap_hit"], first["step_skipped"]) == (1, 1, 0)
    assert first["groups_drawn"] >= 4 and first["groups_dropped_zero_variance"] == first["groups_drawn"] - 1
    assert first["groups"] == 1 and first["samples"] == 2
    assert second["step_skipped"] == 1 and second["draw_cap_hit"] == 1
    assert len(trainer.batches) == 1 and result.counters["draw_cap_hits"] == 2


async def test_the_window_counts_groups_finished_since_the_last_batch(tmp_path):
    """The collector alone: the first window is groups 0..4 (1 and 4 vary), then a new one starts."""
    collector, pool, producer = await start_collector(tmp_path, by_group({1, 4}), method="grpo")
    try:
        groups, draws = await asyncio.wait_for(collector.take_batch(), 10)
        assert len(groups) == 2 and (draws.drawn, draws.dropped_zero_variance, draws.cap_hit) == (5, 3, False)
        assert collector.counters["groups_dropped_zero_variance"] == 3
        assert collector.draws.drawn <= 2  # the next window: only what finished since
    finally:
        await stop_collector(collector, pool, producer)


# ---------------------------------------------------------------------------------------------- (d) hybrid
async def start_collector(tmp_path: Path, respond, *, method: str, **overrides: Any):
    cfg = config(tmp_path, **overrides)
    buffer = SampleBuffer(cfg.buffer_groups)
    collector = BatchCollector(cfg, buffer, method=method, reward_mode="outcome", tools=None,
                               counters=collections.Counter(), refused=collections.Counter())
    pool = RolloutPool(make_parity_env, ScriptedPolicy(respond, byte_tokens=True), num_workers=2,
                       env_kwargs={"split": "train"}, on_turn=collector.on_turn)
    await pool.start()
    producer = asyncio.create_task(collector.produce(pool, ["parity-00", "parity-01"]))
    return collector, pool, producer


async def stop_collector(collector, pool, producer) -> None:
    collector.stop()
    producer.cancel()
    await asyncio.gather(producer, return_exceptions=True)
    await pool.close()


@pytest.mark.parametrize("method, kept", [("grpo", False), ("hybrid", True)])
async def test_hybrid_groups_with_equal_rewards_are_kept(tmp_path, method, kept):
    """hybrid's distillation term teaches without reward variance: its all-equal groups are trained, grpo's not."""
    collector, pool, producer = await start_collector(tmp_path, lambda messages: FAIL, method=method,
                                                      max_draws_per_batch=2)
    try:
        groups, draws = await asyncio.wait_for(collector.take_batch(), 10)
    finally:
        await stop_collector(collector, pool, producer)
    if kept:
        assert len(groups) == 2 and draws.drawn == 2 and draws.dropped_zero_variance == 0 and not draws.cap_hit
        assert all(g.rewards == [0.0, 0.0] and all(s.advantage == 0 for s in g.samples) for g in groups)
    else:
        assert groups == [] and draws.cap_hit and draws.dropped_zero_variance == draws.drawn >= 4


# ---------------------------------------------------------------------------------------------- (c) curriculum
def test_weights_peak_near_a_50_percent_pass_rate_and_never_fall_below_the_floor():
    curriculum = PassRateCurriculum(floor=0.05)
    for _ in range(5):
        curriculum.update("half", [True, False, True, False])
        curriculum.update("never", [False] * 4)
        curriculum.update("always", [True] * 4)
    assert curriculum.pass_rate("half") == pytest.approx(0.5)
    assert curriculum.pass_rate("never") == pytest.approx(1 / 22)  # Beta(1,1): (0 + 1) / (20 + 2)
    assert curriculum.weight("half") == pytest.approx(MAX_WEIGHT)
    assert curriculum.weight("half") > curriculum.weight("never") and curriculum.weight("half") > curriculum.weight(
        "always")
    assert curriculum.weight("never") == curriculum.weight("always") == 0.05  # the floor holds
    assert curriculum.weight("unseen") == MAX_WEIGHT and curriculum.pass_rate("unseen") == 0.5  # explored first
    table = curriculum.table(["unseen", "half"])
    assert list(table) == ["unseen", "half", "never", "always"]
    assert table["half"] == {"groups": 5, "episodes": 20, "successes": 10, "pass_rate": 0.5, "weight": MAX_WEIGHT}
    assert table["unseen"]["groups"] == 0
    # the draws follow the weights: "half" about 0.25 / (0.25 + 0.05 + 0.05) of the time
    ids = ["half", "never", "always"]
    draws = collections.Counter(curriculum.draw(ids, np.random.default_rng([0, i])) for i in range(2000))
    assert 0.65 < draws["half"] / 2000 < 0.78 and draws["never"] > 150 and draws["always"] > 150
    with pytest.raises(ValueError, match="floor"):
        PassRateCurriculum(floor=1.0)


def test_the_draw_is_fixed_by_the_seed_and_the_group_index(tmp_path):
    def collector(seed: int, curriculum: str) -> BatchCollector:
        c = BatchCollector(config(tmp_path, seed=seed, curriculum=curriculum), SampleBuffer(2), method="grpo",
                           reward_mode="outcome", tools=None, counters=collections.Counter(),
                           refused=collections.Counter())
        if c.curriculum is not None:
            c.curriculum.update("parity-01", [True, False])
            c.curriculum.update("parity-02", [True] * 20)
        return c

    ids = [f"parity-{i:02d}" for i in range(4)]
    a, b = collector(7, "pass_rate"), collector(7, "pass_rate")
    sequence = [a._next_task(i, ids) for i in range(50)]
    assert sequence == [b._next_task(i, ids) for i in range(50)]  # same seed, same counts: same tasks
    assert sequence != [collector(8, "pass_rate")._next_task(i, ids) for i in range(50)]
    assert sequence.count("parity-02") < sequence.count("parity-01")  # the one always passed is drawn least
    assert collector(7, "uniform").curriculum is None
    uniform = [collector(7, "uniform")._next_task(i, ids) for i in range(50)]
    assert uniform == [ids[int(np.random.default_rng([7, i]).integers(4))] for i in range(50)]  # unchanged


async def test_the_loop_records_and_resumes_its_pass_rates(tmp_path):
    rates = {"parity-00": "pass", "parity-01": "fail", "parity-02": "half"}
    loop, trainer, result = await run_loop(tmp_path, by_task(rates), task_ids=list(rates), steps=3,
                                           curriculum="pass_rate", max_draws_per_batch=4)
    table = json.loads((tmp_path / "run" / CURRICULUM_FILE).read_text())
    assert list(table) == list(rates) and not list((tmp_path / "run").glob("*.tmp"))
    assert 0 < sum(t["groups"] for t in table.values()) <= result.counters["groups_played"]
    for task, row in table.items():
        assert row["pass_rate"] == pytest.approx((row["successes"] + 1) / (row["episodes"] + 2))
        assert row["weight"] == pytest.approx(max(0.05, row["pass_rate"] * (1 - row["pass_rate"])))
    assert table["parity-00"]["successes"] == table["parity-00"]["episodes"]
    assert table["parity-01"]["successes"] == 0
    last = rows(tmp_path)[-1]
    assert last["curriculum_tasks"] == 3 and 1 <= last["curriculum_tasks_seen"] <= 3
    assert last["curriculum_mean_weight"] == pytest.approx(np.mean([t["weight"] for t in table.values()]))
    # only the task near 50 % gives groups with variance: everything trained is parity-02's
    assert all(s.metadata["task_id"] == "parity-02" for batch in trainer.batches for s in batch)
    saved = json.loads((tmp_path / "run" / CHECKPOINT_DIR / LOOP_STATE).read_text())["curriculum"]
    resumed = AsyncRLLoop(make_parity_env, FakePolicy(by_task(rates), byte_tokens=True), FakeTrainer(),
                          config(tmp_path, steps=4, curriculum="pass_rate"), task_ids=list(rates))
    assert resumed._resume() and resumed.collector.curriculum.state_dict() == saved and saved


# ---------------------------------------------------------------------------------------------- config
@pytest.mark.parametrize("field, value, message", [
    ("max_draws_per_batch", -1, "max_draws_per_batch must be None or >= 1"),
    ("max_draws_per_batch", 0, "max_draws_per_batch must be None or >= 1"),
    ("curriculum_floor", -0.1, r"curriculum_floor must be in \[0, 1\)"),
    ("curriculum_floor", 1.0, r"curriculum_floor must be in \[0, 1\)"),
    ("curriculum", "hardest", "curriculum must be one of 'uniform', 'pass_rate'"),
])
def test_bad_dynamic_sampling_settings_are_refused(tmp_path, field, value, message):
    with pytest.raises(ValueError, match=message):
        config(tmp_path, **{field: value})
    assert LoopConfig().max_draws_per_batch == 8 and LoopConfig().curriculum == "uniform"
