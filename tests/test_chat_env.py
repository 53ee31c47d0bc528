"""OpenClawChat-v0 offline: personas, preference scores, the scripted and policy-driven users."""

import gymnasium as gym
import pytest

import clawgym  # noqa: F401
from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks, oracle_reply
from clawgym.inference.scripted import ScriptedPolicy


def test_every_bundled_task_is_solvable_and_persona_checks_are_real():
    tasks = bundled_tasks()
    assert len(tasks) == 120 and {t.split for t in tasks} == {"train", "test"}
    for task in tasks:
        persona = PERSONAS[task.data["persona"]]
        score, results = persona.score(oracle_reply(task), task)
        assert score == 1.0, (task.id, results)
        assert persona.score("", task)[0] == 0.0 and persona.score("ok", task)[0] < 1.0


def test_student_wants_plain_text():
    env = gym.make("clawgym/OpenClawChat-v0", personas=["student"])
    obs, info = env.reset(seed=1)
    assert obs[1]["content"].startswith("Can you help me with my homework?")
    answer = env.unwrapped.task.answer
    obs, reward, terminated, truncated, info = env.step(f"**Answer:**\n1. Add them up\n2. The answer is {answer}")
    assert not terminated and obs[0]["role"] == "user" and "bold" in obs[0]["content"]
    assert env.unwrapped.last_preferences == {"gives_answer": True, "no_bold_or_headings": False,
                                              "no_lists": False, "no_latex": True}
    obs, reward, terminated, truncated, info = env.step(f"1. It is {answer}")
    assert "lists" in obs[0]["content"] and not terminated
    obs, reward, terminated, truncated, info = env.step(f"It comes to {answer} in total.")
    assert terminated and reward == 1.0 and info["success"] and "HOMEWORK_DONE" in obs[0]["content"]


def test_a_scripted_person_may_voice_every_unmet_wish_at_once():
    env = gym.make("clawgym/OpenClawChat-v0", personas=["student"], user_simulator="scripted-all")
    env.reset(seed=1)
    answer = env.unwrapped.task.answer
    obs, *_ = env.step(f"**Answer:**\n1. Add them up\n2. The answer is {answer}")
    said = obs[0]["content"]  # bold and lists, in the order of the preferences; nothing about what was met
    assert "bold" in said and "lists" in said and said.index("bold") < said.index("lists") and "LaTeX" not in said
    obs, reward, terminated, *_ = env.step(f"It comes to {answer} in total.")
    assert terminated and reward == 1.0 and "HOMEWORK_DONE" in obs[0]["content"]  # thanks are the same
    with pytest.raises(ValueError, match="voice"):
        PERSONAS["student"].feedback("hi", env.unwrapped.task, voice="loud")
    with pytest.raises(ValueError, match="scripted-all"):
        gym.make("clawgym/OpenClawChat-v0", user_simulator="telepathic").reset(seed=0)


def test_truncation_scores_the_last_reply():
    env = gym.make("clawgym/OpenClawChat-v0", personas=["teacher"], max_turns=2)
    env.reset(seed=0)
    env.step("ok")
    _, reward, terminated, truncated, info = env.step(f"Great job, {env.unwrapped.task.data['student']}!")
    assert truncated and not terminated
    assert reward == 0.75 and info["success"] is False and info["preferences"]["mentions_result"] is False


def test_unknown_persona_and_bad_simulator():
    with pytest.raises(ValueError, match="unknown personas"):
        gym.make("clawgym/OpenClawChat-v0", personas=["pirate"])
    with pytest.raises(ValueError, match="user_simulator"):
        gym.make("clawgym/OpenClawChat-v0", user_simulator=42)


def test_policy_driven_user_words_feedback_but_rules_decide():
    seen = []

    def respond(messages):
        seen.append(messages)
        return "hmm, can you redo that without the bold?"

    env = gym.make("clawgym/OpenClawChat-v0", personas=["student"], user_simulator=ScriptedPolicy(respond))
    env.reset(seed=3)
    obs, _, terminated, _, _ = env.step("**bold** answer")
    assert obs[0]["content"] == "hmm, can you redo that without the bold?" and not terminated
    system = seen[0][0]["content"]
    assert "high-school student" in system and "Your complaint:" in system
    assert seen[0][-1] == {"role": "user", "content": "**bold** answer"}  # roles swapped for the simulator
    obs, reward, terminated, _, _ = env.step(env.unwrapped.oracle_action())
    assert terminated and reward == 1.0 and obs[0]["content"].endswith("HOMEWORK_DONE")


# ---------------------------------------------------------------------------------------------- issue 13
def test_serve_hybrid_with_only_a_hint_judge_keeps_the_rl_term():
    """In `clawgym serve` hybrid degenerated to OPD when the hint judge was the only judge."""
    from clawgym.personal.trainer import sample_from_turn
    from clawgym.rl.types import JudgeResult, Turn

    turn = Turn(episode_id="e", turn_index=0, context=[{"role": "user", "content": "u"}],
                action={"role": "assistant", "content": "a"}, prompt_ids=[1, 2], response_ids=[3],
                response_logprobs=[-0.5],
                judge={"hint": JudgeResult(score=-1.0, hints=["Use the name."], source="prob")})
    sample, why = sample_from_turn(turn, "hybrid")
    assert why is None and sample.advantage == -1.0 and sample.hint == "Use the name."
    opd, _ = sample_from_turn(turn, "opd")
    assert opd.hint == "Use the name."


def test_opd_teacher_prompt_keeps_the_tool_schemas_through_the_template_fallback():
    """Templates without tool support get the schemas as text; the hinted teacher prompt must too."""
    from clawgym.inference.chat_template import encode_prompt, supports_tools
    from clawgym.inference.models import load_model
    from clawgym.rl.trainer.samples import render_prompt_ids

    _, tokenizer = load_model("tiny-random")
    tools = [{"type": "function", "function": {"name": "lookup_weather_zz", "description": "weather",
                                               "parameters": {"type": "object", "properties": {}}}}]
    messages = [{"role": "user", "content": "What's the weather?"}]
    ids = render_prompt_ids(tokenizer, messages, tools)
    assert ids == encode_prompt(tokenizer, messages, tools)  # the same prompt the policy answered from
    if not supports_tools(tokenizer):
        assert "lookup_weather_zz" in tokenizer.decode(ids)


def test_held_out_scoring_reports_each_hidden_check_and_their_mean():
    """score_checks: the mean persona score of greedy first replies and each check's pass rate."""
    import asyncio
    from types import SimpleNamespace

    from clawgym.serve import rehearsal

    tasks = rehearsal.persona_tasks("ta", "test")[:4]
    replies = ["", "7/10. The answer is 12. You added well. Then you slipped.", "1. wrong\n2. wrong", "Fine."]

    class OneReplyPerTask:
        async def generate(self, messages, tools, sampling):
            assert sampling.temperature == 0.0  # held-out scoring is greedy
            return SimpleNamespace(text=replies[[t.prompt in str(messages) for t in tasks].index(True)])

    score, checks = asyncio.run(rehearsal.score_checks(OneReplyPerTask(), tasks))
    persona = PERSONAS["ta"]
    expected = [persona.score(reply, task) for reply, task in zip(replies, tasks)]
    assert score == pytest.approx(sum(s for s, _ in expected) / 4)
    assert checks == {name: pytest.approx(sum(c[name] for _, c in expected) / 4) for name in expected[0][1]}
    assert checks["no_lists"] < 1.0 and all(0.0 <= rate <= 1.0 for rate in checks.values())


@pytest.mark.slow
def test_judge_only_rehearsal_trains_through_the_deployed_gateway(tmp_path):
    """Simulated users -> gateway -> turn log -> judge stage -> personal trainer; persona checks stay hidden."""
    import asyncio

    from clawgym import launchers
    from clawgym.rl.launch import load_config
    from clawgym.rl.types import read_jsonl
    from clawgym.serve import rehearsal

    config = load_config(launchers.resolve("chat"), [
        "policy.model=tiny-random", "method=hybrid", "judge.type=prob,probhint", f"loop.output_dir={tmp_path}",
        "serve.batch_size=2", "trainer.micro_batch_size=2"])
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=1, users=2, max_turns=2,
                                            max_tokens=8, eval_tasks=2))
    assert result.steps >= 1 and result.conversations >= 1 and result.judged >= 2
    assert 0.0 <= result.before <= 1.0 and 0.0 <= result.after <= 1.0
    assert set(result.checks_after) == {p.name for p in PERSONAS["teacher"].preferences}  # which wish moved
    assert sum(result.checks_after.values()) / len(result.checks_after) == pytest.approx(result.after)
    turns = {t.turn_id: t for t in read_jsonl_turns(tmp_path / "turns.jsonl")}
    steps = list(read_jsonl(tmp_path / "train_steps.jsonl"))
    assert len(steps) == result.steps and steps[0]["trained"]
    for turn_id in steps[0]["trained"]:  # what trained came from the judge, with the gateway's ids
        # a verdict of the prob judge; a conversation's last reply, which no message followed, has none and
        # trains through its hindsight group's rubric score alone (which turns reach the first step depends on timing)
        verdict = turns[turn_id].judge.get("prob")
        assert (verdict is None or verdict.source in ("prob", "cues")) and turns[turn_id].session_id
    assert any("prob" in turns[i].judge for step in steps for i in step["trained"]) or all(
        not turns[i].next_state for step in steps for i in step["trained"])
    train_ids = {t.id for t in rehearsal.persona_tasks("teacher", "train")}
    assert not train_ids & {t.id for t in rehearsal.persona_tasks("teacher", "test")}
    with pytest.raises(ValueError, match="unknown persona"):
        rehearsal.persona_tasks("pirate", "test")


def test_judge_only_topk_distillation_trains_on_hinted_turns(tmp_path):
    """``opd_topk`` through the deployed path: only turns with the user's correction as a hint train,
    and the step distils the hinted teacher's top-K distribution (a KL over every response position)."""
    import asyncio

    from clawgym import launchers
    from clawgym.rl.launch import load_config
    from clawgym.rl.types import read_jsonl
    from clawgym.serve import rehearsal

    config = load_config(launchers.resolve("chat"), [
        "policy.model=tiny-random", "method=opd_topk", "judge.type=probhint", f"loop.output_dir={tmp_path}",
        "serve.batch_size=2", "trainer.micro_batch_size=2", "serve.hindsight_k=0"])
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=1, users=2, max_turns=2,
                                            max_tokens=8, eval_tasks=1))
    assert result.steps >= 1
    (step, *_) = read_jsonl(tmp_path / "train_steps.jsonl")
    assert step["topk_kl"] > 0 and step["samples"] == 2
    turns = {t.turn_id: t for t in read_jsonl_turns(tmp_path / "turns.jsonl")}
    for turn_id in step["trained"]:
        assert turns[turn_id].judge["hint"].hints  # the user's correction, the teacher's hint


def test_a_rehearsal_trains_exactly_its_step_budget_and_scores_fixed_weights(tmp_path, monkeypatch):
    """Four users keep several batches due: the run still stops at its budget (5 used to give 8), and no
    step runs while the held-out "after" score is taken."""
    import asyncio

    from clawgym import launchers
    from clawgym.rl.launch import load_config
    from clawgym.rl.types import read_jsonl
    from clawgym.serve import rehearsal

    real_score, versions = rehearsal.score_checks, []

    async def score_slowly(policy, tasks, **kwargs):  # room for late judged turns to start a step meanwhile
        before = policy.version
        result = await real_score(policy, tasks, **kwargs)
        await asyncio.sleep(1.0)
        versions.append((before, policy.version))
        return result

    monkeypatch.setattr(rehearsal, "score_checks", score_slowly)
    config = load_config(launchers.resolve("chat"), [
        "policy.model=tiny-random", "method=grpo", "judge.type=prob", "serve.baseline=none",
        f"loop.output_dir={tmp_path}", "serve.batch_size=2", "trainer.micro_batch_size=2"])
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=2, users=4, max_turns=2,
                                            max_tokens=8, eval_tasks=1))
    assert result.steps == 2 and len(list(read_jsonl(tmp_path / "train_steps.jsonl"))) == 2
    assert versions == [(0, 0), (2, 2)]  # before: the initial weights; after: the budget's, unchanged
    # stopped by the time cap, short of the budget, with verdicts still on their way: no step while "after" is scored
    from clawgym.rl.judge import ProbJudge

    real_judge = ProbJudge.judge

    async def judge_slowly(self, turn):
        await asyncio.sleep(0.3)
        return await real_judge(self, turn)

    monkeypatch.setattr(ProbJudge, "judge", judge_slowly)
    versions.clear()
    config.loop.output_dir = str(tmp_path / "capped")
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=100, users=4, max_turns=2,
                                            max_tokens=8, eval_tasks=1, max_minutes=0.1))
    (before, _), (after, still) = versions
    assert before == 0 and after == still == result.steps


def test_a_rehearsals_time_cap_stops_training_too(tmp_path, monkeypatch):
    """Past ``max_minutes`` no step starts, however many batches are due: the step in flight finishes and
    the held-out score comes next (a cap that stopped only the conversations let an OPD cell train 45
    minutes past its 30-minute cap)."""
    import asyncio
    import time

    from clawgym.rl.trainer.torch_trainer import TorchTrainer
    from clawgym.serve import rehearsal

    real_step, real_score = TorchTrainer.train_step, rehearsal.score_checks
    step_starts, score_starts = [], []

    def slow_step(self, samples):  # slower than the users' turns arrive: batches pile up behind the trainer
        step_starts.append(time.perf_counter())
        time.sleep(1.0)
        return real_step(self, samples)

    async def timed_score(policy, tasks, **kwargs):
        score_starts.append(time.perf_counter())
        return await real_score(policy, tasks, **kwargs)

    monkeypatch.setattr(TorchTrainer, "train_step", slow_step)
    monkeypatch.setattr(rehearsal, "score_checks", timed_score)
    config = tiny_grpo_chat_config(tmp_path)
    cap_s = 6.0
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=100, users=4, max_turns=2,
                                            max_tokens=8, eval_tasks=1, max_minutes=cap_s / 60))
    cap_at = score_starts[0] + cap_s  # the run's clock starts just before the first held-out score
    assert 1 <= result.steps == len(step_starts) < 100, result
    assert all(start <= cap_at + 0.1 for start in step_starts), [round(s - cap_at, 2) for s in step_starts]
    assert result.judged >= 2 * (result.steps + 1)  # batches were still due when the cap came
    assert result.turns >= result.conversations  # every conversation answered a turn, counted across the users


def test_a_rehearsals_curve_scores_each_kept_step_with_that_steps_weights(tmp_path, monkeypatch):
    """``curve_every`` keeps the weights of every that-many steps and scores them after the run: each point
    is scored with exactly the weights the trainer served after that step, and the last weights are served
    again afterwards (what a checkpoint and a later "after" hold)."""
    import asyncio

    from clawgym.inference.hf import HFPolicy
    from clawgym.serve import rehearsal

    def fingerprint(policy):
        return round(sum(float(p.detach().double().sum()) for p in policy.model.parameters()), 9)

    real_load, real_score = HFPolicy.load_weights, rehearsal.score_checks
    loads, scored = [], []

    def recorded_load(self, weights, strict=True, version=None):
        loaded = real_load(self, weights, strict, version)
        loads.append((loaded, fingerprint(self)))
        return loaded

    async def recorded_score(policy, tasks, **kwargs):
        scored.append((policy.version, fingerprint(policy)))
        return await real_score(policy, tasks, **kwargs)

    monkeypatch.setattr(HFPolicy, "load_weights", recorded_load)
    monkeypatch.setattr(rehearsal, "score_checks", recorded_score)
    config = tiny_grpo_chat_config(tmp_path)
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=3, users=2, max_turns=2,
                                            max_tokens=8, eval_tasks=2, curve_every=1))
    assert result.steps == 3
    assert [point["step"] for point in result.curve] == [1, 2]  # the last step is the row's own "after"
    for point in result.curve:
        assert 0.0 <= point["score"] <= 1.0 and set(point["checks"]) == set(result.checks_after)
    trained = dict(loads[:3])  # the trainer's publications: versions 1, 2, 3
    assert list(trained) == [1, 2, 3] and len(set(trained.values())) == 3
    (_, before), (_, after), *points = scored
    assert after == trained[3] and before != after
    assert points == [(1, trained[1]), (2, trained[2])]  # each point scored with its own step's weights
    assert loads[-1] == (3, trained[3])  # and the last weights served again
    from clawgym.rl.types import read_jsonl

    records = list(read_jsonl(tmp_path / "train_steps.jsonl"))  # the run's own count, not the trainer's float
    assert [(type(r["step"]), r["step"]) for r in records] == [(int, 1), (int, 2), (int, 3)]
    assert all(r["samples"] == len(r["trained"]) for r in records)
    with pytest.raises(ValueError, match="curve_every"):
        asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=1, curve_every=-1))
    from types import SimpleNamespace

    copyable = SimpleNamespace(trainable_state_dict=dict)
    with pytest.raises(ValueError, match="per-user adapters"):  # steps counted per user: no one curve
        rehearsal.keep_snapshots(SimpleNamespace(trainer=copyable, steps={"alice": 0}, on_step=None), 1)
    with pytest.raises(ValueError, match="trainable_state_dict"):
        rehearsal.keep_snapshots(SimpleNamespace(trainer=object(), steps=0, on_step=None), 1)


def tiny_grpo_chat_config(out):
    """The chat launcher on the tiny model: verdict-only GRPO, no baseline, no hindsight groups, no publish gate
    (every step publishes: tests/test_publish_gate.py covers the gate), two-turn batches, so a rehearsal steps
    within seconds."""
    from clawgym import launchers
    from clawgym.rl.launch import load_config

    return load_config(launchers.resolve("chat"), [
        "policy.model=tiny-random", "method=grpo", "judge.type=prob", "serve.baseline=none",
        f"loop.output_dir={out}", "serve.batch_size=2", "trainer.micro_batch_size=2", "serve.hindsight_k=0",
        "serve.gate.enabled=false"])


def read_jsonl_turns(path):
    from clawgym.serve.turn_log import TurnLog

    log = TurnLog(path)
    try:
        return log.turns()
    finally:
        log.close()
