"""clawgym's OpenAI-compatible server, driven by the unchanged `openai` SDK and raw HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import load_model
from clawgym.inference.openai import OpenAIPolicy
from clawgym.inference.server import BackgroundServer, build_app
from clawgym.inference.testing import teach

torch.set_num_threads(1)

KEY = "sk-test-key"
TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add two numbers",
          "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]
TOOL_ANSWER = 'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
ASK = [{"role": "user", "content": "What is 2 + 3?"}]


@pytest.fixture(scope="module")
def random_server():
    policy = HFPolicy(*load_model("tiny-random"), name="tiny-random")
    with BackgroundServer(build_app(policy)) as url:
        yield url, policy


@pytest.fixture(scope="module")
def tool_server():
    model, tokenizer = load_model("tiny-random")
    assert teach(model, tokenizer, [ASK, [{"role": "user", "content": "add 2 and 3"}]], TOOL_ANSWER,
                 tools=TOOLS, steps=100) < 0.05
    policy = HFPolicy(model, tokenizer, name="taught")
    with BackgroundServer(build_app(policy, api_key=KEY)) as url:
        yield url, policy


def test_health_and_models(random_server):
    url, policy = random_server
    health = httpx.get(f"{url}/health").json()
    assert health == {"status": "ok", "model": "tiny-random", "policy_version": policy.version}
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    assert [m.id for m in client.models.list().data] == ["tiny-random"]


def test_non_streaming_returns_tokens_and_openai_logprobs(random_server):
    url, policy = random_server
    body = {"model": "tiny-random", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9,
            "seed": 3, "logprobs": True, "return_tokens": True}
    data = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60).json()
    extension = data["clawgym"]
    assert data["object"] == "chat.completion" and data["choices"][0]["finish_reason"] == "length"
    assert len(extension["response_ids"]) == data["usage"]["completion_tokens"] == 9
    assert extension["policy_version"] == policy.version
    assert [item["logprob"] for item in data["choices"][0]["logprobs"]["content"]] == extension["response_logprobs"]
    tokens = "".join(item["token"] for item in data["choices"][0]["logprobs"]["content"])
    assert tokens == data["choices"][0]["message"]["content"] == policy.tokenizer.decode(extension["response_ids"])
    # the exact tokens, scored by a separate forward pass
    ids = extension["prompt_ids"] + extension["response_ids"]
    with torch.no_grad():
        logprobs = torch.log_softmax(policy.model(torch.tensor([ids])).logits[0], -1)
    start = len(extension["prompt_ids"]) - 1
    reference = [float(logprobs[start + i, t]) for i, t in enumerate(extension["response_ids"])]
    assert max(abs(a - b) for a, b in zip(reference, extension["response_logprobs"])) < 1e-4


def test_openai_sdk_streams_real_token_chunks(random_server):
    url, _ = random_server
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    messages = [{"role": "user", "content": "tell me something"}]
    stream = client.chat.completions.create(model="tiny-random", messages=messages, max_tokens=16, seed=11,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(pieces) >= 8  # token by token, not one faked chunk
    assert finish == ["length"] and chunks[-1].usage.completion_tokens == 16
    whole = client.chat.completions.create(model="tiny-random", messages=messages, max_tokens=16, seed=11)
    assert "".join(pieces) == whole.choices[0].message.content


def test_streaming_extension_carries_tokens_in_the_last_chunk(random_server):
    url, _ = random_server
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "seed": 1,
            "stream": True, "return_tokens": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=60) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line[len("data: "):] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    last = json.loads(lines[-2])
    assert last["choices"][0]["finish_reason"] == "length" and len(last["clawgym"]["response_ids"]) == 5


def test_tool_calls_non_streaming_via_sdk(tool_server):
    url, _ = tool_server
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY)
    answer = client.chat.completions.create(model="taught", messages=ASK, tools=TOOLS, temperature=0, max_tokens=64)
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me add."
    call = choice.message.tool_calls[0]
    assert call.function.name == "add" and json.loads(call.function.arguments) == {"a": 2, "b": 3}
    assert call.id.startswith("call_")


def test_tool_calls_streaming_via_sdk(tool_server):
    url, _ = tool_server
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY)
    chunks = list(client.chat.completions.create(model="taught", messages=ASK, tools=TOOLS, temperature=0,
                                                 max_tokens=64, stream=True))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert content == "Let me add.\n"  # the <tool_call> text is not leaked as content
    assert len(calls) == 1 and calls[0].function.name == "add"
    assert json.loads(calls[0].function.arguments) == {"a": 2, "b": 3}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_choice_none_hides_tools_from_the_prompt(tool_server):
    url, _ = tool_server
    body = {"messages": ASK, "tools": TOOLS, "tool_choice": "none", "max_tokens": 1, "return_tokens": True}
    with_tools = dict(body, tool_choice="auto")
    headers = {"Authorization": f"Bearer {KEY}"}
    short = httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers,
                       timeout=60).json()["clawgym"]["prompt_ids"]
    full = httpx.post(f"{url}/v1/chat/completions", json=with_tools, headers=headers,
                      timeout=60).json()["clawgym"]["prompt_ids"]
    assert len(full) > len(short) + 50


def test_auth_failures_are_openai_style_401(tool_server):
    url, _ = tool_server
    missing = httpx.post(f"{url}/v1/chat/completions", json={"messages": ASK})
    wrong = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer nope"})
    for response in (missing, wrong):
        assert response.status_code == 401
        error = response.json()["error"]
        assert error["code"] == "invalid_api_key" and error["type"] == "invalid_request_error"
    assert httpx.get(f"{url}/health").status_code == 200  # health stays open for probes
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{url}/v1", api_key="nope").chat.completions.create(model="taught", messages=ASK)


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ({"model": "m"}, "'messages'"),
        ({"messages": []}, "'messages'"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "role"),
        ({"messages": [{"role": "user", "content": 5}]}, "content"),
        ({"messages": ASK, "temperature": "hot"}, "'temperature'"),
        ({"messages": ASK, "top_p": 0}, "'top_p'"),
        ({"messages": ASK, "max_tokens": -3}, "'max_tokens'"),
        ({"messages": ASK, "n": 2}, "n=1"),
        ({"messages": ASK, "stream": "yes"}, "'stream'"),
        ({"messages": ASK, "tools": [{"type": "function"}]}, "tools[0]"),
        ({"messages": ASK, "stop": [1]}, "'stop'"),
        ({"messages": [{"role": "user", "content": "word " * 5000}]}, "context"),
    ],
)
def test_malformed_requests_get_clear_400s(random_server, body, fragment):
    url, policy = random_server
    before = policy.stats["generated_tokens"]
    kwargs = {"content": body} if isinstance(body, str) else {"json": body}
    response = httpx.post(f"{url}/v1/chat/completions",
                          headers={"Content-Type": "application/json"}, timeout=60, **kwargs)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert fragment in error["message"] and error["type"] == "invalid_request_error"
    assert policy.stats["generated_tokens"] == before  # nothing was generated for a bad request


def test_openai_policy_gets_exact_tokens_from_clawgym_server(random_server):
    url, policy = random_server

    async def run():
        remote = OpenAIPolicy("tiny-random", base_url=f"{url}/v1", return_tokens=True, logprobs=True)
        generation = await remote.generate([{"role": "user", "content": "hi"}],
                                           sampling=SamplingParams(max_tokens=6, seed=5))
        await remote.close()
        local = await policy.generate([{"role": "user", "content": "hi"}],
                                      sampling=SamplingParams(max_tokens=6, seed=5))
        return generation, local

    remote, local = asyncio.run(run())
    assert remote.response_ids == local.response_ids and remote.prompt_ids == local.prompt_ids
    assert remote.response_logprobs == local.response_logprobs == remote.metadata["logprobs"]
    assert remote.text == local.text and remote.finish_reason == "length"


def test_openai_policy_reports_http_errors(tool_server):
    url, _ = tool_server

    async def run():
        remote = OpenAIPolicy("taught", base_url=f"{url}/v1", api_key="wrong")
        try:
            await remote.generate(ASK)
        finally:
            await remote.close()

    with pytest.raises(RuntimeError, match="401"):
        asyncio.run(run())


def test_client_disconnect_mid_stream_frees_the_request(random_server):
    url, policy = random_server
    import time

    before = policy.stats["generated_tokens"]
    body = {"messages": [{"role": "user", "content": "go on forever"}], "max_tokens": 3000, "seed": 2, "stream": True}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=60) as response:
        for count, _ in enumerate(response.iter_lines()):
            if count >= 6:
                break  # hang up after a few chunks
    deadline = time.monotonic() + 20
    while True:  # generation must stop soon after the hang-up, long before 3000 tokens
        first = policy.stats["generated_tokens"]
        time.sleep(0.5)
        if policy.stats["generated_tokens"] == first or time.monotonic() > deadline:
            break
    assert policy.stats["generated_tokens"] == first
    assert first - before < 3000


FENCED_ANSWER = '```json\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n```'
UNKNOWN_ANSWER = '```json\n{"name": "octopus", "arguments": {"model": "octopus"}}\n```'


@pytest.fixture(scope="module")
def fenced_server():
    """A model that writes its call as a fenced JSON block (no tags), and a JSON 'call' to no offered tool."""
    policies = []
    for answer in (FENCED_ANSWER, UNKNOWN_ANSWER):  # teach() replaces the head: one model per answer
        model, tokenizer = load_model("tiny-random")
        assert teach(model, tokenizer, [ASK], answer, tools=TOOLS, steps=100) < 0.05
        policies.append(HFPolicy(model, tokenizer, name="fenced"))
    with BackgroundServer(build_app(policies[0])) as call_url, BackgroundServer(build_app(policies[1])) as text_url:
        yield call_url, text_url


def answer(url: str, stream: bool) -> tuple[str, list, str]:
    """(content, [(name, arguments)], finish_reason) of ASK with TOOLS, streamed or not, through the SDK."""
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    kwargs = dict(model="fenced", messages=ASK, tools=TOOLS, temperature=0, max_tokens=64)
    if stream:
        chunks = list(client.chat.completions.create(stream=True, **kwargs))
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        calls = [tc.function for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
        finish = chunks[-1].choices[0].finish_reason
    else:
        choice = client.chat.completions.create(**kwargs).choices[0]
        content, calls, finish = (choice.message.content or "",
                                  [c.function for c in choice.message.tool_calls or []], choice.finish_reason)
    return content, [(c.name, json.loads(c.arguments)) for c in calls], finish


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_that_is_only_a_fenced_json_call_is_that_call(fenced_server, stream):
    content, calls, finish = answer(fenced_server[0], stream)
    assert content == "" and finish == "tool_calls"  # nothing of the JSON leaked as text
    assert calls == [("add", {"a": 2, "b": 3})]


@pytest.mark.parametrize("stream", [False, True])
def test_json_naming_no_offered_tool_stays_text(fenced_server, stream):
    content, calls, _ = answer(fenced_server[1], stream)
    assert calls == [] and content == UNKNOWN_ANSWER
