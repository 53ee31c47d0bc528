"""One base model, many LoRA adapters served in one batch (per-user adapters)."""

from __future__ import annotations

import asyncio

import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.inference.multi_adapter import MultiAdapterHFPolicy
from clawgym.inference.multi_lora import AdapterBank
from clawgym.inference.testing import random_lora_state

TARGETS = ("q_proj", "v_proj", "down_proj")
PROMPTS = [[{"role": "user", "content": f"Tell me about item {i}."}] for i in range(3)]
GREEDY = SamplingParams(temperature=0.0, max_tokens=12)
TOKENIZER_SIZE = len(load_tokenizer("tiny-random"))


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def random_adapter(seed: int, r: int = 4) -> dict[str, torch.Tensor]:
    """A peft-style LoRA state dict with non-zero A and B (a trained adapter's shape)."""
    return random_lora_state(build_tiny_random(TOKENIZER_SIZE), TARGETS, seed=seed, r=r, scale=0.5)


def merged(tokenizer, adapter, r: int = 4, alpha: float = 8):
    """The base model with one adapter merged into its weights: what that user's model should compute."""
    model = build_tiny_random(len(tokenizer))
    with torch.no_grad():
        for name, module in model.named_modules():
            key = f"base_model.model.{name}.lora_A.default.weight"
            if key in adapter:
                module.weight += (alpha / r) * adapter[key.replace("lora_A", "lora_B")] @ adapter[key]
    return model


def policy(tokenizer, slots: int = 4) -> MultiAdapterHFPolicy:
    return MultiAdapterHFPolicy(build_tiny_random(len(tokenizer)), tokenizer, slots=slots, r=4,
                                alpha=8, target_modules=TARGETS)


async def answers(pol, prompts):
    return [g.response_ids for g in await asyncio.gather(*(pol.generate(p, None, GREEDY) for p in prompts))]


def test_mixed_adapter_batch_equals_each_users_merged_model(tokenizer):
    from clawgym.inference.hf import HFPolicy

    served = policy(tokenizer)
    alice, bob = random_adapter(1), random_adapter(2)
    served.load_adapter(1, alice)
    served.load_adapter(2, bob)

    async def run():
        # alice, bob and the base model in one continuous batch
        mixed = await asyncio.gather(*(view.generate(p, None, GREEDY)
                                       for view in (served.adapter(1), served.adapter(2), served.adapter(0))
                                      for p in PROMPTS))
        refs = []
        for model in (merged(tokenizer, alice), merged(tokenizer, bob), build_tiny_random(len(tokenizer))):
            ref = HFPolicy(model, tokenizer)
            refs += await answers(ref, PROMPTS)
            await ref.close()
        await served.close()
        return [g.response_ids for g in mixed], refs, mixed

    mixed, refs, generations = asyncio.run(run())
    assert mixed == refs
    assert served.stats["max_batch_rows"] >= 2  # the adapters really shared decoding steps
    assert [g.metadata["adapter_slot"] for g in generations[:3]] == [1, 1, 1]
    assert len({tuple(m) for m in mixed[:3]} | {tuple(m) for m in mixed[6:]}) > 3  # adapters change the answers


def test_loading_one_users_adapter_never_touches_another_bitwise(tokenizer):
    served = policy(tokenizer)
    served.load_adapter(2, random_adapter(2))
    bank: AdapterBank = served.bank
    before = {k: v.clone() for k, v in bank.state(2).items()}
    base_before = {k: v.clone() for k, v in served.model.state_dict().items() if "lora_" not in k}
    assert served.load_adapter(1, random_adapter(7)) == 1
    served.clear_adapter(3)
    after = bank.state(2)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(torch.equal(v, served.model.state_dict()[k]) for k, v in base_before.items())
    assert served.adapter(2).version == 1 and served.adapter(1).version == 1 and served.adapter(3).version == 0


def test_bad_adapters_and_slots_are_refused(tokenizer):
    served = policy(tokenizer, slots=3)
    good = random_adapter(1)
    with pytest.raises(ValueError, match="0 is the base model"):
        served.load_adapter(0, good)
    with pytest.raises(ValueError, match="slot must be in 0..2"):
        served.adapter(3)
    with pytest.raises(ValueError, match="missing"):
        served.load_adapter(1, dict(list(good.items())[:2]))
    with pytest.raises(ValueError, match="do not fit the bank"):
        served.load_adapter(1, random_adapter(1, r=8))
    assert all(torch.count_nonzero(v) == 0 for v in served.bank.state(1).values())  # nothing half-loaded
