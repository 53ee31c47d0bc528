"""Qwen2.5's tool-call format end to end: its chat template, OpenAI-shaped input, and the lenient reading.

Uses ``tiny-random-qwen``: the real Qwen2.5 tokenizer and chat template (from the cached
qwen2.5-coder-0.5b checkpoint) on a tiny random model.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import clawgym  # noqa: F401  (registers the ids)
from clawgym.core.messages import INVALID, parse_action, parse_bare_json_calls
from clawgym.inference.chat_template import encode_prompt, render_prompt, supports_tools
from clawgym.inference.models import load_tokenizer

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                             "parameters": {"type": "object",
                                                            "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def qwen():
    return load_tokenizer("tiny-random-qwen")


def test_the_qwen_template_renders_tools_natively(qwen):
    assert supports_tools(qwen)
    text = render_prompt(qwen, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], TOOLS)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools") and '"name": "get_weather"' in text
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


def test_openai_shaped_history_renders_as_the_model_wrote_it(qwen):
    """Content as a list of parts (OpenClaw), None next to tool calls, arguments as a JSON string."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Oslo?"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "rain, 4 C"}]},
    ]
    text = render_prompt(qwen, messages, TOOLS)
    assert "<|im_start|>user\nWeather in Oslo?<|im_end|>" in text
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>' in text  # not re-quoted
    assert "<|im_start|>user\n<tool_response>\nrain, 4 C\n</tool_response><|im_end|>" in text
    assert encode_prompt(qwen, messages, TOOLS) == qwen(text, add_special_tokens=False)["input_ids"]


def test_what_the_template_shows_is_what_the_parser_reads(qwen):
    """A model that copies its template's format is understood: render a call, parse it back."""
    call = {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    text = render_prompt(qwen,
                         [{"role": "user", "content": "hi"},
                          {"role": "assistant", "content": None, "tool_calls": [call]}])
    written = text.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    _, calls = parse_action(written)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize("text", [
    '{"name": "get_weather", "arguments": {"city": "Oslo"}}',
    '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```',
    '```\n[{"name": "get_weather", "arguments": {"city": "Oslo"}}]\n```',
    '  {"name": "get_weather", "parameters": {"city": "Oslo"}}\n',
])
def test_the_lenient_reading_takes_a_message_that_is_only_a_call(text):
    message, calls = parse_action(text, lenient=True)
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert message["content"] is None and message["tool_calls"][0]["function"]["name"] == "get_weather"
    assert parse_action(text)[1] == []  # the strict reading needs the tags


@pytest.mark.parametrize("text", [
    '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n{"name": "get_time", "arguments": {"zone": "CET"}}',
    '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n'
    '{"name": "get_time", "arguments": {"zone": "CET"}}\n```',
    '{"name": "get_weather", "arguments": {"city": "Oslo"}},\n{"name": "get_time", "arguments": {"zone": "CET"}}',
])
def test_parallel_calls_written_as_consecutive_objects_are_read_in_order(text):
    calls = parse_bare_json_calls(text)
    assert [(c.name, c.arguments, c.id) for c in calls] == [
        ("get_weather", {"city": "Oslo"}, "call_0"), ("get_time", {"zone": "CET"}, "call_1")]


@pytest.mark.parametrize("text", [
    'Call this: {"name": "get_weather", "arguments": {"city": "Oslo"}}',  # prose before it
    '{"answer": 42}', "[1, 2]", "```json\n{not json}\n```", "", "The answer is 42.",
])
def test_the_lenient_reading_leaves_everything_else_as_text(text):
    assert parse_bare_json_calls(text) == []
    message, calls = parse_action(text, lenient=True)
    assert calls == [] and message["content"] in (text, text.strip())


@pytest.mark.parametrize(("text", "problem"), [
    ('{"name": "python", "arguments": {"code": """print(1)"""}}', "not valid JSON"),  # Python triple quotes
    ('{"name": "python", "arguments": {"code": "print(1)"})', "not valid JSON"),  # ")" for "}"
    # code with a raw newline inside the string: the message names the fault once ("character at position")
    ('{"name": "python", "arguments": {"code": "x = 1\nprint(x)"}}', "Invalid control character at position 47"),
    ("```json\n{'name': 'python', 'arguments': {}}\n```", "not valid JSON"),  # a Python dict, fenced
    ('{"name": "get_weather", "arguments": {"city": "Oslo"}}\nand then the time', "text follows the call"),
    ('{"name": "get_weather", "arguments": {"city": "Oslo"}}\n{"answer": 42}', 'a string "name"'),
    # the same call over and over, cut off by the token limit
    ('{"name": "f", "arguments": {}}\n{"name": "f", "arguments": {}}\n{"name": "f", "argu', "not valid JSON"),
    ('{"name": "get_weather", "arguments": {"city": "Oslo"}, "note": 1}', 'a string "name"'),  # not only a call
    ('{"name": "get_weather", "arguments": "Oslo"}', 'an object "arguments"'),
    ('[{"name": "get_weather", "arguments": {}}, 3]', 'a string "name"'),
    ('{"name": 3}', 'a string "name"'),
])
def test_a_message_that_starts_like_a_bare_call_but_is_not_one_is_an_invalid_call(text, problem):
    """The agent gets a tool error saying what to fix, not an episode ended by a half-written call."""
    assert parse_bare_json_calls(text) == []
    message, calls = parse_action(text, lenient=True)
    assert [call.name for call in calls] == [INVALID] and problem in calls[0].error
    assert "write a call as" in calls[0].error and message["content"] == text and "tool_calls" not in message
    assert parse_action(text)[1] == []  # the strict reading: still the final answer


def test_a_broken_bare_call_costs_a_turn_not_the_episode():
    env = gym.make("clawgym/ToolCall-v0").unwrapped
    try:
        env.reset(seed=0)
        observation, reward, terminated, _, info = env.step('{"name": "python", "arguments": {"code": """1"""}}')
        assert not terminated and reward == 0.0 and info["tool_errors"] == 1
        assert observation[0]["role"] == "tool" and "not valid JSON" in observation[0]["content"]
        observation, _, terminated, _, _ = env.step('{"name": "calculator", "arguments": {"expression": "2+3"}}')
        assert not terminated and observation[0]["content"].strip() == "5"
    finally:
        env.close()


def test_envs_read_leniently_by_default_and_strictly_when_asked():
    bare = '{"name": "calculator", "arguments": {"expression": "2+3"}}'
    lenient = gym.make("clawgym/ToolCall-v0").unwrapped
    strict = gym.make("clawgym/ToolCall-v0", tool_call_reading="strict").unwrapped
    try:
        assert lenient.reset(seed=0)[1]["tool_call_reading"] == "lenient"
        observation, _, terminated, _, info = lenient.step(bare)
        assert not terminated and observation[0]["role"] == "tool" and "5" in observation[0]["content"]
        assert info["tool_calls"] == 1
        assert strict.reset(seed=0)[1]["tool_call_reading"] == "strict"
        observation, _, terminated, _, info = strict.step(bare)
        assert terminated and info["tool_calls"] == 0  # read as the final answer
    finally:
        lenient.close()
        strict.close()
    with pytest.raises(ValueError, match="tool_call_reading 'loose' is not one of"):
        gym.make("clawgym/ToolCall-v0", tool_call_reading="loose")


def test_a_setting_without_tools_never_reads_json_as_a_call():
    env = gym.make("clawgym/OpenClawChat-v0").unwrapped
    try:
        env.reset(seed=0)
        assert env.tools == []
        _, _, _, _, info = env.step(json.dumps({"name": "x", "arguments": {}}))
        assert info["tool_calls"] == 0
    finally:
        env.close()
