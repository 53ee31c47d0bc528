"""Session inference, main/side classification and the durable turn log, on OpenClaw-shaped requests."""

import json

from clawgym.core.chat_protocol import conversation, is_internal_context, runtime_session_id, user_text
from clawgym.rl.types import JudgeResult, Turn
from clawgym.serve.sessions import SessionTracker
from clawgym.serve.turn_log import TurnLog

SYSTEM = {"role": "system",
          "content": "<!-- openclaw:attempt:STABLE -->\nYou are a personal assistant running inside OpenClaw."}
INTERNAL = {"role": "user",
            "content": [{"type": "text",
                         "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions: none\n"
                                 "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}]}


def first_user(text, session="t1"):
    return {"role": "user",
            "content": f"[Sat 2026-11-21 08:52 UTC] {text}\n\nRuntime: agent=main | "
                       f"session=agent:main:explicit:{session} | sessionId={session} | host=vm | model=fake/fake-model"}


def later_user(text):
    return {"role": "user", "content": f"[Sat 2026-11-21 08:53 UTC] {text}"}


def assistant(text):
    return {"role": "assistant", "content": text}


def body(*messages, **extra):
    return {"model": "m", "stream": True, "messages": [SYSTEM, *messages, INTERNAL], **extra}


def test_protocol_helpers():
    msgs = [SYSTEM, first_user("hello"), INTERNAL]
    assert is_internal_context(INTERNAL) and not is_internal_context(msgs[1])
    assert conversation(msgs) == msgs[:2]
    assert runtime_session_id(msgs) == "t1"
    assert user_text(msgs[1]) == "hello"


def test_openclaw_session_without_any_header_is_followed_by_history():
    tracker = SessionTracker()
    view = tracker.identify({}, body(first_user("hi there", session="abc")))
    assert (view.session_id, view.source, view.main) == ("abc", "runtime", True)
    tracker.record_action(view.session_id, view.conversation, assistant("Hello!"), "turn-1")
    # turn 2: no Runtime suffix any more on the new user message; the first one is resent
    view2 = tracker.identify({}, body(first_user("hi there", session="abc"), assistant("Hello!"), later_user("thanks")))
    assert view2.session_id == "abc" and view2.previous_turn_id == "turn-1"
    assert [m["content"] for m in view2.next_state] == ["[Sat 2026-11-21 08:53 UTC] thanks"]
    assert all(not is_internal_context(m) for m in view2.next_state)


def test_history_matching_when_no_id_at_all():
    tracker = SessionTracker()
    u1 = {"role": "user", "content": "plan my week"}
    view = tracker.identify({}, {"messages": [u1]})
    assert view.source == "new"
    tracker.record_action(view.session_id, view.conversation, assistant("Sure."), "t-a")
    other = tracker.identify({}, {"messages": [{"role": "user", "content": "unrelated"}]})
    assert other.session_id != view.session_id and other.previous_turn_id is None
    follow = tracker.identify({}, {"messages": [u1, assistant("Sure."), {"role": "user", "content": "no, next week"}]})
    assert (follow.session_id, follow.source, follow.previous_turn_id) == (view.session_id, "history", "t-a")


def test_tool_call_ids_rewritten_by_the_client_still_match():
    tracker = SessionTracker()
    u = first_user("read probe.txt", session="s9")
    view = tracker.identify({}, body(u, prompt_cache_key="s9:0"))
    assert view.source == "prompt_cache_key"
    action = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_4172118b", "type": "function",
         "function": {"name": "read", "arguments": '{"path": "probe.txt"}'}}]}
    tracker.record_action(view.session_id, view.conversation, action, "t1")
    replayed = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call4172118b", "type": "function", "function": {"name": "read", "arguments": '{"path":"probe.txt"}'}}]}
    tool = {"role": "tool", "content": "secret-content-42\n", "tool_call_id": "call4172118b"}
    view2 = tracker.identify({}, body(u, replayed, tool, prompt_cache_key="s9:0"))
    assert view2.previous_turn_id == "t1" and view2.next_state == [tool]


def test_interleaved_sessions_stay_apart():
    tracker = SessionTracker()
    a = tracker.identify({}, body(first_user("A1", session="A")))
    b = tracker.identify({}, body(first_user("B1", session="B")))
    tracker.record_action("A", a.conversation, assistant("a1"), "A-1")
    tracker.record_action("B", b.conversation, assistant("b1"), "B-1")
    b2 = tracker.identify({}, body(first_user("B1", session="B"), assistant("b1"), later_user("B2")))
    a2 = tracker.identify({}, body(first_user("A1", session="A"), assistant("a1"), later_user("A2")))
    assert (a2.session_id, a2.previous_turn_id, user_text(a2.next_state[0])) == ("A", "A-1", "A2")
    assert (b2.session_id, b2.previous_turn_id, user_text(b2.next_state[0])) == ("B", "B-1", "B2")


def test_headers_win_and_side_turns_are_recognised():
    tracker = SessionTracker()
    view = tracker.identify({"x-session-id": "H", "X-Turn-Type": "side"}, body(first_user("hello", session="R")))
    assert view.session_id == "H" and view.main is False
    assert tracker.identify({"X-Session-Done": "1"}, body(first_user("bye"))).done is True
    heartbeat = {"role": "user",
                 "content": "Read HEARTBEAT.md if it exists. If nothing needs attention, reply HEARTBEAT_OK."}
    assert tracker.identify({}, body(heartbeat)).main is False
    assert tracker.identify({}, {"messages": [{
        "role": "user", "content": "[Sat 2026-11-21 08:52 UTC] [cron:daily-1] summarize"}]}).main is False
    default_heartbeat = {"role": "user",
                         "content": "Follow the heartbeat monitor scratch context when provided. If nothing needs "
                                    "attention, reply NO_REPLY."}
    assert tracker.identify({}, body(default_heartbeat)).main is False
    flush = {"role": "user",
             "content": "Pre-compaction memory flush. Store durable memories only in memory/YYYY-MM-DD.md"}
    assert tracker.identify({}, body(flush)).main is False
    title = {"role": "user", "content": "Generate a short title for this conversation."}
    assert tracker.identify({}, {"messages": [title]}).main is False
    assert tracker.identify({}, {"messages": [SYSTEM]}).main is False  # nobody spoke
    assert tracker.identify({"X-Turn-Type": "main"}, {"messages": [heartbeat]}).main is True


def test_side_turns_do_not_touch_the_session():
    tracker = SessionTracker()
    view = tracker.identify({}, body(first_user("hello", session="S")))
    tracker.record_action("S", view.conversation, assistant("hi"), "S-1")
    side = tracker.identify({}, body({"role": "user", "content": "HEARTBEAT check"}, prompt_cache_key="S"))
    assert side.main is False and side.next_state == []
    nxt = tracker.identify({}, body(first_user("hello", session="S"), assistant("hi"), later_user("more")))
    assert nxt.previous_turn_id == "S-1"


def test_idle_sessions_close():
    now = [0.0]
    tracker = SessionTracker(idle_timeout_s=10, clock=lambda: now[0])
    view = tracker.identify({}, body(first_user("x", session="I")))
    tracker.record_action("I", view.conversation, assistant("y"), "I-1")
    now[0] = 5
    assert tracker.idle_sessions() == []
    now[0] = 20
    closed = tracker.idle_sessions()
    assert [s.id for s in closed] == ["I"] and closed[0].last_turn_id == "I-1"
    assert "I" not in tracker.sessions


def make_turn(turn_id, session="S"):
    return Turn(episode_id=session, turn_index=0, context=[{"role": "user", "content": "q"}],
                action={"role": "assistant", "content": "a"}, prompt_ids=[1, 2], response_ids=[3],
                response_logprobs=[-0.5], session_id=session, turn_id=turn_id)


def test_turn_log_is_append_only_deduplicated_and_survives_reopen(tmp_path):
    path = tmp_path / "turns.jsonl"
    log = TurnLog(path)
    assert log.record_turn(make_turn("t1")).result() is True
    assert log.record_turn(make_turn("t1")).result() is False  # never twice
    log.record_next_state("t1", [{"role": "user", "content": "thanks"}])
    log.record_judge("t1", "prm", JudgeResult(score=1.0, votes=[1, 1, -1]))
    log.flush()
    assert [json.loads(line)["event"] for line in path.read_text().splitlines()] == ["turn", "next_state", "judge"]
    log.close()
    log.flush()  # a closed log has nothing queued: returns at once instead of waiting on a stopped writer
    with path.open("a") as handle:
        handle.write('{"event": "turn", "id": "turn:torn"')  # a crash mid-write
    reopened = TurnLog(path)
    assert reopened.record_next_state("t1", [{"role": "user", "content": "again"}]).result() is False
    assert reopened.record_turn(make_turn("t2")).result() is True  # a new event after the torn line is readable
    turn, turn2 = reopened.turns()
    assert turn2.turn_id == "t2"
    assert turn.next_state == [{"role": "user", "content": "thanks"}]
    assert turn.judge["prm"].score == 1.0 and turn.response_logprobs == [-0.5]
    lines = [json.loads(s) for s in path.read_text().splitlines() if s.endswith("}") and s.count("{") == s.count("}")]
    assert [row["event"] for row in lines] == ["turn", "next_state", "judge", "turn"]
