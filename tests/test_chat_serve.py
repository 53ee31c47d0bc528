"""Deployed mode: the gateway serves the tiny model, judged turns train it in the background, the new
weights are published in place, and users are answered while a train step runs."""

import threading
import time

import httpx
import openai
import pytest
import yaml

from clawgym.inference.server import BackgroundServer
from clawgym.rl.judge import RuleJudge
from clawgym.rl.launch import ConfigError, load_config
from clawgym.rl.types import read_jsonl
from clawgym.serve.main import build_serving


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
    with pytest.raises(ConfigError) as exc:
        load_config(config_file(tmp_path, colour="blue"))
    assert "unknown config key(s) serve.colour; valid keys under serve: adapters," in str(exc.value)


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
            return api.chat.completions.create(model="m", messages=messages, user=user,
                                               max_tokens=8).choices[0].message.content

        a1 = chat("alice", [{"role": "user", "content": "hi"}])
        b1 = chat("bob", [{"role": "user", "content": "hey"}])
        chat("alice",
             [{"role": "user", "content": "hi"}, {"role": "assistant", "content": a1},
              {"role": "user", "content": "thanks!"}])
        chat("bob",
             [{"role": "user", "content": "hey"}, {"role": "assistant", "content": b1},
              {"role": "user", "content": "no, wrong"}])
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
        first = api.chat.completions.create(model="m",
                                            messages=[{"role": "user", "content": "hi"}], user="u", max_tokens=8)
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
    from clawgym.personal.trainer import apply_baseline

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
    with pytest.raises(ValueError, match="unknown baseline 'ema'"):
        apply_baseline(mixed, "ema")


def test_serve_settings_reject_an_unknown_baseline(tmp_path):
    with pytest.raises(ConfigError, match="serve.baseline must be one of"):
        load_config(config_file(tmp_path, baseline="ema"))


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
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.models import load_model
    from clawgym.personal.trainer import PersonalTrainer
    from clawgym.rl.trainer import TorchTrainer, TrainerConfig

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


def wait_until(condition, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def converse(api, user, reply, **request):
    """One judged turn: ``user`` says hi, the agent answers, ``user`` replies (the turn's next state)."""
    first = {"role": "user", "content": "hi"}
    answer = api.chat.completions.create(model="m", messages=[first], user=user, max_tokens=8, **request)
    api.chat.completions.create(model="m", user=user, max_tokens=8, **request, messages=[
        first, {"role": "assistant", "content": answer.choices[0].message.content}, {"role": "user", "content": reply}])


def test_a_restart_keeps_training_where_the_trainer_left_off(tmp_path):
    """Restarted on a run whose trainer is at version 5, the served policy counts on from 5: new turns are
    fresh and train. (Counting from 1 again made every new turn 4 versions behind: stale, never trained.)"""
    config = config_file(tmp_path)
    before = build_serving(load_config(config))
    before.trainer.trainer.version = 5  # as after five steps
    before.trainer.trainer.save_checkpoint(tmp_path / "run" / "checkpoint")
    before.gateway.log.close()
    serving = build_serving(load_config(config))  # a new process on the same run directory
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    assert serving.trainer.trainer.version == 5
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        converse(api, "alice", "thanks!")
        converse(api, "bob", "no, wrong")
        assert wait_until(lambda: serving.trainer.steps == 1 and not serving.trainer.busy), serving.trainer.refused
    assert serving.trainer.refused["stale"] == 0 and serving.policy.version == serving.trainer.trainer.version == 6
    (record,) = read_jsonl(tmp_path / "run" / "train_steps.jsonl")
    assert record["policy_version"] == 6
    serving.gateway.log.flush()
    assert {t.policy_version for t in serving.gateway.log.turns()} == {5}


def test_a_failing_train_step_is_counted_shown_and_training_goes_on(tmp_path):
    """A step that raises (out of memory on a long turn, a full disk) drops its batch, is logged, counted
    and shown on the dashboard; the next batch trains. (It used to end the train task for good, silently.)"""
    serving = build_serving(load_config(config_file(tmp_path)))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    trainer = serving.trainer.trainer
    real_step, calls = trainer.train_step, []

    def out_of_memory_once(samples):
        calls.append(len(samples))
        if len(calls) == 1:
            raise RuntimeError("CUDA out of memory (a long turn)")
        return real_step(samples)

    trainer.train_step = out_of_memory_once
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        converse(api, "alice", "thanks!")
        converse(api, "bob", "no, wrong")
        assert wait_until(lambda: calls and not serving.trainer.busy)
        converse(api, "carol", "thanks!")
        converse(api, "dave", "no, wrong")
        wait_until(lambda: serving.trainer.steps == 1 and not serving.trainer.busy, timeout_s=30)
    assert serving.trainer.steps == 1 and calls == [2, 2]
    assert serving.trainer.errors == 1 and serving.trainer.refused["train_error"] == 2
    assert "out of memory" in serving.trainer.last_error
    shown = serving.dashboard.data()["users"]["default"]
    assert shown["train_errors"] == 1 and shown["steps"] == 1 and "out of memory" in shown["last_train_error"]


def trained_openclaw_sample(tmp_path):
    """One OPD sample of an OpenClaw-shaped turn, as the personal trainer trained on it: tools, the person's
    words, then OpenClaw's internal-context block as the last user message; the reply "No, use bullet
    points." gives the hint."""
    trainer_section = {"lr": 1e-3, "micro_batch_size": 2, "lora": {"enabled": False}, "hint_format": "inline"}
    serving = build_serving(load_config(config_file(tmp_path, trainer=trainer_section),
                                        ["method=opd", "judge.type=probhint", "judge.model=policy"]))
    trainer = serving.trainer.trainer
    real_step, trained = trainer.train_step, []
    trainer.train_step = lambda samples: (trained.extend(samples), real_step(samples))[1]
    tools = [{"type": "function", "function": {"name": "read", "description": "Read a file from the workspace.",
                                               "parameters": {"type": "object",
                                                              "properties": {"path": {"type": "string"}}}}}]
    internal = {"role": "user", "content": [{"type": "text",
                                             "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec "
                                                                     "sessions: none\n"
                                                                     "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}]}
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        for user in ("alice", "bob"):
            ask = {"role": "user", "content": "Summarise notes.txt"}
            answer = api.chat.completions.create(model="m", messages=[ask, internal], tools=tools,
                                                 user=user, max_tokens=8)
            api.chat.completions.create(model="m", tools=tools, user=user, max_tokens=8, messages=[
                ask, {"role": "assistant", "content": answer.choices[0].message.content},
                {"role": "user", "content": "No, use bullet points."}, internal])
        assert wait_until(lambda: serving.trainer.steps == 1 and not serving.trainer.busy)
    assert trained[0].hint == "Use bullet points."
    return trained[0], serving.policy.tokenizer


def test_the_opd_teacher_reads_the_tools_the_student_read(tmp_path):
    """The teacher prompt renders the turn's tool schemas: without the hint it is the student's prompt.
    (The turn log kept only tool names, so the teacher saw no tools and OPD penalised tool-call tokens.)"""
    from clawgym.rl.trainer.samples import render_prompt_ids, teacher_prompt_ids

    sample, tokenizer = trained_openclaw_sample(tmp_path)
    assert render_prompt_ids(tokenizer, sample.hint_messages, sample.metadata.get("tools")) == sample.prompt_ids
    assert "Read a file from the workspace." in tokenizer.decode(teacher_prompt_ids(tokenizer, sample, "inline"))


def test_the_opd_hint_goes_next_to_the_persons_words_not_into_openclaws_internal_block(tmp_path):
    from clawgym.rl.trainer.samples import teacher_prompt_ids

    sample, tokenizer = trained_openclaw_sample(tmp_path)
    teacher = tokenizer.decode(teacher_prompt_ids(tokenizer, sample, "inline"))
    assert "Summarise notes.txt Use bullet points." in teacher
    assert teacher.count("Use bullet points.") == 1
    block = teacher[teacher.index("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"):]
    block = block[:block.index("<<<END_OPENCLAW_INTERNAL_CONTEXT>>>")]
    assert "Use bullet points." not in block  # (the gateway has the block read before the person's message)


def test_the_served_policy_samples_with_the_runs_seed(tmp_path):
    """``loop.seed`` seeds the served policy's sampling, as in the offline loop: runs with seeds 0 and 1
    sample other replies (one shared RNG made a benchmark's seeds correlated), the same seed the same."""
    import asyncio

    from clawgym.core.policy import SamplingParams

    async def replies(seed, run):
        (tmp_path / run).mkdir()
        serving = build_serving(load_config(config_file(tmp_path / run, train=False), [f"loop.seed={seed}"]))
        sampling = SamplingParams(temperature=1.0, max_tokens=8)
        try:
            return [(await serving.policy.generate([{"role": "user", "content": "hi"}], None, sampling)).response_ids
                    for _ in range(3)]
        finally:
            await serving.policy.close()

    assert asyncio.run(replies(1, "a")) == asyncio.run(replies(1, "b"))
    assert asyncio.run(replies(0, "c")) != asyncio.run(replies(1, "d"))


def test_a_step_record_keeps_its_own_fields_over_the_trainers_metrics():
    """The trainer reports a "step" and "samples" of its own (floats): they used to overwrite the personal
    trainer's count in train_steps.jsonl."""
    from clawgym.personal.trainer import step_record

    record = step_record({"step": 7.0, "samples": 24.0, "loss": 0.5, "note": "text"}, step=2, samples=8, trained=["t"])
    assert record == {"step": 2, "samples": 8, "trained": ["t"], "loss": 0.5}
    assert list(record)[:3] == ["step", "samples", "trained"]  # the line reads as before: own fields first


def test_max_tokens_above_the_advertised_limit_is_clamped_not_refused(tmp_path):
    """``/v1/models`` advertises ``serve.max_tokens`` as ``max_output_tokens``; a request for more (OpenClaw sends
    its configured maxTokens) is answered within that limit and logged with it, instead of holding the engine to
    the end of the window; a request within the limit keeps its own."""
    serving = build_serving(load_config(config_file(tmp_path, max_tokens=6, train=False)))
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        advertised = httpx.get(url + "/v1/models", headers={"Authorization": "Bearer k"}).json()["data"][0]
        assert advertised["max_output_tokens"] == 6
        huge = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                           max_tokens=100_000_000)
        small = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}],
                                            max_tokens=3)
        assert huge.usage.completion_tokens <= 6 and small.usage.completion_tokens <= 3
        with pytest.raises(openai.BadRequestError, match="max_tokens"):  # bad input is still refused
            api.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=-1)
    logged = [e["turn"]["info"]["sampling"]["max_tokens"] for e in read_jsonl(tmp_path / "run" / "turns.jsonl")
              if e["event"] == "turn"]
    assert sorted(logged) == [3, 6]


def test_one_persons_longest_reply_does_not_hold_up_another_persons_short_ones(tmp_path):
    """The engine batches continuously: a short request joins the running batch at the next decoding step,
    so it is answered while another person's reply of the full ``max_output_tokens`` is still being written
    (a server that answered one request at a time would make it wait for all of it)."""
    import threading

    serving = build_serving(load_config(config_file(tmp_path, max_tokens=600, train=False)))
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        finished: list[str] = []

        def ask(user, max_tokens):
            reply = api.chat.completions.create(model="m", user=user, temperature=0, max_tokens=max_tokens,
                                                messages=[{"role": "user", "content": f"{user}: write a long story"}])
            finished.append(f"{user}:{reply.usage.completion_tokens}")

        long = threading.Thread(target=ask, args=("alice", 600))
        long.start()
        assert wait_until(lambda: serving.policy.stats["decode_passes"] > 20, timeout_s=30)  # alice is being answered
        for _ in range(3):
            ask("bob", 4)
        assert not any(f.startswith("alice") for f in finished)  # every short reply came first
        long.join(timeout=120)
    assert finished[-1] == "alice:600" and finished[:3] == ["bob:4"] * 3
