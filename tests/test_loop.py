"""The async RL loop: turns -> samples (token in, token out), staleness, the loop end to end with the
tiny-random model, crash + resume without losing or repeating a judged sample, and serving that keeps
answering while a train step runs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import load_model
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.rl.buffer import SampleBuffer, SampleGroup, logged_sample_ids
from clawgym.rl.judge import make_judges
from clawgym.rl.loop import (
    CHECKPOINT_DIR,
    LOOP_STATE,
    PENDING_FILE,
    TRAINED_FILE,
    AsyncRLLoop,
    LoopConfig,
    apply_staleness,
    build_group,
)
from clawgym.rl.trainer import TorchTrainer, TrainerConfig
from clawgym.rl.types import JudgeResult, Sample, Trajectory, Turn
from tests.loop_envs import PARITY_SPEC, make_parity_env

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One intra-op thread: the serving and training threads each get a core (and no OpenMP stalls)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def make_parts(lr: float = 1e-3, **trainer_kwargs):
    serve_model, tokenizer = load_model("tiny-random")
    train_model, _ = load_model("tiny-random")
    policy = HFPolicy(serve_model, tokenizer, max_batch_size=16)
    trainer = TorchTrainer(train_model, tokenizer, TrainerConfig(lr=lr, micro_batch_size=8, **trainer_kwargs))
    return policy, trainer


def loop_config(tmp_path: Path, **overrides) -> LoopConfig:
    values = dict(steps=3, batch_groups=2, group_size=4, num_workers=8, buffer_groups=4, max_tokens=12,
                  output_dir=str(tmp_path / "run"), seed=0)
    values.update(overrides)
    return LoopConfig(**values)


def turn(ids=True, index=0, episode="e0", group="g", reward=0.0, version=0, judge=None, terminated=True) -> Turn:
    return Turn(
        episode_id=episode,
        turn_index=index,
        context=[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        action={"role": "assistant", "content": "a"},
        prompt_ids=[5, 6, 7] if ids else [],
        response_ids=[8, 9] if ids else [],
        response_logprobs=[-1.0, -2.0] if ids else [],
        policy_version=version,
        group_id=group,
        env_reward=reward,
        terminated=terminated,
        judge=judge or {},
    )


def trajectory(reward: float, turns: list[Turn], episode: str, group: str = "g") -> Trajectory:
    return Trajectory(episode_id=episode, env_id="x", task_id="t", turns=turns, reward=reward,
                      success=reward > 0, group_id=group)


# ---------------------------------------------------------------------------------------------- samples
def test_build_group_grpo_outcome_advantages_and_versions():
    trajs = [trajectory(r, [turn(episode=f"e{i}", reward=r, version=3)], f"e{i}")
             for i, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    group, refused = build_group(trajs, method="grpo", reward="outcome", version_offset=2)
    assert not refused
    assert [s.advantage for s in group.samples] == pytest.approx([0.866, -0.866, -0.866, 0.866], abs=1e-3)
    assert all(s.policy_version == 5 for s in group.samples)  # policy version 3 + offset 2
    assert all(s.prompt_ids == [5, 6, 7] and s.response_ids == [8, 9]
               and s.old_logprobs == [-1.0, -2.0] for s in group.samples)
    assert group.rewards == [1.0, 0.0, 0.0, 1.0] and group.successes == [True, False, False, True]


def test_turns_without_token_ids_are_refused_and_counted():
    trajs = [
        trajectory(1.0, [turn(ids=False, episode="e0")], "e0"),
        trajectory(0.0, [turn(ids=False, episode="e1")], "e1"),
    ]
    group, refused = build_group(trajs, method="grpo")
    assert group is None
    assert refused["no_prompt_ids"] == 2
    bad = turn()
    bad.response_logprobs = [-1.0]  # one logprob for two tokens
    group, refused = build_group([trajectory(1.0, [bad], "e0"),
                                  trajectory(0.0, [turn(episode="e1")], "e1")], method="grpo")
    assert refused["logprobs_mismatch"] == 1
    # the refused turn is not trained, but its trajectory's outcome still counts in the group baseline
    (sample,) = group.samples
    assert sample.reward == 0.0 and sample.advantage == pytest.approx(-0.7071, abs=1e-3)


def test_failed_episodes_and_equal_rewards():
    failed = trajectory(0.0, [turn(episode="e0")], "e0")
    failed.error = "timeout"
    same = [trajectory(1.0, [turn(episode=f"e{i}")], f"e{i}") for i in (1, 2)]
    group, refused = build_group([failed, *same], method="grpo")
    assert group is None and refused["episode_error"] == 1 and refused["zero_advantage_group"] == 2
    group, _ = build_group(same, method="grpo", drop_zero_advantage=False)
    assert [s.advantage for s in group.samples] == [0.0, 0.0]


def test_step_wise_rewards_use_prm_scores_per_turn_index():
    judged = lambda s: {"judge": JudgeResult(score=s, source="prm")}  # noqa: E731
    trajs = [
        trajectory(1.0,
                   [turn(index=0, episode="a", judge=judged(1.0)), turn(index=1, episode="a", judge=judged(1.0))], "a"),
        trajectory(0.0,
                   [turn(index=0, episode="b", judge=judged(-1.0)),
                    turn(index=1, episode="b", judge=judged(1.0))], "b"),
    ]
    group, _ = build_group(trajs, method="grpo", reward="step_wise", prm_coef=0.5)
    rewards = [s.reward for s in group.samples]
    assert rewards == pytest.approx([1.5, 1.5, -0.5, 0.5])
    by_step = {(s.metadata["episode_id"], s.metadata["turn_index"]): s.advantage for s in group.samples}
    assert by_step[("a", 0)] > 0 > by_step[("b", 0)] and by_step[("a", 1)] > 0 > by_step[("b", 1)]
    assert sorted(group.prm_scores) == [-1.0, 1.0, 1.0, 1.0]


def test_step_wise_turns_without_a_verdict_train_on_the_outcome_instead_of_ending_the_run():
    """A rules-only judge has no opinion on most turns: that must not raise (it ended the run before)."""
    ruled = {"rules": JudgeResult(score=-1.0, source="rule:tool_error")}
    trajs = [trajectory(1.0, [turn(episode="a")], "a"), trajectory(0.0, [turn(episode="b", judge=ruled)], "b")]
    group, _ = build_group(trajs, method="grpo", reward="step_wise")
    assert [s.reward for s in group.samples] == [1.0, -1.0]
    assert [s.metadata["verdict"] for s in group.samples] == [None, -1.0]
    # the verdict is recorded with its real source: a rule, never "prm"
    assert group.samples[1].metadata["verdict_source"] == "rule:tool_error" and "prm" not in group.samples[1].metadata
    group, _ = build_group([trajectory(1.0, [turn()], "a"), trajectory(0.0, [turn(episode="b")], "b")],
                           method="grpo", reward="step_wise")
    assert [s.reward for s in group.samples] == [1.0, 0.0]


def test_sampling_settings_the_trainer_cannot_match_are_refused(tmp_path):
    """The trainer's logprobs are over the full vocabulary at a temperature: greedy or top-p would train off-policy."""
    with pytest.raises(ValueError, match="temperature above 0 and top_p 1.0"):
        loop_config(tmp_path, top_p=0.9)
    with pytest.raises(ValueError, match="temperature=0.0"):  # the rollouts sample at the trainer's temperature
        TrainerConfig(temperature=0.0)


def test_opd_keeps_only_hinted_turns_with_their_context():
    hinted = {"hint": JudgeResult(score=1.0, hints=["Mention the final number explicitly."], source="hint")}
    trajs = [trajectory(1.0, [turn(episode="a", judge=hinted)], "a"), trajectory(0.0, [turn(episode="b")], "b")]
    group, refused = build_group(trajs, method="opd", tools=[{"type": "function"}])
    assert refused["no_hint"] == 1
    (sample,) = group.samples
    assert sample.hint == "Mention the final number explicitly."
    assert sample.hint_messages[-1]["content"] == "u" and sample.metadata["tools"] == [{"type": "function"}]
    group, refused = build_group(trajs, method="hybrid")
    assert len(group.samples) == 2 and group.samples[1].hint is None and not refused


def test_staleness_drop_and_reweight():
    samples = [Sample([1], [2, 3], [-1.0, -1.0], policy_version=v) for v in (10, 8, 7, 4)]
    kept, dropped = apply_staleness(samples, version=10, max_staleness=2)
    assert [s.policy_version for s in kept] == [10, 8] and [s.policy_version for s in dropped] == [7, 4]
    kept, dropped = apply_staleness(samples, version=10, max_staleness=2, mode="reweight")
    assert not dropped and [s.loss_mask for s in kept] == [[1, 1], [1, 1], [2 / 3, 2 / 3], [1 / 3, 1 / 3]]


def test_loop_config_rejects_a_buffer_smaller_than_a_batch(tmp_path):
    with pytest.raises(ValueError, match="buffer_groups must be >= batch_groups"):
        LoopConfig(batch_groups=4, buffer_groups=2)


async def test_loop_refuses_a_policy_that_cannot_take_weights(tmp_path):
    _, trainer = make_parts()
    with pytest.raises(TypeError, match="update_weights"):
        AsyncRLLoop(make_parity_env, ScriptedPolicy(lambda m: "hi"), trainer, loop_config(tmp_path))
    policy, trainer = make_parts(method="opd")
    with pytest.raises(ValueError, match="hint judge"):
        AsyncRLLoop(make_parity_env, policy, trainer, loop_config(tmp_path))
    await policy.close()


async def test_loop_samples_at_its_trainers_temperature(tmp_path):
    policy, trainer = make_parts(temperature=0.7)  # the trainer computes logprobs at temperature 0.7
    cfg = loop_config(tmp_path, steps=1)
    try:
        loop = AsyncRLLoop(make_parity_env, policy, trainer, cfg, env_kwargs={"split": "train"})
        assert loop.sampling.temperature == 0.7  # one field: there is no rollout temperature to disagree with it
        result = await loop.run()
    finally:
        await policy.close()
    # one micro-batch, scored before the update by the same weights at the same temperature: the rollout's
    # logprobs are the trainer's (at temperature 1.0 they would differ by ~0.1-1 nats a token)
    assert result.steps == 1 and result.history[0]["abs_logprob_diff"] < 1e-4


async def test_buffer_persists_before_the_trainer_sees_a_group(tmp_path):
    buffer = SampleBuffer(2, tmp_path / "pending.jsonl")
    group = SampleGroup("g1", [Sample([1], [2], [-0.5], sample_id="s1"), Sample([1], [3], [-0.5], sample_id="s2")])
    await buffer.reserve()
    await buffer.put(group)
    assert logged_sample_ids(tmp_path / "pending.jsonl") == ["s1", "s2"]
    with pytest.raises(ValueError, match="capacity"):
        await buffer.get(3)
    (taken,) = await buffer.get(1)
    assert taken.sample_ids == ["s1", "s2"]
    fresh = SampleBuffer(2, tmp_path / "pending.jsonl")
    assert fresh.recover({"s1"}) == 1 and fresh._groups[0].sample_ids == ["s2"]
    assert SampleBuffer(2, tmp_path / "pending.jsonl").recover({"s1", "s2"}) == 0


# ---------------------------------------------------------------------------------------------- the loop
async def test_loop_trains_publishes_and_logs(tmp_path):
    policy, trainer = make_parts()
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    cfg = loop_config(tmp_path, eval_before=True, eval_after=True, eval_episodes=3)
    loop = AsyncRLLoop(make_parity_env, policy, trainer, cfg, env_kwargs={"split": "train"},
                       eval_env_kwargs={"split": "test"})
    try:
        result = await loop.run()
    finally:
        await policy.close()
    out = Path(cfg.output_dir)
    assert result.steps == 3 and trainer.version == 3 and policy.version == 3
    changed = [k for k, v in policy.model.state_dict().items() if not torch.equal(v, before[k])]
    assert changed, "published weights never reached the serving model"
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3]
    for key in ("reward_mean", "success_rate", "verdict_mean", "kl", "clip_frac", "staleness_mean", "samples_per_s",
                "train_tokens_per_s", "time_rollout_s", "time_judge_s", "time_train_s",
                "time_publish_s", "time_wait_s"):
        assert key in train[0], key
    assert all(r["samples"] > 0 for r in train)
    evals = [r for r in records if r["kind"] == "eval"]
    assert [r["label"] for r in evals] == ["before", "after"] and evals[0]["eval_episodes"] == 3
    assert result.eval_after["eval_version"] == 3.0
    transcripts = [json.loads(line) for line in (out / "eval_transcripts.jsonl").read_text().splitlines()]
    assert [(t["label"], t["version"]) for t in transcripts] == [("before", 0)] * 3 + [("after", 3)] * 3
    assert all(t["task"] and t["turns"] and "action" in t["turns"][0] and "next_state" in t["turns"][0]
               and "prompt_ids" not in t["turns"][0] for t in transcripts)
    assert result.curve_path == out / "learning_curve.png" and result.curve_path.stat().st_size > 5000
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    trained = [i for line in (out / TRAINED_FILE).read_text().splitlines() for i in json.loads(line)["trained"]]
    assert len(trained) == len(set(trained)) and set(trained) <= set(logged_sample_ids(out / PENDING_FILE))
    state = json.loads((out / CHECKPOINT_DIR / LOOP_STATE).read_text())
    assert state["step"] == 3 and set(trained) <= set(state["consumed"])
    from clawgym.inference.models import load_model  # the served weights, exported as an HF checkpoint

    final, _ = load_model(str(out / "final"))
    assert all(torch.equal(v, policy.model.state_dict()[k]) for k, v in final.state_dict().items())


async def test_loop_with_rule_judge_and_stale_samples_dropped(tmp_path):
    """A judge stage in the loop; max_staleness 0 with a deep buffer forces stale drops, counted."""
    policy, trainer = make_parts()
    cfg = loop_config(tmp_path, steps=3, buffer_groups=6, max_staleness=0, batch_groups=2)
    loop = AsyncRLLoop(make_parity_env, policy, trainer, cfg, judges=make_judges("rules"),
                       env_kwargs={"split": "train"})
    try:
        result = await loop.run()
    finally:
        await policy.close()
    assert result.steps == 3
    assert all(h["staleness_max"] == 0 for h in result.history)  # nothing older than max_staleness trained
    assert result.counters["samples_dropped_stale"] > 0
    assert all(h["verdict_mean"] == h["verdict_mean"] for h in result.history)  # the rule verdicts were collected
    records = [json.loads(line) for line in (Path(cfg.output_dir) / TRAINED_FILE).read_text().splitlines()]
    assert sum(len(r["dropped"]) for r in records) == result.counters["samples_dropped_stale"]


async def test_hybrid_loop_with_an_llm_hint_judge_served_by_the_policy(tmp_path):
    """The hint judge is an LLM judge on the serving policy itself; unhinted samples keep the RL term."""
    from clawgym.core.policy import SamplingParams
    from clawgym.rl.judge import HintJudge

    policy, trainer = make_parts(method="hybrid")
    judge = HintJudge(policy, m=2, max_retries=0, sampling=SamplingParams(temperature=1.0, max_tokens=6, seed=1))
    cfg = loop_config(tmp_path, steps=2)
    loop = AsyncRLLoop(make_parity_env, policy, trainer, cfg, judges=[judge], env_kwargs={"split": "train"})
    try:
        result = await loop.run()
    finally:
        await policy.close()
    assert result.steps == 2 and loop.reward_mode == "outcome"  # a hint judge alone is not a PRM
    trained = sum(h["samples"] for h in result.history)
    assert judge.stats.judged + judge.stats.cache_hits >= trained  # no sample reached the trainer unjudged
    assert all(h["samples"] > 0 and h["time_judge_s"] > 0 for h in result.history)


class CrashAfter(Exception):
    pass


async def test_resume_after_a_crash_loses_and_repeats_nothing(tmp_path):
    cfg = loop_config(tmp_path, steps=5, buffer_groups=6, max_staleness=100)

    def crash(step, metrics):
        if step == 2:
            raise CrashAfter("injected crash after step 2")

    policy, trainer = make_parts()
    first = AsyncRLLoop(make_parity_env, policy, trainer, cfg, env_kwargs={"split": "train"}, on_step=crash)
    with pytest.raises(CrashAfter):
        await first.run()
    await policy.close()
    out = Path(cfg.output_dir)
    # a step trained after the last checkpoint would be rolled back on resume: simulate a torn one too
    with (out / TRAINED_FILE).open("a") as handle:
        handle.write(json.dumps({"step": 3, "trained": ["ghost"], "dropped": []}) + "\n")
    pending_before = set(logged_sample_ids(out / PENDING_FILE))
    consumed_before = set(json.loads((out / CHECKPOINT_DIR / LOOP_STATE).read_text())["consumed"])
    leftover = pending_before - consumed_before
    assert leftover, "the crash left no judged-but-untrained samples; the test would prove nothing"

    policy, trainer = make_parts()
    second = AsyncRLLoop(make_parity_env, policy, trainer, cfg, env_kwargs={"split": "train"})
    try:
        result = await second.run()
    finally:
        await policy.close()
    assert result.steps == 5 and trainer.version == 5
    assert policy.version == 4  # the checkpoint's weights on resume, then steps 3, 4 and 5
    records = [json.loads(line) for line in (out / TRAINED_FILE).read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5]
    ids = [i for r in records for i in r["trained"] + r["dropped"]]
    assert "ghost" not in ids
    assert len(ids) == len(set(ids)), "a sample was trained twice"
    state = json.loads((out / CHECKPOINT_DIR / LOOP_STATE).read_text())
    assert set(state["consumed"]) == set(ids)
    assert consumed_before <= set(ids)
    assert second.counters["groups_recovered"] >= 1
    recovered_trained = leftover & set(i for r in records[2:] for i in r["trained"] + r["dropped"])
    assert recovered_trained, "samples judged before the crash were not trained after the restart"
    assert set(ids) <= set(logged_sample_ids(out / PENDING_FILE))


async def test_serving_answers_while_a_slow_train_step_runs(tmp_path):
    """HFPolicy requests complete while train_step (slowed on purpose, in its thread) is running."""
    serve_model, tokenizer = load_model("tiny-random")
    train_model, _ = load_model("tiny-random")
    policy = HFPolicy(serve_model, tokenizer, max_batch_size=16)

    class SlowTrainer(TorchTrainer):
        def train_step(self, samples):
            metrics = super().train_step(samples)
            time.sleep(1.5)  # a long optimiser step; the event loop must not notice
            return metrics

    trainer = SlowTrainer(train_model, tokenizer, TrainerConfig(lr=1e-3, micro_batch_size=8))
    loop = AsyncRLLoop(make_parity_env, policy, trainer, loop_config(tmp_path, steps=2), env_kwargs={"split": "train"})
    done_at: list[float] = []
    stop = asyncio.Event()

    async def client():
        from clawgym.core.policy import SamplingParams

        while not stop.is_set():
            await policy.generate([{"role": "user", "content": "ping"}], None,
                                  SamplingParams(temperature=0, max_tokens=4))
            done_at.append(time.time())
            await asyncio.sleep(0.05)

    task = asyncio.create_task(client())
    try:
        await loop.run()
    finally:
        stop.set()
        await task
        await policy.close()
    assert len(loop.train_intervals) == 2
    during = [t for t in done_at for start, end in loop.train_intervals if start < t < end]
    assert len(during) >= 3, f"only {len(during)} requests completed during {loop.train_intervals}"
    steps = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert steps[1]["time_rollout_s"] > 0  # rollouts ran during the slow step too


async def test_sync_mode_gates_rollouts_while_training(tmp_path):
    """Sync mode trains on-policy only; the loop's GIL switch interval holds while it runs, then is restored."""
    import sys

    policy, trainer = make_parts()
    cfg = loop_config(tmp_path, steps=2, mode="sync", buffer_groups=2, switch_interval_s=0.002)
    intervals: list[float] = []
    loop = AsyncRLLoop(make_parity_env, policy, trainer, cfg, env_kwargs={"split": "train"},
                       on_step=lambda step, metrics: intervals.append(sys.getswitchinterval()))
    before = sys.getswitchinterval()
    try:
        result = await loop.run()
    finally:
        await policy.close()
    assert all(h["staleness_max"] == 0 for h in result.history)  # sync: always on-policy
    assert intervals == [0.002, 0.002] and sys.getswitchinterval() == before
    with pytest.raises(ValueError, match="switch_interval_s"):
        LoopConfig(switch_interval_s=0)


# ---------------------------------------------------------------------------------------------- SIGKILL
CONFIG = """
method: grpo
env: {{id: "{env}", kwargs: {{split: train}}}}
policy: {{model: tiny-random}}
rollout: {{workers: 8, group_size: 4, max_tokens: 12}}
trainer: {{lr: 0.001, micro_batch_size: 8}}
loop: {{steps: {steps}, batch_groups: 2, buffer_groups: 6, max_staleness: 100, output_dir: "{out}",
        tensorboard: false, plot: false, torch_threads: 1}}
"""


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sigkill_mid_run_then_restart(tmp_path):
    out = tmp_path / "run"
    config = tmp_path / "run.yaml"
    config.write_text(CONFIG.format(env=PARITY_SPEC, steps=6, out=out))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "clawgym.cli", "train", str(config)]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    trained = out / TRAINED_FILE
    while time.time() < deadline:
        if trained.exists() and len(trained.read_text().splitlines()) >= 3:
            break
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    state = json.loads((out / CHECKPOINT_DIR / LOOP_STATE).read_text())
    assert 1 <= state["step"] < 6
    rerun = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    records = [json.loads(line) for line in trained.read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
    ids = [i for r in records for i in r["trained"] + r["dropped"]]
    assert len(ids) == len(set(ids))
    final = json.loads((out / CHECKPOINT_DIR / LOOP_STATE).read_text())
    assert final["step"] == 6 and set(final["consumed"]) == set(ids)
    assert set(ids) <= set(logged_sample_ids(out / PENDING_FILE))


async def test_max_minutes_holds_while_the_loop_waits_for_a_batch(tmp_path):
    """Rollouts that never finish a group must not keep the loop past its time budget."""
    policy, trainer = make_parts()
    cfg = loop_config(tmp_path, steps=5, max_minutes=0.02, episode_timeout_s=None)  # 1.2 s
    loop = AsyncRLLoop(make_parity_env, policy, trainer, cfg, env_kwargs={"split": "train"})

    async def never(*args, **kwargs):  # a rollout producer that never delivers a group
        await asyncio.sleep(3600)

    loop.collector.produce = never  # type: ignore[method-assign]
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(loop.run(), 60)
    finally:
        await policy.close()
    assert result.steps == 0 and time.perf_counter() - started < 30
