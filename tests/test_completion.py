"""Judges' completions go through the serving engine, batched with what it serves, never around it."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from clawgym.core.policy import SamplingParams
from clawgym.inference.completion import completions, greedy, greedy_completion, sampled, sampled_completions
from clawgym.inference.hf import HFPolicy

PROMPT = [{"role": "user", "content": "Write a Python function that checks a reply."}]


@pytest.fixture(scope="module")
def policy():
    engine = HFPolicy.from_pretrained("tiny-random-qwen")
    yield engine
    asyncio.run(engine.close())


def test_a_greedy_completion_on_the_engine_is_the_models_own_greedy_text(policy):
    direct = greedy_completion(SimpleNamespace(model=policy.model, tokenizer=policy.tokenizer), PROMPT, 12)
    before = policy.stats["decode_passes"]
    assert greedy_completion(policy, PROMPT, 12) == direct
    assert policy.stats["decode_passes"] > before  # decoded by the engine, not by model.generate beside it


def test_sampled_drafts_are_decoded_in_one_batch_with_a_served_request(policy):
    policy.stats["max_batch_rows"] = 0
    drafts: list[str] = []
    worker = threading.Thread(target=lambda: drafts.extend(sampled_completions(policy, PROMPT, 3, 48)))
    worker.start()

    async def serve_one() -> str:
        await asyncio.sleep(0.05)
        return (await policy.generate(PROMPT, sampling=SamplingParams(temperature=0.0, max_tokens=4))).text

    served = asyncio.run(serve_one())
    worker.join(timeout=120)
    assert isinstance(served, str) and len(drafts) == 3 and all(isinstance(d, str) for d in drafts)
    assert policy.stats["max_batch_rows"] >= 3  # the three drafts shared decoding steps (and with the reply)
    assert sampled_completions(policy, PROMPT, 0, 8) == []


def test_mixed_jobs_decode_in_one_batch_on_the_engine_and_in_order_directly(policy):
    other = [{"role": "user", "content": "Reply to a request for a recipe."}]
    jobs = [(PROMPT, greedy(10))] + [(other, sampled(10))] * 2 + [(PROMPT, sampled(6))]
    policy.stats["max_batch_rows"] = 0
    texts = completions(policy, jobs)
    assert len(texts) == 4 and policy.stats["max_batch_rows"] >= 4  # four prompts, one batch
    direct = SimpleNamespace(model=policy.model, tokenizer=policy.tokenizer)
    texts = completions(direct, jobs)  # runs of one prompt and sampling are one generate each, in order
    assert len(texts) == 4 and texts[0] == greedy_completion(direct, PROMPT, 10)
    assert completions(policy, []) == []
