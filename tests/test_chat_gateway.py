"""The chat gateway over HTTP with real clients (openai SDK, raw httpx): streaming, tools, sessions,
recording exactly once, restarts, and every kind of bad input."""

import asyncio
import json

import httpx
import openai
import pytest

from clawgym.core.policy import Generation
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.inference.streaming import TextDelta
from clawgym.rl.judge import JudgeStage, RuleJudge
from clawgym.serve.app import build_gateway_app
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog
from tests.waiting import wait_for

KEY = "sk-gateway-test"


def last_user_text(messages):
    for message in reversed(messages):
        if message["role"] == "user":
            content = message["content"]
            text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
            if not text.startswith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"):
                return text
    return ""


def respond(messages):
    """Calls `read` when asked, reports tool results, else echoes the user."""
    if messages[-1]["role"] == "tool":
        return f"The tool said: {messages[-1]['content']}"
    text = last_user_text(messages)
    if "READ" in text:
        return '<tool_call>{"name": "read", "arguments": {"path": "probe.txt"}}</tool_call>'
    return f"echo: {text}"


class SlowStreamingPolicy:
    """A real streaming policy (token by token, with a delay) to test disconnects mid-stream."""

    name = "slow"
    version = 0

    async def stream(self, messages, tools=None, sampling=None):
        words = ["one ", "two ", "three ", "four ", "five "] * 4
        for word in words:
            await asyncio.sleep(0.05)
            yield TextDelta(word, [1], [-0.1])
        text = "".join(words)
        yield Generation(text=text, message={"role": "assistant", "content": text},
                         prompt_ids=[1], response_ids=[1] * len(words), response_logprobs=[-0.1] * len(words))

    async def generate(self, messages, tools=None, sampling=None):
        item = None
        async for item in self.stream(messages, tools, sampling):
            pass
        return item

    async def close(self):
        pass


class MarkGood(RuleJudge):
    name = "rule"

    def verdict(self, turn):
        if not turn.next_state:
            return None
        return (-1.0, "correction") if "no," in json.dumps(turn.next_state) else (1.0, "progress")


def start_gateway(tmp_path, policy=None, judge=True, **app_kwargs):
    log = TurnLog(tmp_path / "turns.jsonl")
    judged = []
    stage = JudgeStage([MarkGood()], workers=1) if judge else None
    gateway = ChatGateway(PolicyResponder(policy or ScriptedPolicy(respond, byte_tokens=True)), log,
                          judge_stage=stage, on_judged=judged.append)
    server = BackgroundServer(build_gateway_app(gateway, api_key=KEY, **app_kwargs))
    server.start()
    return server, gateway, judged


@pytest.fixture
def gateway_server(tmp_path):
    server, gateway, judged = start_gateway(tmp_path)
    yield server, gateway, judged
    server.stop()


def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)


def one_turn_judged_and_logged(gateway, judged) -> bool:
    """Wait for the judged turn, then for the log to hold its verdict: the gateway queues the verdict
    before ``on_judged`` runs, and the log's writer thread writes it."""
    judged_in_time = wait_for(lambda: len(judged) == 1)
    gateway.log.flush()
    return judged_in_time


def test_openai_sdk_streaming_and_plain_with_sessions(gateway_server, tmp_path):
    server, gateway, judged = gateway_server
    api = client(server)
    assert [m.id for m in api.models.list().data] == ["clawgym-policy"]
    stream = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}], stream=True,
                                         extra_body={"prompt_cache_key": "sess-1:0"})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "echo: hello"
    reply = api.chat.completions.create(model="m", extra_body={"prompt_cache_key": "sess-1:0"}, messages=[
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "echo: hello"},
        {"role": "user", "content": "no, say bye"}])
    assert reply.choices[0].message.content == "echo: no, say bye"
    assert one_turn_judged_and_logged(gateway, judged)
    turns = TurnLog(tmp_path / "turns.jsonl").turns()
    assert [t.session_id for t in turns] == ["sess-1:0", "sess-1:0"]
    assert turns[0].next_state == [{"role": "user", "content": "no, say bye"}]
    assert turns[0].judge["rule"].score == -1.0 and judged[0].turn_id == turns[0].turn_id
    assert turns[0].response_ids == list(b"echo: hello") and turns[0].response_logprobs == [0.0] * 11


def test_tool_calls_stream_and_the_tool_result_is_the_next_state(gateway_server, tmp_path):
    server, gateway, judged = gateway_server
    api = client(server)
    tools = [{"type": "function",
              "function": {"name": "read",
                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
    chunks = list(api.chat.completions.create(model="m", messages=[{"role": "user", "content": "READ it"}],
                                              tools=tools, stream=True))
    calls = [c for chunk in chunks if chunk.choices for c in (chunk.choices[0].delta.tool_calls or [])]
    assert calls[0].function.name == "read" and json.loads(calls[0].function.arguments) == {"path": "probe.txt"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    call_id = calls[0].id.replace("_", "")  # clients rewrite ids (OpenClaw does)
    history = [{"role": "user", "content": "READ it"},
               {"role": "assistant", "content": None,
                "tool_calls": [{"id": call_id, "type": "function",
                                "function": {"name": "read", "arguments": '{"path": "probe.txt"}'}}]},
               {"role": "tool", "tool_call_id": call_id, "content": "secret-42"}]
    reply = api.chat.completions.create(model="m", messages=history, tools=tools)
    assert reply.choices[0].message.content == "The tool said: secret-42"
    assert one_turn_judged_and_logged(gateway, judged)
    first, second = TurnLog(tmp_path / "turns.jsonl").turns()
    assert second.session_id == first.session_id and second.info["session_source"] == "history"
    assert first.next_state == [history[2]] and first.action["tool_calls"][0]["function"]["name"] == "read"


def test_side_turns_are_answered_but_not_recorded(gateway_server, tmp_path):
    server, gateway, judged = gateway_server
    api = client(server)
    out = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "HEARTBEAT check"}])
    assert out.choices[0].message.content == "echo: HEARTBEAT check"
    out = api.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                      extra_headers={"X-Turn-Type": "side"})
    assert TurnLog(tmp_path / "turns.jsonl").turns() == [] and gateway.stats.side_turns == 2


@pytest.mark.parametrize("raw, status, fragment", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (json.dumps({"messages": "hi"}).encode(), 400, "'messages' must be a non-empty list"),
    (json.dumps({"messages": [{"role": "wizard", "content": "x"}]}).encode(), 400, "role must be one of"),
    (json.dumps({"messages": [{"role": "user", "content": 5}]}).encode(), 400, "content must be"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}).encode(), 400,
     "'temperature' must be a number"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}).encode(), 400,
     "'stream' must be a boolean"),
])
def test_bad_requests_get_clear_errors_and_record_nothing(gateway_server, tmp_path, raw, status, fragment):
    server, gateway, judged = gateway_server
    response = httpx.post(server.url + "/v1/chat/completions", content=raw,
                          headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    assert response.status_code == status and fragment in response.json()["error"]["message"]
    assert TurnLog(tmp_path / "turns.jsonl").turns() == []


def test_missing_or_wrong_key_and_oversized_body(tmp_path):
    server, gateway, _ = start_gateway(tmp_path, max_body_bytes=2000)
    try:
        body = {"messages": [{"role": "user", "content": "x"}]}
        assert httpx.post(server.url + "/v1/chat/completions", json=body).status_code == 401
        wrong = httpx.post(server.url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "incorrect API key" in wrong.json()["error"]["message"]
        big = {"messages": [{"role": "user", "content": "x" * 5000}]}
        response = httpx.post(server.url + "/v1/chat/completions", json=big, headers={"Authorization": f"Bearer {KEY}"})
        assert response.status_code == 413 and "exceeds the limit" in response.json()["error"]["message"]
        assert httpx.get(server.url + "/health").json()["status"] == "ok"
        assert TurnLog(tmp_path / "turns.jsonl").turns() == []
    finally:
        server.stop()


def test_client_disconnecting_mid_stream_records_nothing(tmp_path):
    server, gateway, _ = start_gateway(tmp_path, policy=SlowStreamingPolicy())
    try:
        with httpx.Client(timeout=10) as http:
            with http.stream("POST", server.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                             json={"messages": [{"role": "user", "content": "talk"}], "stream": True}) as response:
                for index, line in enumerate(response.iter_lines()):
                    if index == 3:
                        break  # hang up after a few chunks
        assert wait_for(lambda: gateway.stats.aborted == 1)
        assert TurnLog(tmp_path / "turns.jsonl").turns() == []
        # the gateway keeps serving, and a complete stream is recorded
        with httpx.Client(timeout=10) as http:
            text = http.post(server.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                             json={"messages": [{"role": "user", "content": "talk"}], "stream": True}).text
        assert text.rstrip().endswith("data: [DONE]")
        assert wait_for(lambda: len(TurnLog(tmp_path / "turns.jsonl").turns()) == 1)
    finally:
        server.stop()


def test_restart_loses_and_duplicates_nothing(tmp_path):
    server, gateway, judged = start_gateway(tmp_path)
    api = client(server)
    api.chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}], user="alice")
    server.stop()
    gateway.log.close()
    # a new process on the same log: the session continues, its next state lands on the old turn
    server, gateway, judged = start_gateway(tmp_path)
    try:
        api = client(server)
        api.chat.completions.create(model="m", user="alice", messages=[
            {"role": "user", "content": "first"}, {"role": "assistant", "content": "echo: first"},
            {"role": "user", "content": "second"}])
        assert one_turn_judged_and_logged(gateway, judged)
        turns = TurnLog(tmp_path / "turns.jsonl").turns()
        assert [t.session_id for t in turns] == ["alice", "alice"]
        assert turns[0].next_state[0]["content"] == "second" and turns[0].judge["rule"].score == 1.0
        events = [json.loads(line)["event"] for line in (tmp_path / "turns.jsonl").read_text().splitlines()]
        assert events.count("turn") == 2 and events.count("next_state") == 1 and events.count("judge") == 1
    finally:
        server.stop()


def test_idle_sessions_close_and_their_last_turn_is_judged(tmp_path):
    server, gateway, judged = start_gateway(tmp_path)
    try:
        client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "one"}], user="bob")
        gateway.tracker.idle_timeout_s = 0.0
        assert gateway.close_idle_sessions() == ["bob"]
        assert one_turn_judged_and_logged(gateway, judged)
        assert judged[0].next_state == [] and TurnLog(tmp_path / "turns.jsonl").closed_sessions() == {"bob"}
    finally:
        server.stop()


def test_session_done_header_closes_the_session(gateway_server, tmp_path):
    server, gateway, judged = gateway_server
    client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "bye"}],
                                           extra_headers={"X-Session-Id": "S", "X-Session-Done": "1"})
    assert one_turn_judged_and_logged(gateway, judged)
    assert "S" not in gateway.tracker.sessions and TurnLog(tmp_path / "turns.jsonl").closed_sessions() == {"S"}


def test_research_mode_env_answers_live_requests(tmp_path):
    """A live client talks to the gateway; agent code answers through gym's reset/step."""
    import threading

    import gymnasium as gym

    import clawgym  # noqa: F401
    from clawgym.serve.live import LiveGateway

    live = LiveGateway(tmp_path / "live.jsonl", api_key=KEY)
    replies = []

    def person():
        api = openai.OpenAI(base_url=live.url + "/v1", api_key=KEY, max_retries=0)
        history = [{"role": "user", "content": "what is 2+2?"}]
        for follow_up, headers in (("thanks, and 3+3?", {}), ("bye", {"X-Session-Done": "1"})):
            stream = api.chat.completions.create(model="m", messages=history, stream=True, user="carol")
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            replies.append(text)
            history += [{"role": "assistant", "content": text}, {"role": "user", "content": follow_up}]
        replies.append(api.chat.completions.create(model="m", messages=history, user="carol",
                                                   extra_headers={"X-Session-Done": "1"}).choices[0].message.content)

    thread = threading.Thread(target=person)
    thread.start()
    env = gym.make("clawgym/OpenClawChat-v0", live=live, wait_s=20)
    try:
        obs, info = env.reset()
        assert obs == [{"role": "user", "content": "what is 2+2?"}] and info["session_id"] == "carol"
        with pytest.raises(clawgym.core.InvalidAction):
            env.step(3)
        obs, reward, terminated, truncated, info = env.step("4")
        assert obs == [{"role": "user", "content": "thanks, and 3+3?"}] and not terminated
        obs, *_ = env.step("6")
        assert obs == [{"role": "user", "content": "bye"}]
        obs, reward, terminated, truncated, info = env.step("goodbye!")
        assert terminated and info["ended"] == "session_done"
        thread.join(timeout=20)
        assert replies == ["4", "6", "goodbye!"]
        assert wait_for(lambda: len(TurnLog(tmp_path / "live.jsonl").turns()) == 3)
        turns = TurnLog(tmp_path / "live.jsonl").turns()
        assert [t.action["content"] for t in turns] == ["4", "6", "goodbye!"]
        assert turns[0].next_state == [{"role": "user", "content": "thanks, and 3+3?"}]
    finally:
        env.close()
        live.close()
