"""The in-process HF policy: batching, exact logprobs, seeds, hot weight swaps, tool calls, streaming."""

from __future__ import annotations

import asyncio

import pytest
import torch

from clawgym.core.policy import Generation, Policy, SamplingParams
from clawgym.inference.chat_template import encode_prompt, fallback_messages, render_prompt, supports_tools
from clawgym.inference.hf import HFPolicy, _draw
from clawgym.inference.models import build_tiny_random, load_model, load_tokenizer
from clawgym.inference.streaming import TextDelta
from clawgym.inference.testing import teach

torch.set_num_threads(1)  # a 2-layer model gains nothing from threads; on a shared CPU they thrash

TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add two numbers",
          "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]
TOOL_ANSWER = 'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
HELLO = [{"role": "user", "content": "hello there"}]
LONGER = [{"role": "system", "content": "You answer briefly. " * 6}, {"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random")


def reference_logprobs(model, prompt_ids: list[int], response_ids: list[int], temperature: float = 1.0) -> list[float]:
    """log_softmax of one separate full forward pass over prompt + response (logits / temperature)."""
    ids = torch.tensor([prompt_ids + response_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].float() / temperature, dim=-1)
    start = len(prompt_ids) - 1
    return [float(logprobs[start + i, token]) for i, token in enumerate(response_ids)]


def test_tiny_random_is_deterministic_and_uses_smollm2_tokenizer(tiny):
    model, tokenizer = tiny
    assert len(tokenizer) == 49152 and model.config.vocab_size == 49152
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 64
    again = build_tiny_random(len(tokenizer))
    other = build_tiny_random(len(tokenizer), seed=1)
    for (name, a), b, c in zip(model.state_dict().items(), again.state_dict().values(), other.state_dict().values()):
        assert torch.equal(a, b), name
    assert not torch.equal(model.model.layers[0].self_attn.q_proj.weight, other.model.layers[0].self_attn.q_proj.weight)


def test_unknown_model_name_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="tiny-random"):
        load_tokenizer("no-such-model")


def test_chat_template_fallback_renders_tools_calls_and_results():
    tokenizer = load_tokenizer("tiny-random")
    assert not supports_tools(tokenizer)  # SmolLM2's own template drops tools
    messages = [
        {"role": "user", "content": "add 2 and 3"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {"role": "tool", "tool_call_id": "c2", "content": "again 5"},
    ]
    plain = fallback_messages(messages, TOOLS)
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "user"]
    assert '"name": "add"' in plain[0]["content"] and "<tools>" in plain[0]["content"]
    assert plain[2]["content"] == '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    assert plain[3]["content"].count("<tool_response>") == 2
    text = render_prompt(tokenizer, messages, TOOLS)
    assert text.endswith("<|im_start|>assistant\n") and "Add two numbers" in text
    assert "SmolLM" not in text  # our system prompt replaced the template's default one
    ids = encode_prompt(tokenizer, messages, TOOLS)
    assert tokenizer.decode(ids) == text


def test_policy_protocol_and_validation(tiny):
    policy = HFPolicy(*tiny)
    assert isinstance(policy, Policy) and policy.version == 0

    async def run():
        with pytest.raises(ValueError, match="max_tokens"):
            await policy.generate(HELLO, sampling=SamplingParams(max_tokens=0))
        with pytest.raises(ValueError, match="top_p"):
            await policy.generate(HELLO, sampling=SamplingParams(top_p=0.0))
        with pytest.raises(ValueError, match="context"):
            await policy.generate_ids(list(range(5000)))
        await policy.close()

    asyncio.run(run())


def test_concurrent_requests_are_batched_and_logprobs_match_a_forward_pass(tiny):
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer)
    n, max_tokens = 8, 12

    async def run():
        # 8 concurrent requests, different prompt lengths (so the cache merge must left-pad)
        batched = await asyncio.gather(*[
            policy.generate(HELLO if i % 2 else LONGER, sampling=SamplingParams(max_tokens=max_tokens, seed=i))
            for i in range(n)
        ])
        batched_passes = policy.stats["forward_passes"]
        sequential_policy = HFPolicy(model, tokenizer)
        for i in range(n):
            await sequential_policy.generate(HELLO if i % 2 else LONGER,
                                             sampling=SamplingParams(max_tokens=max_tokens, seed=i))
        sequential_passes = sequential_policy.stats["forward_passes"]
        await policy.close()
        await sequential_policy.close()
        return (batched, batched_passes, sequential_passes, policy.stats["max_batch_rows"],
                policy.stats["prefill_passes"])

    generations, batched_passes, sequential_passes, max_rows, prefills = asyncio.run(run())
    assert prefills <= 4  # equal-length prompts (4 + 4 here) are prefilled together
    assert sequential_passes == n * max_tokens  # one prefill + (max_tokens - 1) decode steps each
    assert batched_passes <= 4 + max_tokens + 2  # a few grouped prefills + shared decode steps
    assert batched_passes < sequential_passes / 2
    assert max_rows == n
    worst = 0.0
    for i, generation in enumerate(generations):
        assert isinstance(generation, Generation)
        assert len(generation.response_ids) == len(generation.response_logprobs) == max_tokens
        assert generation.finish_reason == "length"
        assert generation.prompt_ids == encode_prompt(tokenizer, HELLO if i % 2 else LONGER)
        reference = reference_logprobs(model, generation.prompt_ids, generation.response_ids)
        worst = max(worst, max(abs(a - b) for a, b in zip(reference, generation.response_logprobs)))
    assert worst < 1e-4, worst


def test_logprobs_are_those_of_the_sampling_temperature_and_greedy_ones_at_one(tiny):
    """What the trainer needs to train at the rollout's temperature (SGLang returns the same)."""
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer)

    async def run():
        cool = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=8, seed=1, temperature=0.5))
        greedy = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=8, temperature=0))
        await policy.close()
        return cool, greedy

    cool, greedy = asyncio.run(run())
    at_half = reference_logprobs(model, cool.prompt_ids, cool.response_ids, temperature=0.5)
    at_one = reference_logprobs(model, cool.prompt_ids, cool.response_ids)
    assert max(abs(a - b) for a, b in zip(at_half, cool.response_logprobs)) < 1e-4
    assert max(abs(a - b) for a, b in zip(at_one, cool.response_logprobs)) > 1e-2  # not the temperature-1 ones
    plain = reference_logprobs(model, greedy.prompt_ids, greedy.response_ids)
    assert max(abs(a - b) for a, b in zip(plain, greedy.response_logprobs)) < 1e-4


def test_seeded_sampling_is_reproducible_and_temperature_zero_is_greedy(tiny):
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer)

    async def run():
        a = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=10, seed=7))
        b = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=10, seed=7))
        c = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=10, seed=8))
        greedy = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=10, temperature=0))
        await policy.close()
        return a, b, c, greedy

    a, b, c, greedy = asyncio.run(run())
    assert a.response_ids == b.response_ids and a.response_logprobs == b.response_logprobs
    assert a.response_ids != c.response_ids
    # greedy: every token is the argmax of a separate forward pass
    ids = greedy.prompt_ids + greedy.response_ids
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    start = len(greedy.prompt_ids) - 1
    assert [int(logits[start + i].argmax()) for i in range(10)] == greedy.response_ids


def test_draw_samples_the_distribution_and_never_a_zero_probability_token():
    probs = torch.tensor([0.5, 0.0, 0.2, 0.3, 0.0])
    generator = torch.Generator().manual_seed(0)
    counts = torch.zeros(5)
    for _ in range(20000):
        counts[_draw(probs, generator)] += 1
    assert counts[1] == 0 and counts[4] == 0
    # 20k draws: the standard error of each frequency is below 0.004, so 0.015 is > 3.5 sigma
    assert torch.allclose(counts / counts.sum(), probs, atol=0.015)
    # the same generator state gives the same token; an unnormalised row (top-p filtered) is fine too
    a, b = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert [_draw(probs * 7, a) for _ in range(50)] == [_draw(probs, b) for _ in range(50)]


def test_load_weights_mid_flight_bumps_version_and_drops_nothing(tiny):
    model, tokenizer = tiny
    model = build_tiny_random(len(tokenizer))  # a private copy: this test changes its weights
    policy = HFPolicy(model, tokenizer)
    new_weights = build_tiny_random(len(tokenizer), seed=5).state_dict()

    async def run():
        tasks = [
            asyncio.create_task(policy.generate(HELLO, sampling=SamplingParams(max_tokens=40, seed=i)))
            for i in range(6)]
        while policy.stats["decode_passes"] < 5:  # wait until they are decoding
            await asyncio.sleep(0.005)
        version = await policy.update_weights(new_weights)
        results = await asyncio.gather(*tasks)
        after = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=5, seed=0))
        await policy.close()
        return version, results, after

    version, results, after = asyncio.run(run())
    assert version == 1 and policy.version == 1
    assert all(len(r.response_ids) == 40 for r in results)  # nothing failed, nothing cut short
    for r in results:  # started on version 0, finished on version 1
        assert r.policy_version == 0 and r.metadata["policy_version_last"] == 1
    assert after.policy_version == 1
    assert torch.equal(model.model.layers[0].mlp.up_proj.weight, new_weights["model.layers.0.mlp.up_proj.weight"])
    # the new version's logprobs are the new model's
    reference = reference_logprobs(model, after.prompt_ids, after.response_ids)
    assert max(abs(a - b) for a, b in zip(reference, after.response_logprobs)) < 1e-4


def test_load_weights_with_wrong_keys_fails_loudly_and_keeps_version(tiny):
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer)
    with pytest.raises(RuntimeError, match="Missing key"):
        policy.load_weights({"not.a.weight": torch.zeros(1)})
    assert policy.version == 0


@pytest.fixture(scope="module")
def taught():
    """tiny-random taught to answer with a tool call (real generated tokens, greedy)."""
    model, tokenizer = load_model("tiny-random")
    prompts = [[{"role": "user", "content": "What is 2 + 3?"}], [{"role": "user", "content": "add 2 and 3"}]]
    loss = teach(model, tokenizer, prompts, TOOL_ANSWER, tools=TOOLS, steps=100)
    assert loss < 0.05
    return model, tokenizer


def test_generated_tool_call_is_parsed(taught):
    policy = HFPolicy(*taught)

    async def run():
        generation = await policy.generate([{"role": "user", "content": "What is 2 + 3?"}], TOOLS,
                                           SamplingParams(temperature=0, max_tokens=64))
        await policy.close()
        return generation

    generation = asyncio.run(run())
    assert generation.text == TOOL_ANSWER
    assert generation.finish_reason == "tool_calls"
    assert [(c.name, c.arguments, c.error) for c in generation.tool_calls] == [("add", {"a": 2, "b": 3}, None)]
    assert generation.message["content"] == "Let me add."
    assert generation.message["tool_calls"][0]["function"]["name"] == "add"
    assert generation.response_ids[-1] == taught[1].convert_tokens_to_ids("<|im_end|>")


def test_stream_yields_tokens_as_they_are_sampled(taught):
    policy = HFPolicy(*taught)

    async def run():
        items = []
        async for item in policy.stream([{"role": "user", "content": "add 2 and 3"}], TOOLS,
                                        SamplingParams(temperature=0, max_tokens=64)):
            items.append(item)
        await policy.close()
        return items

    items = asyncio.run(run())
    deltas, final = items[:-1], items[-1]
    assert isinstance(final, Generation) and all(isinstance(d, TextDelta) for d in deltas)
    assert len(deltas) == len(final.response_ids)  # one delta per sampled token
    assert "".join(d.text for d in deltas) == final.text == TOOL_ANSWER
    assert [t for d in deltas for t in d.token_ids] == final.response_ids
    assert [p for d in deltas for p in d.logprobs] == final.response_logprobs


def test_stop_strings_cut_the_text_but_keep_the_sampled_tokens(taught):
    policy = HFPolicy(*taught)

    async def run():
        generation = await policy.generate([{"role": "user", "content": "What is 2 + 3?"}], TOOLS,
                                           SamplingParams(temperature=0, max_tokens=64, stop=["<tool_call>"]))
        await policy.close()
        return generation

    generation = asyncio.run(run())
    assert generation.text == "Let me add.\n" and generation.finish_reason == "stop" and not generation.tool_calls
    assert "<tool_call>" in taught[1].decode(generation.response_ids)


def test_close_fails_waiting_requests_instead_of_hanging(tiny):
    policy = HFPolicy(*tiny)

    async def run():
        task = asyncio.create_task(policy.generate(HELLO, sampling=SamplingParams(max_tokens=4000, seed=1)))
        while policy.stats["decode_passes"] < 2:
            await asyncio.sleep(0.005)
        await policy.close()
        with pytest.raises(RuntimeError, match="closed"):
            await asyncio.wait_for(task, 10)
        with pytest.raises(RuntimeError, match="closed"):
            await policy.generate(HELLO)

    asyncio.run(run())
