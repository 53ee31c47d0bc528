"""Never worse for each person with per-user adapters: each adapter's step passes that person's own publish gate,
an alarm pauses only that person, versions and rollback are per person and survive a restart."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.inference.multi_adapter import MultiAdapterHFPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.personal.publishing import UnknownVersion
from clawgym.personal.rubric import WishCheck
from clawgym.personal.user_adapters import UserAdapters, UserAdapterTrainer, UserGating
from clawgym.rl.launch import load_config
from clawgym.rl.launch.serve_section import AlarmSection, GateSection
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.types import JudgeResult, Turn, read_jsonl
from clawgym.serve.main import build_serving
from tests.test_chat_serve import ThanksIsGood, config_file
from tests.test_publish_gate import samples
from tests.test_serve_users import ADMIN, KEYS, TRAINER, conversation
from tests.waiting import wait_for

TARGETS = ("q_proj", "v_proj")


class ScriptedRubric:
    """A wish judge whose verdicts the test sets per person: ``met[wish] = (candidate's, serving's)``. The gate
    asks about each held-back request's two replies in that order (the new adapter's, then the serving one's)."""

    def __init__(self, met):
        self.met = met
        self.asked = 0

    def check_many(self, jobs, users=None):
        self.asked += len(jobs)
        return [[WishCheck(w, self.met[w][i % 2], "cues") for w in wishes] for i, (wishes, _, _) in enumerate(jobs)]


def wish(user):
    return f"{user}: keep it short"


def stack(root, rubric, alarms=None):
    tokenizer = load_tokenizer("tiny-random")
    policy = MultiAdapterHFPolicy(build_tiny_random(len(tokenizer)), tokenizer, slots=4, r=4, alpha=8,
                                  target_modules=TARGETS)  # two users, the base model and the gate's candidate
    trainer = TorchTrainer(build_tiny_random(len(tokenizer)), tokenizer, TrainerConfig(
        method="grpo", advantage="raw", lr=5e-2, micro_batch_size=4,
        lora=LoraSettings(r=4, alpha=8, target_modules=TARGETS)))
    adapters = UserAdapters(policy, root / "adapters", candidate=True)
    gating = UserGating(GateSection(enabled=True, every=3, requests=1, max_tokens=4), rubric,
                        lambda user: [wish(user)], alarms, keep_versions=3)
    learner = UserAdapterTrainer(trainer, adapters, batch_size=2, output_dir=root, baseline="none", gating=gating)
    adapters.restore(trainer)
    return policy, adapters, learner


async def judged(adapters, user, n, start=0):
    """``n`` real turns of ``user`` (tokens and logprobs from their adapter), each judged +1."""
    turns = []
    for i in range(start, start + n):
        messages = [{"role": "user", "content": f"{user} asks question {i}"}]
        g = await adapters.view(user).generate(messages, None, SamplingParams(temperature=1.0, max_tokens=6, seed=i))
        turns.append(Turn(episode_id=user, turn_index=i, context=messages, action=g.message, prompt_ids=g.prompt_ids,
                          response_ids=g.response_ids, response_logprobs=g.response_logprobs,
                          policy_version=g.policy_version, info={"user": user, "sampling": {"temperature": 1.0}},
                          judge={"prm": JudgeResult(score=1.0, source="prm")}, turn_id=f"{user}-{i}"))
    return turns


async def step_each(learner, adapters, users, start=0):
    """Three judged turns of each user (the first held back by their gate, two trained), then their steps."""
    for user in users:
        for turn in await judged(adapters, user, 3, start):
            learner._held(turn) or learner._queue(turn)
    return {user: await learner.train_user(user) for user in users}


def state(policy, adapters, user):
    return policy.bank.state(adapters.slot(user))


def same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_a_worse_adapter_is_kept_back_for_its_person_only_and_a_better_one_publishes(tmp_path):
    async def run():
        rubric = ScriptedRubric({wish("alice"): (False, True), wish("bob"): (True, True)})  # alice's is worse
        policy, adapters, learner = stack(tmp_path, rubric)
        for user in ("alice", "bob"):
            adapters.slot(user)
        alice_before = state(policy, adapters, "alice")
        records = await step_each(learner, adapters, ["alice", "bob"])
        alice, bob = records["alice"], records["bob"]
        assert alice["published"] is False and alice["gate"]["reason"] == "worse" and alice["adapter_version"] == 0
        assert alice["gate"]["users"] == {"alice": [0.0, 1.0]} and alice["gate"]["held_back"] == 1
        assert bob["published"] is True and bob["gate"]["users"] == {"bob": [1.0, 1.0]} and bob["adapter_version"] == 1
        assert same(alice_before, state(policy, adapters, "alice"))  # alice keeps the adapter that served her
        assert any(torch.count_nonzero(v) for k, v in state(policy, adapters, "bob").items() if "lora_B" in k)
        assert adapters.version("alice") == 0 and adapters.version("bob") == 1
        assert policy.adapter_versions[adapters.candidate_slot] == 2  # both candidates were decoded on the spare slot
        assert sorted(adapters.slots.values()) == [1, 2] and adapters.candidate_slot == 3
        status = learner.status()
        assert status["per_user"] and not status["paused"] and status["version"] is None
        assert [v["version"] for v in status["users"]["alice"]["versions"]] == [0]
        assert status["users"]["alice"]["refusals"] == 1 and status["users"]["alice"]["last"]["published"] is False
        assert [v["version"] for v in learner.status("bob")["versions"]] == [1, 0]

        rubric.met[wish("alice")] = (True, False)  # alice's next step meets her wish and the serving adapter does not
        again = await step_each(learner, adapters, ["alice"], start=3)
        assert again["alice"]["published"] and again["alice"]["adapter_version"] == 1
        assert not same(alice_before, state(policy, adapters, "alice"))
        assert [v["version"] for v in learner.status("alice")["versions"]] == [1, 0]
        steps = list(read_jsonl(tmp_path / "train_steps.jsonl"))
        assert [(r["user"], r["published"]) for r in steps] == [("alice", False), ("bob", True), ("alice", True)]
        await learner.close()
        await policy.close()

    asyncio.run(run())


def test_an_alarm_pauses_one_persons_training_and_not_anothers_and_the_pause_survives_a_restart(tmp_path):
    async def run():
        rubric = ScriptedRubric({wish("alice"): (False, True), wish("bob"): (True, True)})
        policy, adapters, learner = stack(tmp_path, rubric, AlarmSection(max_refusals=0, max_repetition=None,
                                                                         max_similarity=None, min_length_ratio=None,
                                                                         max_length_ratio=None))
        records = await step_each(learner, adapters, ["alice", "bob"])
        assert records["alice"]["alarms"][0]["signal"] == "refusals" and not records["bob"]["alarms"]
        assert learner.publisher("alice").paused and not learner.publisher("bob").paused
        status = learner.status()
        assert status["paused"] and status["reason"].startswith("alice: the publish gate refused")
        assert status["users"]["bob"]["paused"] is False
        for turn in await judged(adapters, "alice", 3, start=3) + await judged(adapters, "bob", 3, start=3):
            learner.add(turn)  # alice's are not kept while she is paused; bob's train on
        assert learner.refused["training_paused"] == 3 and learner.pending["alice"] == []
        assert len(learner.pending["bob"]) == 3
        await learner.stop()
        await learner.close()
        await policy.close()

        policy2, _, learner2 = stack(tmp_path, rubric)  # a restart reads alice's pause back, and only hers
        assert learner2.status("alice")["paused"] and not learner2.status("bob")["paused"]
        resumed = learner2.resume("alice")
        assert resumed["paused"] is False and resumed["user"] == "alice"
        with pytest.raises(UnknownVersion):
            await learner2.rollback(7, "alice")
        await learner2.close()
        await policy2.close()

    asyncio.run(run())


def serve_per_user(tmp_path, **serve):
    config = config_file(tmp_path, trainer=TRAINER, max_users=4,
                         serve_base={"adapters": "per_user", "users": KEYS, "admin_key": ADMIN}, **serve)
    serving = build_serving(load_config(config, serving=True))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    return serving


def call(client, method, path, key, **kw):
    return client.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kw)


def test_each_person_rolls_back_their_own_adapter_over_http_and_the_choice_survives_a_restart(tmp_path):
    serving = serve_per_user(tmp_path, keep_versions=3)
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=60) as client:
        conversation(client, "k-alice", "a1", ["thanks!", "no, shorter"])
        wait_for(lambda: serving.trainer.steps["alice"] == 1 and not serving.trainer.busy, timeout=60.0)
        alice_v1 = serving.policy.bank.state(serving.adapters.slot("alice"))
        conversation(client, "k-alice", "a2", ["thanks!", "no, shorter"])
        conversation(client, "k-bob", "b1", ["thanks!", "no, shorter"])
        wait_for(lambda: serving.trainer.steps["alice"] == 2 and serving.trainer.steps["bob"] == 1
                 and not serving.trainer.busy, timeout=60.0)

        mine = call(client, "GET", "/v1/training", "k-alice").json()
        assert mine["user"] == "alice" and [v["version"] for v in mine["versions"]] == [2, 1, 0]
        assert call(client, "GET", "/v1/training?user=bob", "k-alice").status_code == 403
        assert call(client, "GET", "/v1/training", "k-mallory").status_code == 401
        denied = call(client, "POST", "/v1/rollback", "k-alice", json={"version": 0, "user": "bob"})
        assert denied.status_code == 403
        assert denied.json()["error"]["message"].startswith("the adapter of user 'bob' is not yours")
        assert "admin key" in denied.json()["error"]["message"]
        assert call(client, "POST", "/v1/training/resume", "k-alice", json={"user": "bob"}).status_code == 403
        missing = call(client, "POST", "/v1/rollback", "k-alice", json={"version": 9})
        assert missing.status_code == 404 and "kept: [2, 1, 0]" in missing.json()["error"]["message"]

        rolled = call(client, "POST", "/v1/rollback", "k-alice", json={"version": 1}).json()
        assert rolled["version"] == 3 and rolled["versions"][0]["source"] == "rollback to v1"
        assert serving.adapters.version("alice") == 3 and serving.adapters.version("bob") == 1
        assert all(torch.equal(alice_v1[k], v)
                   for k, v in serving.policy.bank.state(serving.adapters.slot("alice")).items())
        assert call(client, "POST", "/v1/rollback", ADMIN, json={"version": 0}).status_code == 400  # whose?
        bob = call(client, "POST", "/v1/rollback", ADMIN, json={"version": 0, "user": "bob"}).json()
        assert bob["user"] == "bob" and bob["version"] == 2 and bob["versions"][0]["source"] == "rollback to v0"
        assert all(torch.count_nonzero(v) == 0 for k, v in serving.policy.bank.state(
            serving.adapters.slot("bob")).items() if "lora_B" in k)  # bob's initial adapter: the base model
        everyone = call(client, "GET", "/v1/training", ADMIN).json()
        assert {u: s["version"] for u, s in everyone["users"].items()} == {"alice": 3, "bob": 2}
        assert call(client, "GET", "/health", "k-alice").json()["training"]["paused"] is False
    serving.gateway.log.close()

    again = serve_per_user(tmp_path, keep_versions=3)  # a new process on the same run directory
    assert again.adapters.version("alice") == 3 and again.adapters.version("bob") == 2
    assert all(torch.equal(alice_v1[k], v) for k, v in again.policy.bank.state(again.adapters.slot("alice")).items())
    assert [v["version"] for v in again.trainer.status("alice")["versions"]] == [3, 2, 1]  # keep_versions: 3
    again.gateway.log.close()


def test_the_served_gate_judges_a_persons_step_on_their_held_back_request_with_the_base_model(tmp_path):
    serving = serve_per_user(tmp_path, gate={"enabled": True, "every": 3, "requests": 1, "max_tokens": 4})
    assert serving.adapters.candidate_slot == 5 and serving.policy.bank.slots == 6  # 4 users, base, candidate
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=60) as client:
        conversation(client, "k-alice", "a1", ["no, shorter", "thanks!", "no, shorter"])  # held back, then 2 trained
        wait_for(lambda: serving.trainer.steps["alice"] == 1 and not serving.trainer.busy, timeout=90.0)
        status = call(client, "GET", "/v1/training", "k-alice").json()
        verdict = status["last"]["gate"]
        assert status["gate"] and verdict["held_back"] == 1 and verdict["reason"] in ("not_worse", "worse")
        assert verdict["scored"] == 1 and serving.trainer.gating.rubric.stats["forward_prompts"] >= 1  # read the model
        assert status["last"]["published"] == (serving.adapters.version("alice") == 1)
        assert serving.trainer.gating.rubric.policy.name == "base"  # the trainer's copy, its adapter off
        assert serving.trainer.trainer.model.training  # scoring left the trainer as it was
        assert serving.adapters.version("bob") == 0
    serving.gateway.log.close()


def test_the_gates_judge_reads_the_base_model_on_the_trainers_copy_whatever_its_adapter_holds():
    from types import SimpleNamespace

    from clawgym.inference.scoring import grouped_label_margins, label_margins
    from clawgym.personal.user_adapters import TrainerBase

    tokenizer = load_tokenizer("tiny-random")
    trainer = TorchTrainer(build_tiny_random(len(tokenizer)), tokenizer, TrainerConfig(
        method="grpo", advantage="raw", lr=5e-1, micro_batch_size=4, gradient_checkpointing=True,
        lora=LoraSettings(r=4, alpha=8, target_modules=TARGETS)))
    trainer.train_step(samples())  # the adapter is no longer the identity
    prompts = [[{"role": "user", "content": f"Is reply {i} short? Answer Yes or No."}] for i in range(3)]
    base = SimpleNamespace(model=build_tiny_random(len(tokenizer)), tokenizer=tokenizer)
    scorer = TrainerBase(trainer)
    assert label_margins(scorer, prompts) == pytest.approx(label_margins(base, prompts), abs=1e-5)
    assert grouped_label_margins(scorer, [prompts]) == [pytest.approx(grouped_label_margins(base, [prompts])[0],
                                                                      abs=1e-5)]
    with torch.no_grad():
        adapted = label_margins(SimpleNamespace(model=trainer.model, tokenizer=tokenizer), prompts)
    assert adapted != pytest.approx(label_margins(base, prompts), abs=1e-5)  # the adapter does change them
    assert trainer.model.training  # scoring left the trainer in train mode


def test_serve_check_says_per_user_adapters_are_gated_per_user(capsys):
    from clawgym.cli import main

    assert main(["serve", "--config", "chat", "--check", "--set", "serve.adapters=per_user",
                 "--set", "serve.hindsight_k=0", "--set", "judge.model=qwen2.5-coder-0.5b"]) == 0
    assert "publish gate on per user" in capsys.readouterr().out


def test_prob_judges_with_per_user_adapters_need_a_judge_model_of_their_own(tmp_path):
    """The served base model is shared by every user's adapter, so the prob judges cannot read it directly: the
    config says so at load time, and with a judge model of its own they judge."""
    import asyncio

    import yaml

    from clawgym.rl.launch import ConfigError, load_config
    from clawgym.rl.types import Turn
    from clawgym.serve.main import build_serving

    data = {"method": "grpo", "env": {"id": "clawgym/OpenClawChat-v0"},
            "policy": {"backend": "hf", "model": "tiny-random", "device": "cpu"},
            "judge": {"type": "prob"}, "trainer": {"lr": 1e-3, "micro_batch_size": 2, "lora": {"enabled": True}},
            "loop": {"output_dir": str(tmp_path / "run")},
            "serve": {"api_key": "k", "batch_size": 2, "max_tokens": 8, "adapters": "per_user"}}
    path = tmp_path / "per_user.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="judge a model of its own"):
        load_config(path, serving=True)
    serving = build_serving(load_config(path, ["judge.model=tiny-random"], serving=True))
    turn = Turn(episode_id="s", turn_index=0, context=[{"role": "user", "content": "hi"}],
                action={"role": "assistant", "content": "x"},
                next_state=[{"role": "user", "content": "hmm, tell me about the weather"}],
                prompt_ids=[1], response_ids=[2], response_logprobs=[-1.0])
    (judge,) = serving.gateway.judge_stage.judges
    assert asyncio.run(judge.judge(turn)).source == "prob"


def test_the_dashboard_draws_one_training_panel_per_person_and_its_buttons_act_on_that_persons_adapter(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    serving = serve_per_user(tmp_path, keep_versions=3)
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=60) as client, \
            playwright.sync_playwright() as p:
        conversation(client, "k-alice", "a1", ["thanks!", "no, shorter"])
        conversation(client, "k-bob", "b1", ["thanks!", "no, shorter"])
        wait_for(lambda: serving.trainer.steps["alice"] == 1 and serving.trainer.steps["bob"] == 1
                 and not serving.trainer.busy, timeout=60.0)
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{url}/dashboard?key={ADMIN}")
            page.wait_for_selector("[data-training='alice'] h2:has-text('serving version 1')", timeout=15000)
            assert "bob's adapter: serving version 1" in page.inner_text("[data-training='bob'] h2")
            assert "last step published" in page.inner_text("[data-training='alice'] [data-gate]")
            page.click("[data-training='bob'] [data-version='0'] button")  # bob's initial adapter, from his panel
            page.wait_for_selector("[data-training='bob'] h2:has-text('serving version 2')", timeout=30000)
            assert "rollback to v0" in page.inner_text("[data-training='bob'] [data-version='2']")
            assert serving.adapters.version("bob") == 2 and serving.adapters.version("alice") == 1  # alice untouched
            assert "serving version 1" in page.inner_text("[data-training='alice'] h2")
        finally:
            browser.close()
    serving.gateway.log.close()
