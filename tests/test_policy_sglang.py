"""SGLang backend: request/response mapping against a server that follows SGLang 0.5.23's HTTP API.

The server (:mod:`tests.sglang_fake`, whose docstring lists the endpoints and their request/response
shapes as in SGLang 0.5.23's ``io_struct.py``) is the *other side* of the wire, not the code under test,
so SGLangPolicy's mapping code runs for real over HTTP. A real SGLang server needs a GPU; that test
skips with the reason.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from clawgym.core.policy import SamplingParams
from clawgym.inference.chat_template import encode_prompt
from clawgym.inference.models import load_tokenizer, smollm2_checkpoint_dir
from clawgym.inference.server import BackgroundServer
from clawgym.inference.sglang import SGLangError, SGLangPolicy, sglang_unavailable_reason
from tests.sglang_fake import TOOL_TEXT, fake_sglang


@pytest.fixture(scope="module")
def sglang_fake():
    tokenizer = load_tokenizer("tiny-random")
    app, seen = fake_sglang(tokenizer)
    with BackgroundServer(app) as url:
        yield url, tokenizer, seen


def run_with_policy(url, tokenizer, work):
    async def main():
        policy = SGLangPolicy("tiny-random", base_url=url, tokenizer=tokenizer)
        try:
            return await work(policy)
        finally:
            await policy.close()

    return asyncio.run(main())


def test_generate_sends_input_ids_and_maps_tokens_and_logprobs(sglang_fake):
    url, tokenizer, seen = sglang_fake
    messages = [{"role": "user", "content": "add one"}]
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]

    async def work(policy):
        return await policy.generate(messages, tools,
                                     SamplingParams(temperature=0.7, top_p=0.9, max_tokens=200, stop=["END"], seed=4))

    generation = run_with_policy(url, tokenizer, work)
    request = seen[-1]
    assert request["input_ids"] == encode_prompt(tokenizer, messages, tools)  # token in, chat template applied here
    assert request["return_logprob"] is True and request["logprob_start_len"] == -1
    assert request["sampling_params"] == {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 200,
                                          "stop": ["END"], "sampling_seed": 4}
    expected_ids = tokenizer(TOOL_TEXT, add_special_tokens=False)["input_ids"]
    assert generation.response_ids == expected_ids
    assert all(math.isclose(lp, -0.5 - i / 10) for i, lp in enumerate(generation.response_logprobs))
    assert generation.prompt_ids == request["input_ids"]
    assert generation.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in generation.tool_calls] == [("add", {"a": 1})]


def test_length_finish_abort_and_weight_updates(sglang_fake):
    url, tokenizer, seen = sglang_fake

    async def work(policy):
        short = await policy.generate_ids([5, 6, 7], SamplingParams(max_tokens=3))
        with pytest.raises(SGLangError, match="aborted"):
            await policy.generate_ids([0])
        version = await policy.update_weights("/ckpt/step-1")
        after = await policy.generate_ids([5, 6, 7], SamplingParams(max_tokens=3))
        with pytest.raises(SGLangError, match="no such checkpoint"):
            await policy.update_weights_from_disk("/missing")
        return short, version, after, policy.version

    short, version, after, final_version = run_with_policy(url, tokenizer, work)
    assert short.finish_reason == "length" and len(short.response_ids) == 3 and short.policy_version == 0
    assert version == 1 and after.policy_version == 1 and after.metadata["weight_version"] == "1"
    assert final_version == 1  # a failed update does not bump the version
    update = [body for body in seen if "model_path" in body][0]
    assert update == {"model_path": "/ckpt/step-1", "abort_all_requests": False, "weight_version": "1"}


def test_http_errors_are_reported(sglang_fake):
    url, tokenizer, _ = sglang_fake

    async def work(policy):
        return await policy._post("/no-such-endpoint", {})

    with pytest.raises(SGLangError, match="404"):
        run_with_policy(url, tokenizer, work)


@pytest.mark.skipif(sglang_unavailable_reason() is not None,
                    reason=f"real SGLang server: {sglang_unavailable_reason()}")
def test_real_sglang_server_round_trip():  # pragma: no cover - GPU machines only
    async def main():
        policy = SGLangPolicy.launch(str(smollm2_checkpoint_dir()), server_args=["--mem-fraction-static", "0.3"])
        try:
            generation = await policy.generate([{"role": "user", "content": "Say hi"}],
                                               sampling=SamplingParams(max_tokens=8))
            assert len(generation.response_ids) == len(generation.response_logprobs) > 0
        finally:
            await policy.close()

    asyncio.run(main())


def test_launch_without_sglang_or_gpu_says_why():
    reason = sglang_unavailable_reason()
    if reason is None:
        pytest.skip("sglang and CUDA are available here")
    with pytest.raises(RuntimeError, match="cannot launch SGLang"):
        SGLangPolicy.launch("/nonexistent")
