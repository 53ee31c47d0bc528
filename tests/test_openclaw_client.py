"""The real OpenClaw client (npm `openclaw`) against the clawgym gateway.

OpenClaw's own gateway process is started once and driven over its HTTP endpoint; it talks to our
gateway as its model provider, exactly as in a personal deployment. Two interleaved sessions, one of
them with a tool call that OpenClaw executes itself, must be recorded as two sessions in the right
order, each next state the right user or tool message, never OpenClaw's internal-context block.
"""

import json
import time

import pytest

from clawgym.core.chat_protocol import INTERNAL_CONTEXT_MARKER, user_text
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.serve.app import build_gateway_app
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog
from tests.openclaw_harness import OpenClawUnavailable, openclaw_gateway
from tests.requirements import require_command

pytestmark = pytest.mark.slow
KEY = "sk-clawgym-openclaw"


def user_words(messages):
    """The person's latest words in an OpenClaw request (skipping the internal-context block)."""
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        content = message["content"]
        text = (content
                if isinstance(content, str) else "".join(p.get("text", "") for p in content if isinstance(p, dict)))
        if INTERNAL_CONTEXT_MARKER not in text:
            return user_text(message)
    return ""


def respond(messages):
    if messages[-1]["role"] == "tool" or (messages[-2]["role"] == "tool" if len(messages) > 1 else False):
        tool = next(m for m in reversed(messages) if m["role"] == "tool")
        return f"The file contains: {tool['content'].strip()}"
    words = user_words(messages)
    if words.startswith("READFILE"):
        return '<tool_call>{"name": "read", "arguments": {"path": "probe.txt"}}</tool_call>'
    return f"reply to [{words}]"


@pytest.fixture(scope="module", params=[True, False], ids=["prompt_cache_key", "no_session_id_in_body"])
def stack(request, tmp_path_factory):
    require_command("npm", "apt-get install npm; the OpenClaw client comes from npm")
    root = tmp_path_factory.mktemp("openclaw")
    log = TurnLog(root / "turns.jsonl")
    gateway = ChatGateway(PolicyResponder(ScriptedPolicy(respond, byte_tokens=True)), log)
    server = BackgroundServer(build_gateway_app(gateway, api_key=KEY))
    server.start()
    try:
        with openclaw_gateway(root, server.url + "/v1", KEY, prompt_cache_key=request.param) as openclaw:
            (root / "work" / "probe.txt").write_text("secret-content-42\n")
            yield openclaw, gateway, root, request.param
    except OpenClawUnavailable as exc:
        pytest.fail(f"OpenClaw could not run: {exc}")
    finally:
        server.stop()


def test_two_interleaved_openclaw_sessions_with_a_tool_call(stack):
    openclaw, gateway, root, with_key = stack
    assert "reply to [alpha one]" in openclaw.chat("A", "alpha one")
    assert "reply to [beta one]" in openclaw.chat("B", "beta one")
    assert "secret-content-42" in openclaw.chat("A", "READFILE please")
    assert "reply to [beta two]" in openclaw.chat("B", "beta two")
    assert "reply to [alpha three]" in openclaw.chat("A", "alpha three")

    # a turn is recorded right after its last SSE line went out, so the reply can reach the test first
    deadline = time.monotonic() + 10
    while len(TurnLog(root / "turns.jsonl").turns()) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    turns = TurnLog(root / "turns.jsonl").turns()
    by_session = {}
    for turn in turns:
        by_session.setdefault(turn.session_id, []).append(turn)
    assert len(by_session) == 2, f"expected two sessions, got {list(by_session)}"
    a, b = sorted(by_session.values(), key=len, reverse=True)
    # session A: alpha one -> READFILE (tool call) -> tool result -> alpha three
    assert [t.action.get("content") or t.action["tool_calls"][0]["function"]["name"] for t in a] == [
        "reply to [alpha one]", "read", "The file contains: secret-content-42", "reply to [alpha three]"]
    assert user_text(a[0].next_state[-1]) == "READFILE please"
    assert a[1].next_state[0]["role"] == "tool" and a[1].next_state[0]["content"].strip() == "secret-content-42"
    assert user_text(a[2].next_state[-1]) == "alpha three"
    assert [user_text(t.next_state[-1]) for t in b[:1]] == ["beta two"]
    for turn in turns:
        assert all(INTERNAL_CONTEXT_MARKER not in json.dumps(m) for m in turn.next_state)
        assert turn.response_ids and len(turn.response_ids) == len(turn.response_logprobs)
    # no header ever arrives: the body's prompt_cache_key when the provider allows it, else the
    # Runtime suffix of the first user message (resent with every request)
    assert {t.info["session_source"] for t in turns} == ({"prompt_cache_key"} if with_key else {"runtime"})
