"""Fitting a long request into the model's window: the documented order, never the user's latest words
or the latest tool result, a warning in the log, and a clear 400 when nothing can make it fit."""

from __future__ import annotations

import logging

import pytest

from clawgym.core.chat_protocol import INTERNAL_CONTEXT_MARKER
from clawgym.inference.chat_template import encode_prompt
from clawgym.inference.models import load_tokenizer
from clawgym.serve.fitting import ContextFitter, ContextTooLong


@pytest.fixture(scope="module")
def count():
    tokenizer = load_tokenizer("tiny-random")
    return lambda messages, tools: len(encode_prompt(tokenizer, messages, tools))


def openclaw_like(system_words=1500):
    tools = [{"type": "function", "function": {"name": f"tool{i}", "description": "does a thing " * 40,
              "parameters": {"type": "object",
                             "properties": {"path": {"type": "string", "description": "a path " * 20}}}}}
             for i in range(6)]
    messages = [
        {"role": "system", "content": "You are a personal assistant. " + "Guidance sentence here. " * system_words},
        {"role": "user", "content": "first question about the garden"},
        {"role": "assistant", "content": "a long first answer " * 60},
        {"role": "user", "content": "second question about the garden"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "tool0", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "THE-LATEST-TOOL-RESULT"},
        {"role": "user", "content": "MY-LATEST-WORDS: what did the tool say?"},
        {"role": "user",
         "content": [{"type": "text", "text": INTERNAL_CONTEXT_MARKER + " active exec sessions " * 200}]},
    ]
    return messages, tools


def texts(messages):
    return " ".join(str(m.get("content")) for m in messages)


def test_a_request_that_fits_is_untouched(count):
    messages, tools = openclaw_like(10)
    fitted, fitted_tools, report = ContextFitter(count, 100_000).fit(messages, tools, 256)
    assert fitted is messages and fitted_tools is tools and not report.fitted


def test_cuts_follow_the_documented_order_and_keep_the_latest_words_and_tool_result(count, caplog):
    messages, tools = openclaw_like()
    full = count(messages, tools)
    steps_seen = []
    for window in (full - 100, full - 1500, full - 2600, full - 4000):
        with caplog.at_level(logging.WARNING, logger="clawgym.serve.fitting"):
            fitted, fitted_tools, report = ContextFitter(count, window).fit(messages, tools, 128)
        assert report.tokens <= window - 128 and count(fitted, fitted_tools) == report.tokens
        assert "MY-LATEST-WORDS" in texts(fitted) and "THE-LATEST-TOOL-RESULT" in texts(fitted)
        assert any(m.get("tool_calls") for m in fitted)  # the call that produced the latest tool result stays
        assert "cut to" in caplog.text
        steps_seen.append([step.split(":")[0] for step in report.steps])
    order = ["internal context", "tool descriptions", "oldest turns", "system prompt middle"]
    assert steps_seen[0] == order[:1]
    for steps in steps_seen:
        assert [s for s in order if s in steps] == list(dict.fromkeys(steps))  # never out of order
    assert "system prompt middle" in steps_seen[-1]
    assert messages[-1]["content"][0]["text"].startswith(INTERNAL_CONTEXT_MARKER)  # the caller's copy is untouched


def test_a_request_that_cannot_fit_is_refused_saying_why(count):
    messages, tools = openclaw_like(10)
    with pytest.raises(ContextTooLong, match="even after dropping"):
        ContextFitter(count, 150).fit(messages, tools, 64)
