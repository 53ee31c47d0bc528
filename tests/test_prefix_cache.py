"""Prompt KV reuse across requests: same tokens and logprobs as a full prefill, only new tokens run."""

from __future__ import annotations

import asyncio

import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.inference.multi_adapter import MultiAdapterHFPolicy
from clawgym.inference.prefix_cache import PrefixCache, common_prefix

SYSTEM = "You are a careful assistant. " * 40  # a long, stable system prompt (as OpenClaw's is)
GREEDY = SamplingParams(temperature=0.0, max_tokens=10)


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def turn(*contents):
    messages = [{"role": "system", "content": SYSTEM}]
    for i, content in enumerate(contents):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": content})
    return messages


async def answers(policy, conversations):
    out = []
    for messages in conversations:  # one after another, as a chat client sends them
        out.append(await policy.generate(messages, None, GREEDY))
    return out


def test_a_later_turn_prefills_only_its_new_tokens_and_answers_the_same(tokenizer):
    conversations = [turn("What is 2+2?"), turn("What is 2+2?", "It is 4.", "And 3+3?"),
                     turn("Something else entirely")]

    async def run():
        cached = HFPolicy(build_tiny_random(len(tokenizer)), tokenizer, prefix_cache=PrefixCache(min_prefix=16))
        plain = HFPolicy(build_tiny_random(len(tokenizer)), tokenizer, prefix_cache=PrefixCache(min_prefix=10**9))
        a, b = await answers(cached, conversations), await answers(plain, conversations)
        stats = dict(cached.stats), dict(plain.stats)
        await cached.close()
        await plain.close()
        return a, b, stats

    with_cache, without, (stats, plain_stats) = asyncio.run(run())
    for x, y in zip(with_cache, without):
        assert x.prompt_ids == y.prompt_ids and x.response_ids == y.response_ids
        assert torch.allclose(torch.tensor(x.response_logprobs), torch.tensor(y.response_logprobs), atol=1e-4)
    reused = [g.metadata["reused_prefix_tokens"] for g in with_cache]
    assert reused[0] == 0 and reused[1] > 200 and reused[2] > 200  # turn 2, and a new chat with the same system prompt
    assert reused[1] == common_prefix(with_cache[0].prompt_ids, with_cache[1].prompt_ids)
    assert stats["prefill_tokens"] < plain_stats["prefill_tokens"] - 400


def test_new_weights_or_another_adapter_never_reuse_old_keys(tokenizer):
    async def run():
        policy = HFPolicy(build_tiny_random(len(tokenizer)), tokenizer, prefix_cache=PrefixCache(min_prefix=16))
        first = await policy.generate(turn("hello"), None, GREEDY)
        policy.load_weights(build_tiny_random(len(tokenizer), seed=5).state_dict())
        second = await policy.generate(turn("hello", "hi", "again"), None, GREEDY)
        await policy.close()

        multi = MultiAdapterHFPolicy(build_tiny_random(len(tokenizer)), tokenizer, slots=3, r=2, alpha=4,
                                     target_modules=("q_proj",), prefix_cache=PrefixCache(min_prefix=16))
        await multi.adapter(1).generate(turn("hello"), None, GREEDY)
        other = await multi.adapter(2).generate(turn("hello", "hi", "again"), None, GREEDY)
        same = await multi.adapter(1).generate(turn("hello", "hi", "again"), None, GREEDY)
        await multi.close()
        return first, second, other, same

    first, second, other, same = asyncio.run(run())
    assert second.metadata["reused_prefix_tokens"] == 0  # version 1 cannot use version 0's keys
    assert other.metadata["reused_prefix_tokens"] == 0  # adapter 2 cannot use adapter 1's keys
    assert same.metadata["reused_prefix_tokens"] > 200


def test_the_store_is_bounded_and_keeps_the_longest_prompt():
    cache = PrefixCache(max_tokens=100, min_prefix=4)
    kv = lambda n: [torch.zeros(1, 1, n, 2)]  # noqa: E731
    cache.store(list(range(40)), kv(40), kv(40), 0)
    cache.store(list(range(60)), kv(60), kv(60), 0)  # extends the first: replaces it
    assert len(cache) == 1 and cache.tokens == 60
    cache.store([9] * 50, kv(50), kv(50), 0)  # over budget: the oldest goes
    assert len(cache) == 1 and cache.tokens == 50
    entry, shared = cache.lookup([9] * 50, 0)
    assert shared == 49  # the last prompt token always runs
    assert cache.lookup([9] * 50, 1) == (None, 0)  # other weights
    assert cache.lookup([1, 2, 3], 0) == (None, 0)  # below min_prefix
