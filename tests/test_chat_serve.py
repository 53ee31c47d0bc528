"""Deployed mode: the gateway serves the tiny model, judged turns train it in the background, the new
weights are published in place, and users are answered while a train step runs."""

import threading
import time

import openai
import yaml

from clawgym.serve.main import ServeSettings, build_serving
from clawgym.rl.judge import RuleJudge
from clawgym.rl.launch import ConfigError, load_config
from clawgym.rl.server import BackgroundServer
from clawgym.rl.types import read_jsonl


class ThanksIsGood(RuleJudge):
    name = "prm"

    def verdict(self, turn):
        text = str(turn.next_state)
        if "thanks" in text:
            return 1.0, "progress"
        if "no," in text:
            return -1.0, "correction"
        return None


def config_file(tmp_path, trainer=None, serve_base=None, rollout=None, **serve):
    """A serve config on the tiny model; ``trainer``/``serve_base`` replace the single-user defaults."""
    data = {
        "method": "grpo",
        "env": {"id": "clawgym/OpenClawChat-v0"},
        "policy": {"backend": "hf", "model": "tiny-random", "device": "cpu"},
        "judge": {"type": "rules"},
        "trainer": trainer or {"lr": 1e-3, "micro_batch_size": 2, "lora": {"enabled": False}},
        "loop": {"output_dir": str(tmp_path / "run")},
        **({"rollout": rollout} if rollout else {}),
        "serve": {**(serve_base or {"api_key": "k"}), "batch_size": 2, "max_tokens": 8, **serve},
    }
    path = tmp_path / "chat.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_serve_settings_reject_unknown_keys(tmp_path):
    config = load_config(config_file(tmp_path, colour="blue"))
    try:
        ServeSettings.from_config(config)
    except ConfigError as exc:
        assert "unknown key(s) ['colour']" in str(exc)
    else:
        raise AssertionError("an unknown serve key must be an error")


def test_judged_turns_train_the_served_policy_without_blocking_users(tmp_path):
    serving = build_serving(load_config(config_file(tmp_path)))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    trainer = serving.trainer.trainer
    real_step, step_started = trainer.train_step, threading.Event()

    def slow_step(samples):  # a slower trainer, so a user request lands in the middle of a step
        step_started.set()
        time.sleep(2.0)
        return real_step(samples)

    trainer.train_step = slow_step
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)

        def chat(user, messages):
            return api.chat.completions.create(model="m", messages=messages, user=user, max_tokens=8).choices[0].message.content

        a1 = chat("alice", [{"role": "user", "content": "hi"}])
        b1 = chat("bob", [{"role": "user", "content": "hey"}])
        chat("alice", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": a1}, {"role": "user", "content": "thanks!"}])
        chat("bob", [{"role": "user", "content": "hey"}, {"role": "assistant", "content": b1}, {"role": "user", "content": "no, wrong"}])
        assert step_started.wait(30), "two judged turns should start a train step"
        started = time.monotonic()
        chat("carol", [{"role": "user", "content": "are you there?"}])  # answered during the step
        assert time.monotonic() - started < 1.5 and serving.trainer.busy
        deadline = time.monotonic() + 60
        steps_file = tmp_path / "run" / "train_steps.jsonl"
        while not steps_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert serving.policy.version == 1
    (step,) = list(read_jsonl(tmp_path / "run" / "train_steps.jsonl"))
    assert step["samples"] == 2 and step["policy_version"] == 1
    serving.gateway.log.flush()
    turns = {t.turn_id: t for t in serving.gateway.log.turns()}
    assert sorted(turns[i].judge["prm"].score for i in step["trained"]) == [-1.0, 1.0]
    assert (tmp_path / "run" / "checkpoint").is_dir()


def test_restart_resumes_weights_and_trains_what_was_judged_but_not_trained(tmp_path):
    config = config_file(tmp_path, batch_size=3)
    serving = build_serving(load_config(config))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        first = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], user="u", max_tokens=8)
        api.chat.completions.create(model="m", user="u", max_tokens=8, messages=[
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": first.choices[0].message.content},
            {"role": "user", "content": "thanks"}])
        deadline = time.monotonic() + 20
        while serving.gateway.stats.judged < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(serving.trainer.pending) == 1 and serving.trainer.steps == 0  # batch of 3 not full yet
    serving.gateway.log.close()
    again = build_serving(load_config(config))  # a new process on the same run directory
    assert [s.turn_id for s in again.trainer.pending] == [s.turn_id for s in serving.trainer.pending]


def _sample(reward, hint=None, version=0):
    from clawgym.rl.types import Sample

    return Sample(prompt_ids=[1], response_ids=[2], old_logprobs=[-1.0], reward=reward, advantage=reward, hint=hint,
                  hint_messages=[{"role": "user", "content": "q"}] if hint else None, policy_version=version)


def test_batch_baseline_centres_verdicts_and_drops_what_teaches_nothing():
    from clawgym.serve.personal_trainer import apply_baseline

    mixed = [_sample(1.0), _sample(-1.0), _sample(-1.0), _sample(-1.0)]
    kept, dropped = apply_baseline(mixed, "batch")
    assert dropped == 0 and [s.advantage for s in kept] == [1.5, -0.5, -0.5, -0.5]
    # a person who is never satisfied: every verdict -1 -> no verdict advantage is left; a hinted turn stays for OPD
    unhappy = [_sample(-1.0), _sample(-1.0), _sample(-1.0, hint="name the student")]
    kept, dropped = apply_baseline(unhappy, "batch")
    assert dropped == 2 and len(kept) == 1 and kept[0].hint and kept[0].advantage == 0.0
    # OpenClaw-RL's A = r keeps them all
    kept, dropped = apply_baseline([_sample(-1.0), _sample(-1.0)], "none")
    assert dropped == 0 and [s.advantage for s in kept] == [-1.0, -1.0]
    try:
        apply_baseline(mixed, "ema")
    except ValueError as exc:
        assert "unknown baseline 'ema'" in str(exc)
    else:
        raise AssertionError("an unknown baseline must be an error")


def test_serve_settings_reject_an_unknown_baseline(tmp_path):
    try:
        ServeSettings.from_config(load_config(config_file(tmp_path, baseline="ema")))
    except ConfigError as exc:
        assert "serve.baseline must be one of" in str(exc)
    else:
        raise AssertionError("an unknown baseline must be an error")


def test_all_negative_verdicts_train_nothing_with_the_batch_baseline(tmp_path):
    """Two corrections and no thanks: with the default baseline no step runs and the weights stay;
    with ``baseline: none`` (OpenClaw-RL's A = r) the same turns make a step."""
    for baseline, steps in (("batch", 0), ("none", 1)):
        run = tmp_path / baseline
        run.mkdir()
        serving = build_serving(load_config(config_file(run, baseline=baseline)))
        serving.gateway.judge_stage.judges = [ThanksIsGood()]
        with BackgroundServer(serving.app) as url:
            api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
            for user in ("alice", "bob"):
                first = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], user=user,
                                                    max_tokens=8).choices[0].message.content
                api.chat.completions.create(model="m", user=user, max_tokens=8, messages=[
                    {"role": "user", "content": "hi"}, {"role": "assistant", "content": first},
                    {"role": "user", "content": "no, wrong"}])
            deadline = time.monotonic() + 60
            while (serving.trainer.steps < steps or serving.gateway.stats.judged < 2 or serving.trainer.busy) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
        assert serving.trainer.steps == steps, baseline
        assert serving.policy.version == steps
        assert serving.trainer.refused["zero_advantage"] == (2 if baseline == "batch" else 0)


def test_turns_train_only_at_the_trainers_temperature(tmp_path):
    """``rollout.temperature`` is what the gateway samples at when the client sends none (OpenClaw sends
    none) and what the trainer trains at; a turn the client asked to sample at another temperature is
    answered as asked, logged with its sampling, and never trained on (its logprobs are of another
    distribution)."""
    serving = build_serving(load_config(config_file(tmp_path, rollout={"temperature": 0.7}, baseline="none")))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    assert serving.trainer.trainer.config.temperature == 0.7
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        for user, asked in (("alice", {}), ("bob", {"temperature": 1.0}), ("carol", {})):
            first = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], user=user,
                                                max_tokens=8, **asked).choices[0].message.content
            api.chat.completions.create(model="m", user=user, max_tokens=8, **asked, messages=[
                {"role": "user", "content": "hi"}, {"role": "assistant", "content": first},
                {"role": "user", "content": "no, wrong"}])
        deadline = time.monotonic() + 60
        while (serving.trainer.steps < 1 or serving.gateway.stats.judged < 3 or serving.trainer.busy) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
    assert serving.trainer.refused["off_policy_sampling"] == 1
    assert serving.trainer.steps == 1  # alice's and carol's turns: one batch of 2
    logged = [e["turn"]["info"] for e in read_jsonl(tmp_path / "run" / "turns.jsonl") if e["event"] == "turn"]
    assert sorted(info["sampling"]["temperature"] for info in logged) == [0.7, 0.7, 0.7, 0.7, 1.0, 1.0]


async def test_stale_turns_are_dropped_before_a_batch_is_taken(tmp_path):
    """Every step trains a full batch of fresh turns: stale ones are dropped first instead of leaving a
    step on the fresh remainder of a batch (which under Adam moves the weights as far as a full one)."""
    from clawgym.rl.policy.hf import HFPolicy
    from clawgym.rl.policy.models import load_model
    from clawgym.rl.trainer import TorchTrainer, TrainerConfig
    from clawgym.serve.personal_trainer import PersonalTrainer

    serve_model, tokenizer = load_model("tiny-random")
    train_model, _ = load_model("tiny-random")
    trainer = TorchTrainer(train_model, tokenizer, TrainerConfig(lr=1e-3, micro_batch_size=4))
    trainer.version = 5
    policy = HFPolicy(serve_model, tokenizer)
    personal = PersonalTrainer(trainer, policy, batch_size=4, max_staleness=2, output_dir=tmp_path, baseline="none")

    def turns(version, n):
        return [_sample((-1.0) ** i, version=version) for i in range(n)]

    personal.pending = turns(1, 3) + turns(5, 2)  # three turns 4 versions old, two fresh
    await personal._train_due()
    assert personal.steps == 0 and personal.refused["stale"] == 3 and len(personal.pending) == 2
    personal.pending += turns(4, 2)
    await personal._train_due()
    await policy.close()
    assert personal.steps == 1 and personal.refused["stale"] == 3 and personal.pending == []
    (record,) = read_jsonl(tmp_path / "train_steps.jsonl")
    assert record["samples"] == 4
