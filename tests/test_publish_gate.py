"""Never worse for the person: the publish gate, the collapse alarms, the kept versions and rollback."""

import asyncio
import json

import openai
import pytest
import torch

from clawgym.core.policy import Generation
from clawgym.inference.server import BackgroundServer
from clawgym.personal import alarms
from clawgym.personal.gate import HeldBack, PublishGate
from clawgym.personal.publishing import Publisher, UnknownVersion
from clawgym.personal.rubric import RubricJudge
from clawgym.personal.trainer import PersonalTrainer
from clawgym.rl.launch import ConfigError, load_config
from clawgym.rl.launch.serve_section import AlarmSection, GateSection
from clawgym.rl.types import JudgeResult, Sample, Turn, read_jsonl
from clawgym.serve.main import build_serving
from tests.test_chat_serve import ThanksIsGood, config_file, converse, wait_until

WISH = "keep it under 5 words"  # decided by the cues: the tests need a judge that is right by construction


class Scripted:
    """A policy that answers every request with ``reply`` (greedy only), counting what it decodes. As the
    gate's candidate, ``update_weights`` takes the reply from the "weights" unless ``fixed``."""

    def __init__(self, reply, fixed=False):
        self.reply, self.fixed, self.version, self.decoded = reply, fixed, 0, 0

    async def update_weights(self, weights, version=None):
        if not self.fixed:
            self.reply = weights["reply"]
        self.version = version
        return version

    async def generate_ids(self, prompt_ids, sampling):
        assert sampling.temperature == 0.0  # the gate replays greedily
        self.decoded += 1
        ids = list(range(100, 100 + len(self.reply.split())))
        return Generation(text=self.reply, message={"role": "assistant", "content": self.reply},
                          prompt_ids=list(prompt_ids), response_ids=ids, response_logprobs=[-0.1] * len(ids))

    async def close(self):
        pass


def turn(i, user="alice", prompt=(1, 2, 3)):
    return Turn(episode_id="s", turn_index=i, context=[{"role": "user", "content": f"question {i}?"}],
                action={"role": "assistant", "content": "an answer"}, prompt_ids=list(prompt), response_ids=[4, 5],
                response_logprobs=[-1.0, -1.0], info={"user": user, "sampling": {"temperature": 1.0}},
                judge={"prm": JudgeResult(score=1.0)}, turn_id=f"{user}-{i}")


def gate(serving_reply="four words at most", wishes=(WISH,), **settings):
    rubric = RubricJudge(None, cues=True)
    return PublishGate(GateSection(enabled=True, **settings), rubric, lambda user: list(wishes),
                       candidate=Scripted(""), served=Scripted(serving_reply))


def test_each_persons_every_nth_judged_turn_is_held_back_up_to_the_limit_and_the_same_after_a_replay():
    held = HeldBack(every=3, requests=2)
    chosen = [held.hold(turn(i, user)) for i in range(8) for user in ("alice", "bob")]
    assert [t.turn_id for t in held.all()] == ["alice-0", "alice-3", "bob-0", "bob-3"]
    again = HeldBack(every=3, requests=2)
    assert [again.hold(turn(i, user)) for i in range(8) for user in ("alice", "bob")] == chosen
    assert held.forget("alice") == 2 and [t.turn_id for t in held.all()] == ["bob-0", "bob-3"]
    assert not HeldBack(every=1, requests=5).hold(turn(0, prompt=()))  # nothing to replay: never held


def test_the_gate_refuses_weights_that_meet_fewer_wishes_and_passes_those_that_meet_as_many():
    g = gate()
    for i in range(3):
        g.held.hold(turn(i))
    worse = asyncio.run(g.judge({"reply": "a reply that is far longer than the person wants it"}, 0, 1))
    assert (worse.publish, worse.reason, worse.candidate, worse.serving, worse.scored) == (False, "worse", 0.0, 1.0, 1)
    assert worse.users == {"alice": [0.0, 1.0]} and worse.candidate_tokens == 11 and worse.serving_tokens == 4
    same = asyncio.run(g.judge({"reply": "short and fine"}, 0, 2))
    assert (same.publish, same.reason, same.candidate, same.serving) == (True, "not_worse", 1.0, 1.0)
    assert g.served.decoded == 1  # the serving weights' replies are decoded once per version


def test_a_margin_lets_a_small_loss_through_and_a_published_candidates_replies_become_the_serving_ones():
    g = gate(margin=1.0, every=1, requests=2)
    g.held.hold(turn(0))
    g.held.hold(turn(1, prompt=(7, 8)))
    verdict = asyncio.run(g.judge({"reply": "a reply that is far longer than the person wants it"}, 0, 1))
    assert verdict.publish and verdict.reason == "not_worse" and verdict.candidate == 0.0  # 0.0 >= 1.0 - margin
    g.accept(1)
    again = asyncio.run(g.judge({"reply": "short"}, 1, 2))
    assert g.served.decoded == 2 and again.serving == 0.0 and again.candidate == 1.0  # serving = the published ones


def test_the_repetition_signal_is_the_rise_over_the_first_weights_reply_and_survives_a_restart(tmp_path):
    """Under a client's long prompt the model may repeat itself from the start (the default model under OpenClaw's
    default profile: 0.7 of its 3-grams): that is its way, not a collapse; a rise over it is."""
    looping = "the answer is here the answer is here the answer is here the answer is here"
    g = PublishGate(GateSection(enabled=True), RubricJudge(None, cues=True), lambda user: [WISH],
                    candidate=Scripted(""), served=Scripted(looping), state_path=tmp_path / "gate_lengths.json")
    g.held.hold(turn(0))
    same = asyncio.run(g.judge({"reply": looping}, 0, 1))
    assert same.candidate_repetition > 0.6 and same.repetition == 0.0
    collapsed = asyncio.run(g.judge({"reply": "go " * 40}, 0, 2))
    assert collapsed.repetition == pytest.approx(collapsed.candidate_repetition - same.candidate_repetition, abs=2e-3)
    again = PublishGate(GateSection(enabled=True), RubricJudge(None, cues=True), lambda user: [WISH],
                        candidate=Scripted(""), served=Scripted("other words now"),
                        state_path=tmp_path / "gate_lengths.json")
    again.held.hold(turn(0))
    assert asyncio.run(again.judge({"reply": looping}, 5, 6)).repetition == 0.0  # the yardstick is the first weights'
    (tmp_path / "old.json").write_text(json.dumps({"alice-0": 4}))  # a file of lengths alone, from before
    old = PublishGate(GateSection(enabled=True), RubricJudge(None, cues=True), lambda user: [WISH],
                      candidate=Scripted(""), served=Scripted(looping), state_path=tmp_path / "old.json")
    old.held.hold(turn(0))
    read = asyncio.run(old.judge({"reply": looping}, 0, 1))
    assert read.initial_tokens == 4 and read.repetition == read.candidate_repetition  # no yardstick: the share itself


class Sampling(Scripted):
    """Records the sampling of every replay. With ``shrinks``, a temperature above 0 cuts the reply to its first
    word: the code reviewer's collapse, whose served (sampled) replies fell to one word while greedy replays
    kept half their length."""

    def __init__(self, reply, shrinks=False):
        super().__init__(reply, fixed=True)
        self.shrinks, self.asked = shrinks, []

    async def generate_ids(self, prompt_ids, sampling):
        self.asked.append(sampling)
        text = self.reply.split()[0] if self.shrinks and sampling.temperature > 0 else self.reply
        ids = list(range(100, 100 + len(text.split())))
        return Generation(text=text, message={"role": "assistant", "content": text}, prompt_ids=list(prompt_ids),
                          response_ids=ids, response_logprobs=[-0.1] * len(ids))


def test_a_sampled_gate_replays_each_request_at_its_own_temperature_and_sees_a_collapse_greedy_replays_miss():
    reply = "a reply of thirteen words that keeps on going well past the point"

    def gate_of(**settings):
        g = PublishGate(GateSection(enabled=True, every=1, **settings), RubricJudge(None, cues=True),
                        lambda user: [WISH], candidate=Sampling(reply, shrinks=True), served=Sampling(reply))
        g.held.hold(turn(0))
        g.held.hold(turn(4, prompt=(7, 8)))
        return g

    def length_alarms(verdict):
        return alarms.check(AlarmSection(), {"length_ratio": verdict.candidate_tokens / verdict.initial_tokens})

    greedy = gate_of()
    verdict = asyncio.run(greedy.judge({}, 0, 1))
    assert {s.temperature for s in greedy.candidate.asked + greedy.served.asked} == {0.0}
    assert verdict.candidate_tokens == verdict.initial_tokens == 13 and not length_alarms(verdict)

    sampled = gate_of(sampled=True)
    verdict = asyncio.run(sampled.judge({}, 0, 1))
    asked = sampled.candidate.asked + sampled.served.asked
    assert {(s.temperature, s.top_p) for s in asked} == {(1.0, 1.0)}  # the held-back turns' own sampling
    assert [s.seed for s in sampled.candidate.asked] == [s.seed for s in sampled.served.asked]  # one draw for both
    assert len({s.seed for s in sampled.candidate.asked}) == 2
    asyncio.run(sampled.judge({}, 0, 2))
    assert [s.seed for s in sampled.candidate.asked[2:]] == [s.seed for s in sampled.candidate.asked[:2]]
    assert (verdict.candidate_tokens, verdict.initial_tokens) == (1, 13)
    assert [a.signal for a in length_alarms(verdict)] == ["length_ratio"]


def test_with_nothing_to_measure_the_gate_publishes_and_says_why():
    g = gate()
    assert asyncio.run(g.judge({"reply": "x"}, 0, 1)).reason == "no_held_back"
    g = gate(wishes=())
    g.held.hold(turn(0))
    verdict = asyncio.run(g.judge({"reply": "x"}, 0, 1))
    assert (verdict.publish, verdict.reason, verdict.candidate) == (True, "unscored", None)


@pytest.mark.parametrize("signals, fired", [
    ({"entropy": 0.01}, ["entropy"]),
    ({"entropy": 3.0}, ["entropy_high"]),
    ({"kl": 0.9}, ["kl"]),
    ({"length_ratio": 0.2}, ["length_ratio"]),
    ({"length_ratio": 4.0}, ["length_ratio_high"]),
    ({"repetition": 0.7, "similarity": 0.95}, ["repetition", "similarity"]),
    ({"refusals": 4}, ["refusals"]),
    ({"entropy": 0.5, "kl": 0.1, "length_ratio": 1.0, "repetition": 0.1, "similarity": 0.2, "refusals": 1}, []),
])
def test_each_alarm_fires_past_its_threshold_and_only_then(signals, fired):
    settings = AlarmSection(min_entropy=0.1, max_entropy=2.0, max_kl=0.5)
    raised = alarms.check(settings, signals)
    assert [a.signal for a in raised] == fired
    assert all(a.message for a in raised)
    assert alarms.check(AlarmSection(max_entropy=None, min_length_ratio=None, max_length_ratio=None,
                                     max_repetition=None, max_similarity=None, max_refusals=None), signals) == []


def test_repetition_and_similarity_read_the_replies_words():
    assert alarms.repetition_within("the cat sat on the mat") == 0.0
    assert alarms.repetition_within("go go go go go go") == pytest.approx(0.75)
    assert alarms.similarity_across(["one two three four", "one two three four"]) == 1.0
    assert alarms.similarity_across(["one two three four", "five six seven eight"]) == 0.0
    assert alarms.similarity_across(["one two three"]) == 0.0


def tiny_trainer(tmp_path, gate_=None, alarm_settings=None, **config):
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.models import load_model
    from clawgym.rl.trainer import TorchTrainer, TrainerConfig

    serve_model, tokenizer = load_model("tiny-random")
    train_model, _ = load_model("tiny-random")
    trainer = TorchTrainer(train_model, tokenizer, TrainerConfig(lr=1e-2, micro_batch_size=4, **config))
    policy = HFPolicy(serve_model, tokenizer)
    publisher = Publisher(trainer, policy, tmp_path, gate=gate_, alarms=alarm_settings, keep_versions=3)
    return PersonalTrainer(trainer, policy, batch_size=2, output_dir=tmp_path, baseline="none",
                           publisher=publisher)


def samples(n=2):
    return [Sample(prompt_ids=[1, 2, 3], response_ids=[4, 5, 6], old_logprobs=[-4.0] * 3, reward=1.0, advantage=1.0,
                   turn_id=f"s{i}") for i in range(n)]


def served(personal):
    return {k: v.clone() for k, v in personal.policy.model.state_dict().items()}


def same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


async def test_a_refused_step_keeps_the_old_weights_serving_and_returns_the_trainer_to_them(tmp_path):
    g = gate()
    g.candidate = Scripted("a reply that is far longer than the person wants it", fixed=True)
    g.held.hold(turn(0))
    personal = tiny_trainer(tmp_path, gate_=g)
    before = served(personal)
    personal.pending = samples()
    await personal._train_due()
    assert personal.steps == 1 and personal.policy.version == 0 and same(before, served(personal))
    assert same(before, {k: v for k, v in personal.trainer.model.state_dict().items()})  # back to the served
    (record,) = read_jsonl(tmp_path / "train_steps.jsonl")
    assert record["published"] is False and record["gate"]["reason"] == "worse" and record["policy_version"] == 0
    g.candidate.reply = "short"  # the next step's weights meet the wish
    personal.pending = samples()
    await personal._train_due()
    assert personal.policy.version == 1 and not same(before, served(personal))
    status = personal.status()
    assert [v["version"] for v in status["versions"]] == [1, 0] and status["versions"][0]["serving"]
    assert status["last"]["published"] and status["last"]["gate"]["candidate"] == 1.0
    await personal.close()
    await personal.policy.close()


async def test_an_alarm_pauses_training_until_resumed_and_the_pause_survives_a_restart(tmp_path):
    personal = tiny_trainer(tmp_path, alarm_settings=AlarmSection(min_entropy=100.0))  # no model is that unsure
    before = served(personal)
    personal.pending = samples()
    await personal._train_due()
    assert personal.publisher.paused and "entropy" in personal.publisher.reason
    assert personal.policy.version == 0 and same(before, served(personal))
    (record,) = read_jsonl(tmp_path / "train_steps.jsonl")
    assert record["alarms"][0]["signal"] == "entropy" and record["signals"]["entropy"] > 0
    personal.add(turn(0))
    assert personal.refused["training_paused"] == 1 and personal.pending == []
    again = Publisher(personal.trainer, personal.policy, tmp_path)  # a restart reads the pause back
    assert again.paused and again.reason == personal.publisher.reason
    assert personal.resume()["paused"] is False and not Publisher(personal.trainer, personal.policy, tmp_path).paused
    await personal.close()
    await personal.policy.close()


async def test_rollback_serves_an_earlier_version_again_under_a_new_number(tmp_path):
    personal = tiny_trainer(tmp_path)
    initial = served(personal)
    for _ in range(2):
        personal.pending = samples()
        await personal._train_due()
    assert personal.policy.version == 2 and not same(initial, served(personal))
    with pytest.raises(UnknownVersion):
        await personal.rollback(7)
    status = await personal.rollback(0)
    assert personal.policy.version == 3 == personal.trainer.version and same(initial, served(personal))
    assert [(v["version"], v["serving"]) for v in status["versions"]] == [(3, True), (2, False), (1, False)]
    assert status["versions"][0]["source"] == "rollback to v0"  # keep_versions=3: v0's copy was pruned
    await personal.close()
    await personal.policy.close()


def test_the_trainer_reports_entropy_and_with_monitor_kl_the_drift_from_the_initial_weights(tmp_path):
    from clawgym.inference.models import load_model
    from clawgym.rl.trainer import TorchTrainer, TrainerConfig

    for monitor in (False, True):
        model, tokenizer = load_model("tiny-random")
        trainer = TorchTrainer(model, tokenizer, TrainerConfig(lr=1e-2, monitor_kl=monitor))
        first, second = trainer.train_step(samples()), trainer.train_step(samples())
        assert first["entropy"] > 0 and abs(first["kl"]) < 1e-6
        assert (second["kl"] > 0) is monitor


def test_a_served_gate_needs_the_in_process_shared_policy(tmp_path):
    with pytest.raises(ConfigError, match="serve.gate decodes each step's weights"):
        load_config(config_file(tmp_path, gate={"enabled": True}), ["policy.backend=sglang"], serving=True)
    per_user = load_config(config_file(tmp_path, gate={"enabled": True}, adapters="per_user",
                                       trainer={"lora": {"enabled": True}}), serving=True)
    assert per_user.serve.gate.enabled  # per-user adapters are gated per user (tests/test_per_user_gate.py)
    with pytest.raises(ConfigError, match="serve.gate.every"):
        load_config(config_file(tmp_path, gate={"every": 0}), serving=True)


def test_versions_rollback_and_resume_over_http_and_the_choice_survives_a_restart(tmp_path):
    config = config_file(tmp_path, admin_key="admin")
    serving = build_serving(load_config(config, serving=True))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    initial = {k: v.clone() for k, v in serving.policy.model.state_dict().items()}
    with BackgroundServer(serving.app) as url:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        converse(api, "alice", "thanks!")
        converse(api, "bob", "no, wrong")
        assert wait_until(lambda: serving.trainer.steps == 1 and not serving.trainer.busy), serving.trainer.refused
        import httpx

        def call(method, path, key="k", **kw):
            return httpx.request(method, url + path, headers={"Authorization": f"Bearer {key}"}, timeout=30, **kw)

        status = call("GET", "/v1/training").json()
        assert status["version"] == 1 and [v["version"] for v in status["versions"]] == [1, 0]
        assert call("GET", "/v1/training", key="wrong").status_code == 401
        assert call("POST", "/v1/rollback", content=b"{not json").status_code == 400
        assert call("POST", "/v1/rollback", json={"version": "0"}).status_code == 400
        missing = call("POST", "/v1/rollback", json={"version": 9})
        assert missing.status_code == 404 and "kept: [1, 0]" in missing.json()["error"]["message"]
        rolled = call("POST", "/v1/rollback", json={"version": 0}).json()
        assert rolled["version"] == 2 and rolled["versions"][0]["source"] == "rollback to v0"
        assert call("GET", "/health").json()["training"] == {"version": 2, "paused": False, "reason": ""}
        assert call("POST", "/v1/training/resume").json()["paused"] is False
        data = call("GET", "/dashboard/data", key="admin").json()
        assert data["training"]["version"] == 2 and data["training"]["versions"][0]["serving"]
    assert all(torch.equal(initial[k], v) for k, v in serving.policy.model.state_dict().items())
    serving.gateway.log.close()
    again = build_serving(load_config(config, serving=True))  # a new process on the same run directory
    assert again.policy.version == 2
    assert all(torch.equal(initial[k], v) for k, v in again.policy.model.state_dict().items())
    state = json.loads((tmp_path / "run" / "versions" / "index.json").read_text())
    assert [e["version"] for e in state] == [0, 1, 2]


def test_the_dashboard_shows_versions_rolls_back_and_resumes_a_paused_training_in_chromium(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    serving = build_serving(load_config(config_file(tmp_path, admin_key="admin"), serving=True))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    with BackgroundServer(serving.app) as url, playwright.sync_playwright() as p:
        api = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        converse(api, "alice", "thanks!")
        converse(api, "bob", "no, wrong")
        assert wait_until(lambda: serving.trainer.steps == 1 and not serving.trainer.busy), serving.trainer.refused
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{url}/dashboard?key=admin")
            page.wait_for_selector("[data-training] h2:has-text('serving version 1')", timeout=15000)
            assert "last step published" in page.inner_text("[data-gate]")
            page.click("[data-version='0'] button")  # serve the initial weights again
            page.wait_for_selector("[data-training] h2:has-text('serving version 2')", timeout=30000)
            assert "rollback to v0" in page.inner_text("[data-version='2']")
            serving.trainer.publisher.alarms = AlarmSection(min_entropy=100.0)  # the next step raises an alarm
            converse(api, "alice", "thanks!")
            converse(api, "bob", "no, wrong")
            page.wait_for_selector("[data-paused]", timeout=60000)
            assert "the token entropy fell" in page.inner_text("[data-paused]")
            assert "NOT published" in page.inner_text("[data-gate]")
            assert serving.policy.version == 2  # the person kept the weights they had
            page.click("[data-paused] button")  # resume training
            page.wait_for_selector("[data-paused]", state="detached", timeout=30000)
            assert not serving.trainer.publisher.paused
        finally:
            browser.close()
    serving.gateway.log.close()
