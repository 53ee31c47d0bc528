"""Hindsight GRPO: a judged turn becomes a group of the person's reply and sampled siblings, scored by
the rubric judge against the person's remembered wishes; nothing unscorable is trained on."""

import asyncio
import json
import math

import openai
import pytest

from clawgym.core.policy import Generation
from clawgym.inference.server import BackgroundServer
from clawgym.personal.hindsight import HindsightGroups, HindsightSettings, hindsight_settings, real_reward, wish_signal
from clawgym.personal.rubric import RubricJudge, WishCheck
from clawgym.personal.trainer import PersonalTrainer, apply_baseline
from clawgym.rl.launch import ConfigError, load_config
from clawgym.rl.types import JudgeResult, Sample, Turn, read_jsonl
from clawgym.serve.main import build_serving
from tests.test_chat_serve import ThanksIsGood, config_file, wait_until

SHORT_WISH = "keep it under 5 words"


class ScriptedSiblings:
    """A served policy whose siblings are given texts (one per call, in order), with their own tokens."""

    def __init__(self, texts, version=3, tokenizer=None):
        self.texts, self.version, self.asked = list(texts), version, []
        self.tokenizer = tokenizer  # renders the prompts of prompted siblings

    async def generate_ids(self, prompt_ids, sampling):
        self.asked.append((list(prompt_ids), sampling))
        text = self.texts.pop(0)
        ids = list(range(10, 10 + len(text.split())))
        return Generation(text=text, message={"role": "assistant", "content": text}, prompt_ids=list(prompt_ids),
                          response_ids=ids, response_logprobs=[-0.5] * len(ids), policy_version=self.version)


def judged_turn(reply="one two three four five six seven", verdict=-1.0, user="alice", max_tokens=64):
    return Turn(episode_id="s", turn_index=0, context=[{"role": "user", "content": "what is 2+2?"}],
                action={"role": "assistant", "content": reply},
                next_state=[{"role": "user", "content": "no, keep it under 5 words"}],
                prompt_ids=[1, 2, 3], response_ids=[4, 5], response_logprobs=[-1.0, -2.0], policy_version=2,
                info={"user": user, "sampling": {"temperature": 0.7, "top_p": 1.0, "max_tokens": max_tokens}},
                judge={"prm": JudgeResult(score=verdict)} if verdict is not None else {}, turn_id="t1")


def groups(siblings, wishes=(SHORT_WISH,), tokenizer=None, **settings):
    rubric = RubricJudge(None, wishes_of=lambda user: list(wishes) if user == "alice" else [])  # cues only
    return HindsightGroups(ScriptedSiblings(siblings, tokenizer=tokenizer), rubric,
                           HindsightSettings(**{"k": 3, **settings}), temperature=0.7)


def test_a_turn_becomes_a_group_of_the_persons_reply_and_siblings_scored_against_the_wishes():
    builder = groups(["four", "a reply of far too many words"])
    samples, reason = asyncio.run(builder.build(judged_turn(), verdict=-1.0))
    assert reason is None and len(samples) == 3
    real, short, long = samples
    assert [s.reward for s in samples] == [0.0, 1.0, 0.0]  # the person's reply: rubric 0, verdict -1 -> 0
    assert short.advantage > 0 > real.advantage and real.advantage == long.advantage
    assert abs(sum(s.advantage for s in samples)) < 1e-6
    assert {s.group_id for s in samples} == {"t1"} and {s.turn_id for s in samples} == {"t1"}
    assert real.response_ids == [4, 5] and real.old_logprobs == [-1.0, -2.0] and real.policy_version == 2
    assert short.response_ids == [10] and short.old_logprobs == [-0.5] and short.policy_version == 3
    prompt, sampling = builder.policy.asked[0]
    assert prompt == [1, 2, 3] and sampling.temperature == 0.7 and sampling.max_tokens == 64  # as the person's reply


def test_every_scored_group_is_reported_with_each_members_reply_wishes_met_reward_and_advantage():
    builder = groups(["four", "a reply of far too many words"])
    reported = []
    builder.on_group = reported.append
    samples, _ = asyncio.run(builder.build(judged_turn(), verdict=-1.0))
    (event,) = reported
    assert event["event"] == "hindsight_group" and event["id"] == "group:t1" and event["turn_id"] == "t1"
    assert event["user"] == "alice" and event["wishes"] == [SHORT_WISH] and event["outcome"] == "queued"
    assert [m["kind"] for m in event["members"]] == ["real", "sibling", "sibling"]
    assert [m["reply"] for m in event["members"]] == ["one two three four five six seven", "four",
                                                      "a reply of far too many words"]
    assert [m["met"] for m in event["members"]] == [{SHORT_WISH: False}, {SHORT_WISH: True}, {SHORT_WISH: False}]
    assert [m["reward"] for m in event["members"]] == [s.reward for s in samples]
    assert [m["advantage"] for m in event["members"]] == pytest.approx([s.advantage for s in samples])


@pytest.mark.parametrize("reply, wishes, outcome", [
    ("four", (SHORT_WISH,), "zero_advantage_group"),  # every member meets the wish: reported, not trained
    ("one two three four five six seven", ("email me the summary",), "unscorable"),
])
def test_groups_that_are_not_trained_are_reported_with_the_reason(reply, wishes, outcome):
    builder = groups(["four", "tiny"], wishes=wishes)
    reported = []
    builder.on_group = reported.append
    samples, why = asyncio.run(builder.build(judged_turn(reply=reply), verdict=None))
    assert samples is None and why == outcome
    (event,) = reported
    assert event["outcome"] == outcome and len(event["members"]) == 3
    if outcome == "unscorable":
        assert all(m["reward"] is None and m["advantage"] is None for m in event["members"])
    else:
        assert [m["advantage"] for m in event["members"]] == [0.0, 0.0, 0.0]


def test_a_person_with_no_wishes_reports_no_group():
    builder = groups(["four", "tiny"])
    reported = []
    builder.on_group = reported.append
    assert asyncio.run(builder.build(judged_turn(user="bob"), verdict=None)) == (None, "no_wishes")
    assert reported == []  # nothing was sampled or scored


def test_the_wish_signal_says_which_wishes_the_groups_train_toward_and_which_none_could_teach():
    friendly = "make it friendlier"
    builder = groups(["four", "a reply of far too many words"], wishes=(SHORT_WISH, friendly))
    builder.rubric.check_many = lambda jobs, users=None: [  # the short one is unfriendly; nobody is friendly
        [WishCheck(SHORT_WISH, len(reply.split()) < 5, "cues"), WishCheck(friendly, False, "model")]
        for _, _, reply in jobs]
    reported = []
    builder.on_group = reported.append
    asyncio.run(builder.build(judged_turn(), verdict=None))
    reported.append({"event": "hindsight_group", "outcome": "unscorable", "wishes": [SHORT_WISH], "members": []})
    signal = wish_signal(reported)
    assert signal[SHORT_WISH]["groups"] == 1 and signal[SHORT_WISH]["real"] == 0.0
    assert signal[SHORT_WISH]["none_met"] == 0.0 and signal[SHORT_WISH]["push"] > 0  # the short sibling wins
    assert signal[friendly]["none_met"] == 1.0 and signal[friendly]["push"] == 0.0  # no member to learn it from
    assert signal[SHORT_WISH]["sibling"] == 0.5 and math.isnan(signal[SHORT_WISH]["prompted"])  # none was prompted


def test_the_persons_verdict_counts_in_their_replys_reward():
    assert real_reward(1.0, -1.0, 0.5) == 0.5 and real_reward(1.0, 1.0, 0.5) == 1.0
    assert real_reward(0.5, None, 0.5) == 0.5 and real_reward(0.0, 1.0, 0.0) == 0.0
    samples, _ = asyncio.run(groups(["a reply of far too many words", "also many words in this one"]).build(
        judged_turn(reply="four", verdict=1.0), verdict=1.0))
    assert [s.reward for s in samples] == [1.0, 0.0, 0.0]


class AnswersNothing(RubricJudge):
    """The cues' rubric, except that ``fragment`` answers nothing (as ``answers_request`` would find it)."""

    def __init__(self, fragment, wishes):
        super().__init__(None, wishes_of=lambda user: list(wishes))
        self.fragment = fragment

    def check_many(self, jobs, users=None):
        checks = super().check_many(jobs, users)
        return [[WishCheck(c.wish, False, "unanswered", 3.0) for c in row] if reply == self.fragment else row
                for row, (_, _, reply) in zip(checks, jobs)]


def test_a_reply_that_answers_nothing_earns_nothing_the_persons_verdict_included():
    """The verdict judge can misread a correction as praise; a one-word reply must not win its group by it."""
    siblings = ["a reply of far too many words", "also many words in this one"]
    rubric = AnswersNothing("Approve", [SHORT_WISH])
    groups_ = HindsightGroups(ScriptedSiblings(siblings), rubric, HindsightSettings(k=3), temperature=0.7)
    samples, why = asyncio.run(groups_.build(judged_turn(reply="Approve", verdict=1.0), verdict=1.0))
    assert samples is None and why == "zero_advantage_group"  # 0 for all three: nothing to learn
    groups_ = HindsightGroups(ScriptedSiblings(["four words is fine", "a reply of far too many words"]), rubric,
                              HindsightSettings(k=3), temperature=0.7)
    samples, _ = asyncio.run(groups_.build(judged_turn(reply="Approve", verdict=1.0), verdict=1.0))
    assert [s.reward for s in samples] == [0.0, 1.0, 0.0]  # without the rule the fragment would score 0.5


@pytest.mark.parametrize("case, reason", [
    ("no_wishes", "no_wishes"),  # a person who never corrected anything: nothing to score against
    ("uncheckable", "unscorable"),  # a wish no reply can show
    ("all_equal", "zero_advantage_group"),  # every reply meets the wish: no relative signal
])
def test_what_cannot_be_scored_makes_no_group(case, reason):
    siblings = ["short", "tiny"]
    if case == "no_wishes":
        builder, turn = groups(siblings), judged_turn(user="bob")
    elif case == "uncheckable":
        builder, turn = groups(siblings, wishes=("email me the summary",)), judged_turn()
    else:
        builder, turn = groups(siblings), judged_turn(reply="four")
    samples, why = asyncio.run(builder.build(turn, verdict=None))
    assert samples is None and why == reason


def test_a_sibling_the_rubric_cannot_decide_is_left_out_of_the_group():
    builder = groups(["", "four"])  # an empty reply is decided (it meets nothing); give it no tokens
    builder.policy.texts = ["", "four"]
    reported = []
    builder.on_group = reported.append

    async def no_tokens(prompt_ids, sampling, _real=builder.policy.generate_ids):
        generation = await _real(prompt_ids, sampling)
        if not generation.text:
            generation.response_ids, generation.response_logprobs = [], []
        return generation

    builder.policy.generate_ids = no_tokens
    samples, _ = asyncio.run(builder.build(judged_turn(), verdict=None))
    assert len(samples) == 2 and builder.stats["sibling_unscorable"] == 1
    empty = reported[0]["members"][1]  # reported, without a reward or an advantage
    assert empty["reply"] == "" and empty["reward"] is None and empty["advantage"] is None
    assert [m["advantage"] for m in reported[0]["members"] if m["advantage"] is not None] == pytest.approx(
        [s.advantage for s in samples])


def test_settings_refuse_groups_that_cannot_teach():
    with pytest.raises(ValueError, match="k >= 2"):
        HindsightSettings(k=1)
    with pytest.raises(ValueError, match="verdict_weight"):
        HindsightSettings(verdict_weight=1.5)


def _member(group, reward, advantage):
    return Sample(prompt_ids=[1], response_ids=[2], old_logprobs=[-1.0], reward=reward,
                  advantage=advantage, group_id=group)


def test_the_batch_baseline_leaves_a_groups_advantages_alone():
    solo = Sample(prompt_ids=[1], response_ids=[2], old_logprobs=[-1.0], reward=-1.0, advantage=-1.0)
    other = Sample(prompt_ids=[1], response_ids=[2], old_logprobs=[-1.0], reward=1.0, advantage=1.0)
    member = _member("g", 0.25, -0.7)
    kept, dropped = apply_baseline([solo, other, member], "batch")
    assert dropped == 0 and [s.advantage for s in kept] == [-1.0, 1.0, -0.7]


def test_a_batch_never_splits_a_group(tmp_path):
    class NoTrainer:
        config = type("C", (), {"method": "grpo", "temperature": 0.7})()
        version = 0

    trainer = PersonalTrainer(NoTrainer(), None, batch_size=4, output_dir=tmp_path)
    trainer.pending = [_member("a", 0, 1)] * 3 + [_member("b", 0, 1)] * 3 + [_member("c", 0, 1)] * 5
    assert [s.group_id for s in trainer.take_batch()] == ["a"] * 3  # a + b would be 6 > 4
    assert [s.group_id for s in trainer.take_batch()] == ["b"] * 3
    assert [s.group_id for s in trainer.take_batch()] == ["c"] * 5  # larger than a batch: taken whole, alone
    assert trainer.pending == []


@pytest.mark.parametrize("overrides, message", [
    ({"hindsight_k": 1}, "k >= 2"),
    ({"hindsight_k": 4, "adapters": "per_user"}, "adapters: shared"),
    ({"hindsight_k": 3, "hindsight_prompted": 3}, r"within \[0, k - 1 = 2\]"),
    ({"hindsight_k": 3, "hindsight_prompted": 1, "hindsight_answered": 2}, r"prompted \+ answered .* got 1 \+ 2"),
    ({"hindsight_k": 3, "hindsight_answered": 1, "hindsight_plain": 2}, r"answered \+ plain .* got 0 \+ 1 \+ 2"),
])
def test_serve_settings_validate_hindsight(tmp_path, overrides, message):
    lora = {"lr": 1e-3, "micro_batch_size": 2, "lora": {"enabled": True}}
    path = config_file(tmp_path, trainer=lora, **overrides)
    load_config(path)  # train uses none of the serve section
    with pytest.raises(ConfigError, match=message):
        load_config(path, serving=True)


def test_hindsight_needs_grpo_or_hybrid(tmp_path):
    with pytest.raises(ConfigError, match="method: grpo"):
        load_config(config_file(tmp_path, hindsight_k=4), ["method=opd", "judge.type=probhint"], serving=True)
    hybrid = load_config(config_file(tmp_path, hindsight_k=4), ["method=hybrid", "judge.type=prob,probhint"],
                         serving=True)
    assert hindsight_settings(hybrid.serve).k == 4


def test_hybrid_groups_give_every_member_the_wishes_as_the_teachers_hint():
    builder = groups(["four", "a reply of far too many words"], wishes=(SHORT_WISH, "call me Sam"))
    builder.teacher_hint = True
    samples, reason = asyncio.run(builder.build(judged_turn(), verdict=-1.0))
    assert reason is None and len(samples) == 3
    assert {s.hint for s in samples} == {"Keep it under 5 words. Call me Sam."}
    assert all(s.hint_messages == judged_turn().context and s.metadata["hint_at"] == 0 for s in samples)
    plain, _ = asyncio.run(groups(["four", "a reply of far too many words"]).build(judged_turn(), verdict=-1.0))
    assert all(s.hint is None for s in plain)  # grpo: the rubric's advantage alone


@pytest.mark.parametrize("method", ["grpo", "hybrid"])
def test_served_turns_become_groups_and_train_and_a_user_who_never_corrects_trains_nothing(tmp_path, method):
    """Through the real gateway on the tiny model: a correction becomes a wish, the turn a scored group
    of 3 whose siblings the served policy sampled, and a step trains on whole groups (hybrid: with the
    teacher's term, the wishes its hint); a user who only says thanks has no wish, so their turns make no
    group and nothing is trained on them."""
    serving = build_serving(load_config(config_file(tmp_path, hindsight_k=3, batch_size=3, max_tokens=16),
                                        [f"method={method}", "judge.type=prob" + (",probhint" if method == "hybrid"
                                                                                  else "")]))
    assert serving.trainer.hindsight.teacher_hint is (method == "hybrid")
    assert serving.trainer.hindsight.rubric.refusals_fail is False  # serve.hindsight_refusals_fail: off by default
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    personal = serving.trainer
    texts = iter(["four", "one two three four five six seven eight", "four", "a b c d e f g"])

    async def scripted(prompt_ids, sampling, _real=serving.policy.generate_ids):
        generation = await _real(prompt_ids, sampling)  # real tokens and logprobs from the tiny model
        generation.text = next(texts, "four")  # the rubric reads these words: a decided, varied group
        return generation

    serving.policy.generate_ids = scripted
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        for _ in range(2):
            first = {"role": "user", "content": "hi"}
            answer = api.chat.completions.create(model="m", messages=[first], user="carol", max_tokens=16)
            api.chat.completions.create(model="m", user="carol", max_tokens=16, messages=[
                first, {"role": "assistant", "content": answer.choices[0].message.content},
                {"role": "user", "content": "thanks"}])
        assert wait_until(lambda: personal.refused["no_wishes"] >= 2), personal.refused
        first = {"role": "user", "content": "what is 2+2?"}
        answer = api.chat.completions.create(model="m", messages=[first], user="alice", max_tokens=16)
        api.chat.completions.create(model="m", user="alice", max_tokens=16, messages=[
            first, {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": "no, keep it under 5 words"}])
        assert wait_until(lambda: personal.steps == 1 and not personal.busy, timeout_s=90), personal.refused
    assert serving.wishes.texts("default") == [SHORT_WISH] or serving.wishes.texts("alice") == [SHORT_WISH]
    (record,) = read_jsonl(tmp_path / "run" / "train_steps.jsonl")
    assert record["samples"] == 3 and len(set(record["trained"])) == 1 and serving.policy.version == 1
    assert (record["opd_adv_mean"] != 0.0) is (method == "hybrid")  # hybrid: the teacher read the wishes
    assert personal.hindsight.stats["groups"] == 1 and personal.hindsight.stats["siblings"] == 2
    shown = [u["wishes_met"] for u in serving.dashboard.data()["users"].values() if u["wishes_met"]]
    assert len(shown) == 1 and len(shown[0]) == 1 and 0.0 <= shown[0][0]["met"] <= 1.0  # the learning curve's point
    serving.gateway.log.flush()
    (group,) = [e for e in serving.gateway.log.events() if e["event"] == "hindsight_group"]  # durable in the turn log
    assert group["outcome"] == "queued" and group["wishes"] == [SHORT_WISH] and len(group["members"]) == 3
    assert group["turn_id"] in record["trained"]
    user = group["user"]
    assert serving.gateway.log.forget_user(user) > 0  # forget-me erases the group with the person's turns
    assert not [e for e in serving.gateway.log.events() if e["event"] == "hindsight_group"]


def test_forget_me_drops_the_users_waiting_turns_and_samples_from_the_shared_trainer(tmp_path):
    class NoTrainer:
        config = type("C", (), {"method": "grpo", "temperature": 0.7})()
        version = 0

    trainer = PersonalTrainer(NoTrainer(), None, batch_size=4, output_dir=tmp_path)
    trainer.hindsight = groups(["four", "four"])
    for user in ("alice", "bob"):
        assert trainer._keep(judged_turn(user=user))
    mine, theirs = _member("a", 0, 1), _member("b", 0, 1)
    mine.metadata["user"], theirs.metadata["user"] = "alice", "bob"
    trainer.pending = [mine, theirs]
    assert trainer.forget("alice") == 2
    assert [s.metadata["user"] for s in trainer.pending] == ["bob"]
    assert [t.info["user"] for t in trainer.awaiting_group] == ["bob"]


def test_prompted_siblings_read_the_wishes_and_train_as_replies_to_the_persons_prompt():
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.trainer.samples import hinted_messages, render_prompt_ids

    tokenizer = load_tokenizer("tiny-random")
    builder = groups(["four", "a reply of far too many words"], tokenizer=tokenizer, prompted=1)
    samples, reason = asyncio.run(builder.build(judged_turn(), verdict=-1.0))
    assert reason is None and [s.metadata["hindsight"] for s in samples] == ["real", "prompted", "sibling"]
    (prompted_ids, _), (own_ids, _) = builder.policy.asked
    teacher = hinted_messages(judged_turn().context, "Keep it under 5 words.", "inline")
    assert prompted_ids == render_prompt_ids(tokenizer, teacher) and own_ids == [1, 2, 3]
    real, prompted, own = samples
    assert prompted.prompt_ids == [1, 2, 3] and prompted.off_policy  # trained on the person's own prompt
    assert not real.off_policy and not own.off_policy
    assert prompted.reward == 1.0 and prompted.advantage > 0 > own.advantage  # scored like any sibling
    assert builder.stats["prompted_siblings"] == 1


def test_prompted_siblings_are_refused_where_they_cannot_be_built():
    with pytest.raises(ValueError, match=r"within \[0, k - 1 = 2\]"):
        HindsightSettings(k=3, prompted=3)
    with pytest.raises(ValueError, match="tokenizer"):  # the scripted policy has none
        groups(["four", "five"], prompted=1)


def test_answered_siblings_answer_the_persons_next_message_and_train_as_replies_to_the_turns_prompt():
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.trainer.samples import render_prompt_ids

    tokenizer = load_tokenizer("tiny-random")
    builder = groups(["four", "a reply of far too many words"], tokenizer=tokenizer, answered=1)
    reported = []
    builder.on_group = reported.append
    turn = judged_turn()
    samples, reason = asyncio.run(builder.build(turn, verdict=-1.0))
    assert reason is None and [s.metadata["hindsight"] for s in samples] == ["real", "answered", "sibling"]
    (answered_ids, _), (own_ids, _) = builder.policy.asked
    next_request = [*turn.context, turn.action, *turn.next_state]  # what the person's next turn is prompted with
    assert answered_ids == render_prompt_ids(tokenizer, next_request) and own_ids == [1, 2, 3]
    real, answered, own = samples
    assert answered.prompt_ids == [1, 2, 3] and answered.off_policy and answered.policy_version == 3
    assert not real.off_policy and not own.off_policy
    assert answered.reward == 1.0 and answered.advantage > 0 > own.advantage  # scored like any sibling
    assert builder.stats["answered_siblings"] == 1
    assert [m["kind"] for m in reported[0]["members"]] == ["real", "answered", "sibling"]
    assert wish_signal(reported)[SHORT_WISH]["answered"] == 1.0


def test_a_turn_nobody_answered_gets_own_siblings_instead_of_answered_ones():
    from clawgym.inference.models import load_tokenizer

    builder = groups(["four", "five six"], tokenizer=load_tokenizer("tiny-random"), answered=1)
    turn = judged_turn()
    turn.next_state = [{"role": "user", "content": "   "}]  # no words of the person to answer
    samples, reason = asyncio.run(builder.build(turn, verdict=-1.0))
    assert reason is None and [s.metadata["hindsight"] for s in samples] == ["real", "sibling", "sibling"]
    assert [ids for ids, _ in builder.policy.asked] == [[1, 2, 3], [1, 2, 3]]
    assert builder.stats["answered_siblings"] == 0


def test_answered_siblings_are_refused_where_they_cannot_be_built():
    with pytest.raises(ValueError, match=r"prompted \+ answered siblings must be within \[0, k - 1 = 2\], got 1 \+ 2"):
        HindsightSettings(k=3, prompted=1, answered=2)
    with pytest.raises(ValueError, match="answered siblings"):
        HindsightSettings(k=3, answered=-1)
    with pytest.raises(ValueError, match="policy's tokenizer"):  # the scripted policy has none
        groups(["four", "five"], answered=1)


def test_prompted_siblings_from_another_model_need_the_policys_tokenizer(tmp_path):
    config = load_config(config_file(tmp_path, hindsight_k=3, hindsight_prompted=1,
                                     hindsight_prompted_model="tiny-random-qwen"), ["judge.type=prob"])
    with pytest.raises(ConfigError, match="another tokenizer than the policy 'tiny-random'"):
        build_serving(config)


def test_a_served_turn_trains_with_a_sibling_the_other_model_wrote_reading_the_wishes(tmp_path):
    """``serve.hindsight_prompted_model``: a second model (here another tiny one, same tokenizer) samples the
    prompted sibling from the teacher's prompt; it is trained off-policy in the person's group and the
    model is closed with the server."""
    serving = build_serving(load_config(config_file(tmp_path, hindsight_k=3, batch_size=3, max_tokens=16,
                                                    hindsight_prompted=1, hindsight_prompted_model="tiny-random",
                                                    hindsight_refusals_fail=True),
                                        ["judge.type=prob"]))
    groups_ = serving.trainer.hindsight
    assert groups_.rubric.refusals_fail  # serve.hindsight_refusals_fail reaches the rubric judge
    assert groups_.sampler is not serving.policy and groups_.owns_sampler
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    texts = iter(["one two three four five six seven eight", "four", "a b c d e f g"])  # served, prompted, own

    def scripted(policy):
        async def generate_ids(prompt_ids, sampling, _real=policy.generate_ids):
            generation = await _real(prompt_ids, sampling)
            generation.text = next(texts, "four")
            return generation
        return generate_ids

    serving.policy.generate_ids = scripted(serving.policy)
    groups_.sampler.generate_ids = scripted(groups_.sampler)
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        first = {"role": "user", "content": "what is 2+2?"}
        answer = api.chat.completions.create(model="m", messages=[first], user="alice", max_tokens=16)
        api.chat.completions.create(model="m", user="alice", max_tokens=16, messages=[
            first, {"role": "assistant", "content": answer.choices[0].message.content},
            {"role": "user", "content": "no, keep it under 5 words"}])
        assert wait_until(lambda: serving.trainer.steps == 1 and not serving.trainer.busy, timeout_s=90), \
            serving.trainer.refused
    (record,) = read_jsonl(tmp_path / "run" / "train_steps.jsonl")
    assert record["samples"] == 3 and record["ratio_mean"] == pytest.approx(1.0, abs=0.05)
    assert groups_.stats["prompted_siblings"] == 1 and groups_.stats["groups"] == 1


def test_the_signal_script_reads_a_runs_turn_log_and_says_when_it_has_no_groups(tmp_path, capsys):
    from tests.scripts import load_script

    script = load_script("benchmarks/hindsight_signal.py")
    builder = groups(["four", "a reply of far too many words"])
    reported = []
    builder.on_group = reported.append
    for turn_id in ("t1", "t2"):
        turn = judged_turn()
        turn.turn_id = turn_id
        if turn_id == "t2":  # a later turn: the person has spoken back to a first reply
            turn.context += [{"role": "assistant", "content": "4"}, {"role": "user", "content": "and 3+3?"}]
        reported.insert(0, {"event": "turn", "turn": turn.to_dict()})
        builder.policy.texts = ["four", "a reply of far too many words"]
        asyncio.run(builder.build(turn, verdict=None))
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(e) + "\n" for e in reported))
    events = script.group_events(script.read_log(tmp_path))
    assert script.first_replies(script.read_log(tmp_path)) == {"t1"} and [e["turn_id"] for e in events] == ["t1", "t2"]
    (row,) = [line for line in script.table(events[:1], events[1:]).splitlines() if line.startswith(SHORT_WISH)]
    advantage = next(m["advantage"] for m in events[0]["members"] if m["met"][SHORT_WISH])
    push = f"{advantage / 3:+.2f}"  # one of three members meets the wish: one of the two own siblings
    assert row.split()[-19:] == ["2", "0.00", "->", "0.00", "0.50", "->", "0.50", "-", "->", "-", "-", "->", "-",
                                 "0.00", "->", "0.00", push, "->", push]  # no prompted or answered siblings
    script.sys.argv = ["hindsight_signal.py", str(tmp_path)]
    script.main()
    assert "1 groups on first replies, 1 on later turns" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "turns.jsonl").write_text("")
    with pytest.raises(SystemExit, match="no hindsight_group events"):
        script.sys.argv = ["hindsight_signal.py", str(tmp_path / "empty")]
        script.main()
    with pytest.raises(SystemExit, match="no turn log"):
        script.read_log(tmp_path / "missing")


def test_the_signal_script_says_which_wishes_the_cues_decided_and_which_a_model_did():
    from tests.scripts import load_script

    script = load_script("benchmarks/hindsight_signal.py")
    explain = "explain the grade in at least two sentences"
    context = [{"role": "user", "content": "Grade this answer out of 10. Student answer: 4. Problem: 2+2?"}]
    members = [  # what the run's judge recorded; the script re-runs only the cues
        {"kind": "real", "reply": "7/10", "met": {explain: False, SHORT_WISH: True}},
        {"kind": "sibling", "reply": "The answer 4 is right. Two and two make four.",
         "met": {explain: True, SHORT_WISH: False}},
        {"kind": "sibling", "reply": "The student wrote four. That is the right sum here.",
         "met": {explain: False, SHORT_WISH: False}},
        {"kind": "sibling", "reply": "", "met": {explain: False, "remind me tomorrow": False}},
    ]
    events = [{"event": "turn", "turn": {"turn_id": "t1", "context": context}},
              {"event": "hindsight_group", "turn_id": "t1", "members": members}]
    counts = script.who_decided(events, script.group_events(events))
    # one sentence: the count decides "not met"; two sentences: the count holds, the model decided (1 of 2 met);
    # an empty reply meets nothing; a wish no reply can show is left out
    assert counts[explain] == {"members": 4, "by_cues": 2, "cues_met": 0, "by_model": 2, "model_met": 1}
    assert counts[SHORT_WISH] == {"members": 3, "by_cues": 3, "cues_met": 1}
    assert "remind me tomorrow" not in counts
    (row,) = [line for line in script.decided_table(counts).splitlines() if line.startswith(explain)]
    assert row.split()[-5:] == ["4", "0.50", "0.00", "0.50", "0.50"]
    (row,) = [line for line in script.decided_table(counts).splitlines() if line.startswith(SHORT_WISH)]
    assert row.split()[-5:] == ["3", "1.00", "0.33", "0.00", "-"]


def openclaw_turn():
    """A turn as the real OpenClaw sends it: its system prompt and tools, the person's words with a timestamp and
    Runtime suffix, then its internal-context block as a last user message."""
    turn = judged_turn(reply='{"name": "apply_patch", "arguments": {"input": "x"}}')
    turn.context = [
        {"role": "system", "content": "You are a personal assistant running inside OpenClaw. (12k tokens of it)"},
        {"role": "user", "content": "[Wed 2026-12-02 07:27 UTC] what is 2+2?\n\nRuntime: agent=main | sessionId=s1"},
        {"role": "user", "content": [{"type": "text", "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nnone\n"
                                                              "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}]}]
    turn.info["tools"] = [{"type": "function", "function": {"name": "apply_patch", "parameters": {}}}]
    return turn


def test_answered_siblings_see_openclaws_internal_block_after_the_persons_words_as_its_next_request_has_it():
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.trainer.samples import render_prompt_ids

    tokenizer = load_tokenizer("tiny-random")
    builder = groups(["four", "five six"], tokenizer=tokenizer, answered=1)
    turn = openclaw_turn()
    asyncio.run(builder.build(turn, verdict=-1.0))
    (answered_ids, _), _ = builder.policy.asked
    system, words, internal = turn.context
    expected = [system, words, turn.action, *turn.next_state, internal]  # not the old block mid-conversation
    assert answered_ids == render_prompt_ids(tokenizer, expected, turn.info["tools"])


def test_with_person_last_an_answered_siblings_prompt_reads_the_block_before_the_persons_next_words():
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.trainer.samples import render_prompt_ids

    tokenizer = load_tokenizer("tiny-random")
    builder = groups(["four", "five six"], tokenizer=tokenizer, answered=1, person_last=True)
    turn = openclaw_turn()
    system, words, internal = turn.context
    turn.context = [system, internal, words]  # as the gateway had the model read it (serve.person_last)
    asyncio.run(builder.build(turn, verdict=-1.0))
    (answered_ids, _), _ = builder.policy.asked
    *earlier, said = [*turn.next_state]
    assert said["role"] == "user"
    expected = [system, words, turn.action, *earlier, internal, said]  # as the gateway will read the next request
    assert answered_ids == render_prompt_ids(tokenizer, expected, turn.info["tools"])


def test_plain_siblings_answer_the_conversation_alone_with_the_wishes_and_train_on_the_clients_prompt():
    from clawgym.inference.models import load_tokenizer
    from clawgym.rl.trainer.samples import render_prompt_ids

    tokenizer = load_tokenizer("tiny-random")
    builder = groups(["four", "a reply of far too many words"], tokenizer=tokenizer, plain=1)
    samples, reason = asyncio.run(builder.build(openclaw_turn(), verdict=-1.0))
    assert reason is None and [s.metadata["hindsight"] for s in samples] == ["real", "plain", "sibling"]
    (plain_ids, _), (own_ids, _) = builder.policy.asked
    # no system prompt, no tools, no internal block, no timestamp or Runtime suffix; the wish beside the words
    alone = [{"role": "user", "content": "what is 2+2? Keep it under 5 words."}]
    assert plain_ids == render_prompt_ids(tokenizer, alone) and own_ids == [1, 2, 3]
    real, plain, own = samples
    assert plain.prompt_ids == [1, 2, 3] and plain.off_policy  # trained as a reply to OpenClaw's own prompt
    assert plain.reward == 1.0 and plain.advantage > 0 > own.advantage
    assert builder.stats["plain_siblings"] == 1
    with pytest.raises(ValueError, match=r"prompted \+ answered \+ plain siblings .* got 0 \+ 1 \+ 2"):
        HindsightSettings(k=3, answered=1, plain=2)
    with pytest.raises(ValueError, match="policy's tokenizer"):
        groups(["four", "five"], plain=1)
