"""Action parsing: structured OpenAI tool calls, <tool_call> blocks in text, and every malformed shape."""

import json

import pytest

from clawgym.core.messages import INVALID, InvalidAction, parse_action, parse_text_tool_calls, text_of


def test_plain_text_is_an_assistant_message_without_calls():
    message, calls = parse_action("The answer is \\boxed{4}.")
    assert message == {"role": "assistant", "content": "The answer is \\boxed{4}."}
    assert calls == []


def test_tool_call_blocks_in_text_become_structured_calls():
    text = 'Let me compute.\n<tool_call>{"name": "python", "arguments": {"code": "print(2+2)"}}</tool_call>'
    message, calls = parse_action(text)
    assert [c.name for c in calls] == ["python"]
    assert calls[0].arguments == {"code": "print(2+2)"}
    assert message["content"] == "Let me compute."
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"code": "print(2+2)"}


def test_several_blocks_and_string_arguments():
    text = ('<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call>'
            '<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    _, calls = parse_text_tool_calls(text)
    assert [(c.name, c.arguments, c.error) for c in calls] == [("a", {"x": 1}, None), ("b", {}, None)]


def test_unterminated_block_is_still_read():
    _, calls = parse_text_tool_calls('<tool_call>{"name": "a", "arguments": {"x": 2}}')
    assert calls[0].name == "a" and calls[0].arguments == {"x": 2}


@pytest.mark.parametrize("body, fragment", [
    ('{"name": "a", "arguments": {"x": 1}', "not valid JSON"),
    ('[1, 2]', "must be a JSON object"),
    ('{"arguments": {}}', "must be a JSON object"),
    ('{"name": "a", "arguments": "not json"}', "not valid JSON"),
    ('{"name": "a", "arguments": [1]}', "must be a JSON object"),
])
def test_malformed_blocks_become_calls_with_errors(body, fragment):
    message, calls = parse_action(f"before <tool_call>{body}</tool_call>")
    assert len(calls) == 1 and calls[0].error and fragment in calls[0].error
    assert calls[0].name in (INVALID, "a")
    assert "<tool_call>" in message["content"], "the model's raw text is kept when a block cannot be read"
    assert "tool_calls" not in message, "a later turn's context shows what the model wrote, not invalid_tool_call"


def test_openai_dict_with_structured_calls():
    action = {"role": "assistant", "content": "",
              "tool_calls": [{"id": "call_9", "type": "function",
                              "function": {"name": "calculator", "arguments": '{"expression": "1+1"}'}}]}
    message, calls = parse_action(action)
    assert calls[0].id == "call_9" and calls[0].arguments == {"expression": "1+1"}
    assert message["tool_calls"][0]["id"] == "call_9"


def test_openai_dict_with_bad_arguments_and_no_name():
    action = {"role": "assistant", "tool_calls": [
        {"id": "1", "function": {"name": "x", "arguments": "{bad"}},
        {"id": "2", "function": {"arguments": "{}"}},
    ]}
    _, calls = parse_action(action)
    assert "not valid JSON" in calls[0].error
    assert calls[1].error == "tool call has no function name"


def test_openai_dict_content_parts_and_text_blocks():
    action = {"role": "assistant",
              "content": [{"type": "text", "text": '<tool_call>{"name": "a", "arguments": {}}</tool_call>'}]}
    _, calls = parse_action(action)
    assert calls[0].name == "a"


@pytest.mark.parametrize("action, fragment", [
    (5, "must be a str or an assistant message dict"),
    (None, "must be a str"),
    (["hi"], "must be a str"),
    ({"role": "user", "content": "hi"}, "role 'assistant'"),
    ({"role": "assistant", "content": 3}, "'content' must be"),
    ({"role": "assistant", "tool_calls": "x"}, "'tool_calls' must be a list"),
    ({"role": "assistant", "tool_calls": [3]}, "must be a dict"),
])
def test_wrong_action_types_raise_clear_errors(action, fragment):
    with pytest.raises(InvalidAction, match=fragment):
        parse_action(action)


def test_text_of_handles_every_content_shape():
    assert text_of({"role": "user", "content": None}) == ""
    assert text_of({"role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "image_url"},
                                {"type": "text", "text": "b"}]}) == "ab"
