"""Per-user adapters: a user's turns train only their adapter; adapters survive a restart; forgetting."""

from __future__ import annotations

import asyncio
import logging

import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.inference.multi_adapter import MultiAdapterHFPolicy
from clawgym.personal.user_adapters import UserAdapters, UserAdapterTrainer
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.types import JudgeResult, Turn

TARGETS = ("q_proj", "v_proj")
R, ALPHA = 4, 8


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def stack(tokenizer, root, batch_size=2):
    policy = MultiAdapterHFPolicy(build_tiny_random(len(tokenizer)), tokenizer, slots=4, r=R,
                                  alpha=ALPHA, target_modules=TARGETS)
    trainer = TorchTrainer(build_tiny_random(len(tokenizer)), tokenizer, TrainerConfig(
        method="grpo", advantage="raw", lr=5e-2, micro_batch_size=4,
        lora=LoraSettings(r=R, alpha=ALPHA, target_modules=TARGETS)))
    adapters = UserAdapters(policy, root / "adapters")
    # A = r (no batch baseline): these tests are about whose adapter a step touches, with one-turn batches
    return policy, adapters, UserAdapterTrainer(trainer, adapters, batch_size=batch_size,
                                                output_dir=root, baseline="none")


async def judged_turns(adapters, user, n, verdict=1.0):
    """Real turns of ``user`` (tokens and logprobs from their own adapter), judged with ``verdict``."""
    turns = []
    for i in range(n):
        messages = [{"role": "user", "content": f"{user} asks question {i}"}]
        g = await adapters.view(user).generate(messages, None, SamplingParams(temperature=1.0, max_tokens=6, seed=i))
        turns.append(Turn(episode_id=user, turn_index=i, context=messages, action=g.message, prompt_ids=g.prompt_ids,
                          response_ids=g.response_ids, response_logprobs=g.response_logprobs,
                          policy_version=g.policy_version, info={"user": user},
                          judge={"prm": JudgeResult(score=verdict, source="prm")}))
    return turns


def test_a_users_turns_train_only_their_adapter_and_survive_a_restart(tokenizer, tmp_path, caplog):
    async def first_life():
        policy, adapters, trainer = stack(tokenizer, tmp_path)
        alice_turns = await judged_turns(adapters, "alice", 2)
        await judged_turns(adapters, "bob", 1)  # bob has a slot, but too few turns to train
        bob_before = policy.bank.state(adapters.slot("bob"))
        base_before = {k: v.clone() for k, v in policy.model.state_dict().items()}
        for turn in alice_turns:
            trainer._queue(turn)
        record = await trainer.train_user("alice")
        alice_after = policy.bank.state(adapters.slot("alice"))
        await policy.close()
        return record, bob_before, base_before, alice_after, policy, adapters

    record, bob_before, base_before, alice_after, policy, adapters = asyncio.run(first_life())
    assert record["user"] == "alice" and record["samples"] == 2 and record["adapter_version"] == 1
    assert any(torch.count_nonzero(v) for k, v in alice_after.items() if "lora_B" in k)  # alice learned
    bob_now = policy.bank.state(adapters.slot("bob"))
    assert all(torch.equal(bob_before[k], bob_now[k]) for k in bob_before)  # bob untouched, bitwise
    assert all(torch.equal(v, policy.model.state_dict()[k]) for k, v in base_before.items())  # base untouched
    assert policy.adapter(adapters.slot("alice")).version == 1 and policy.adapter(adapters.slot("bob")).version == 0

    # a restart: alice's adapter comes back bitwise; a corrupt checkpoint sends only its owner to base
    (tmp_path / "adapters" / "bob" / "checkpoint").mkdir(parents=True)
    (tmp_path / "adapters" / "bob" / "checkpoint" / "trainable.safetensors").write_bytes(b"not a tensor file")
    policy2, adapters2, trainer2 = stack(tokenizer, tmp_path)
    with caplog.at_level(logging.WARNING):
        outcomes = adapters2.restore(trainer2.trainer)
    assert outcomes["alice"] == "restored v1" and outcomes["bob"].startswith("base (corrupt checkpoint")
    assert "user bob: adapter checkpoint" in caplog.text
    restored = policy2.bank.state(adapters2.slot("alice"))
    assert all(torch.equal(alice_after[k], restored[k]) for k in alice_after)
    assert all(torch.count_nonzero(v) == 0 for v in policy2.bank.state(adapters2.slot("bob")).values())
    assert policy2.adapter(adapters2.slot("alice")).version == 1


def test_round_robin_and_forgetting(tokenizer, tmp_path):
    async def run():
        policy, adapters, trainer = stack(tokenizer, tmp_path, batch_size=1)
        chatty = await judged_turns(adapters, "chatty", 3)
        quiet = await judged_turns(adapters, "quiet", 1)
        for turn in chatty + quiet:
            trainer._queue(turn)
        order = []
        while trainer._turn_order:  # what the background loop does, step by step
            user = trainer._turn_order.popleft()
            order.append((await trainer.train_user(user))["user"])
            if len(trainer.pending.get(user, [])) >= trainer.batch_size:
                trainer._turn_order.append(user)
        assert order[:2] == ["chatty", "quiet"]  # the quiet user's turn comes before chatty's second step
        assert order.count("chatty") == 3
        slot = adapters.slot("chatty")
        trainer._queue((await judged_turns(adapters, "chatty", 1))[0])
        assert adapters.forget("chatty") and trainer.forget("chatty") == 1
        assert not (tmp_path / "adapters" / "chatty").exists() and "chatty" not in adapters.slots
        assert all(torch.count_nonzero(v) == 0 for v in policy.bank.state(slot).values())
        assert not adapters.forget("chatty")  # already gone
        with pytest.raises(ValueError, match="invalid user id"):
            adapters.slot("../etc")
        await policy.close()

    asyncio.run(run())
