"""Explicit feedback through POST /v1/feedback: recorded once in the turn log, combined with the judge by
the documented rule, and every bad body / unknown id / duplicate refused with a clear 4xx and no change."""

from __future__ import annotations

import httpx

from clawgym.core.policy import SamplingParams  # noqa: F401  (the gateway's sampling type)
from clawgym.inference.scripted import ScriptedPolicy
from clawgym.inference.server import BackgroundServer
from clawgym.rl.judge import JudgeStage, RuleJudge
from clawgym.serve.app import build_gateway_app
from clawgym.serve.gateway import ChatGateway, PolicyResponder
from clawgym.serve.turn_log import TurnLog
from clawgym.serve.users import UserDirectory
from tests.waiting import wait_for


class AlwaysGood(RuleJudge):
    name = "prm"

    def verdict(self, turn):
        return 1.0, "the judge liked it"


def stack(tmp_path):
    received = []
    gateway = ChatGateway(PolicyResponder(ScriptedPolicy(lambda m: "an answer", byte_tokens=True)),
                          TurnLog(tmp_path / "turns.jsonl"), judge_stage=JudgeStage([AlwaysGood()]),
                          on_judged=received.append)
    app = build_gateway_app(gateway, users=UserDirectory({"k-alice": "alice", "k-bob": "bob"}))
    return gateway, app, received


def ask(client, key, session, messages):
    response = client.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}", "X-Session-Id": session},
                           json={"model": "m", "messages": messages})
    return response.json()


def test_feedback_beats_the_judge_and_late_feedback_trains_on_its_own(tmp_path):
    gateway, app, received = stack(tmp_path)
    alice = {"Authorization": "Bearer k-alice"}
    with BackgroundServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        first = ask(client, "k-alice", "s1", [{"role": "user", "content": "hi"}])
        turn_id = first["id"].removeprefix("chatcmpl-")
        # feedback before the judge has seen the next state: it replaces the judge's verdict
        ok = client.post("/v1/feedback", headers=alice, json={"response_id": first["id"], "thumb": "down",
                                                              "correction": "Answer in French, please."})
        assert ok.status_code == 200 and ok.json()["route"] == "replaces the judge's verdict"
        ask(client, "k-alice", "s1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "an answer"},
                                      {"role": "user", "content": "hmm"}])
        wait_for(lambda: any(t.turn_id == turn_id for t in received), timeout=20.0)
        judged = next(t for t in received if t.turn_id == turn_id)
        assert judged.judge["prm"].score == -1.0 and judged.judge["prm"].source == "feedback"
        assert judged.judge["hint"].hints == ["The user's correction: Answer in French, please."]

        # a duplicate, and the other bad inputs: clear 4xx, nothing recorded. The judge's own verdict is
        # queued before on_judged runs but written by the log's thread: snapshot once it is on disk.
        gateway.log.flush()
        log_path = tmp_path / "turns.jsonl"
        before = log_path.read_text()
        bad = [
            ({"response_id": first["id"], "thumb": "up"}, 409, "already has feedback"),
            ({"response_id": "chatcmpl-nope", "thumb": "up"}, 404, "no recorded response"),
            ({"session_id": "no-such-session", "thumb": "up"}, 404, "no open session"),
            ({"response_id": first["id"], "thumb": "sideways"}, 400, "'thumb' must be"),
            ({"response_id": first["id"]}, 400, "give a thumb"),
            ({"thumb": "up"}, 400, "exactly one of"),
            ({"response_id": first["id"], "thumb": "up", "colour": "red"}, 400, "unknown field"),
            ([1, 2], 400, "JSON object"),
        ]
        for body, status, message in bad:
            response = client.post("/v1/feedback", headers=alice, json=body)
            assert response.status_code == status and message in response.json()["error"]["message"], (
                body, response.text)
        assert client.post("/v1/feedback", headers=alice, content=b"{not json").status_code == 400
        assert client.post("/v1/feedback", headers={"Authorization": "Bearer k-bob"},
                           json={"response_id": first["id"], "thumb": "up"}).status_code == 403
        assert client.post("/v1/feedback", headers={"Authorization": "Bearer k-eve"},
                           json={"response_id": first["id"], "thumb": "up"}).status_code == 401
        assert log_path.read_text() == before  # nothing changed

        # late feedback on the session's last turn once it was judged: a sample with only the explicit signal
        second_id = gateway.tracker.sessions["s1"].last_turn_id
        ask(client, "k-alice", "s1", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "an answer"},
                                      {"role": "user", "content": "hmm"}, {"role": "assistant", "content": "an answer"},
                                      {"role": "user", "content": "fine"}])
        wait_for(lambda: any(t.turn_id == second_id and t.judge.get("prm") for t in received), timeout=20.0)
        late = client.post("/v1/feedback", headers=alice, json={"response_id": second_id, "thumb": "up"}).json()
        assert late["route"].startswith("sent to the trainer on its own")
        extra = [t for t in received if t.turn_id == second_id and "feedback" in t.judge]
        assert len(extra) == 1 and extra[0].judge["feedback"].score == 1.0 and "prm" not in extra[0].judge
        # by session: the session's latest turn (not judged yet: its next state has not arrived)
        by_session = client.post("/v1/feedback", headers=alice, json={"session_id": "s1", "thumb": "up"}).json()
        assert by_session["turn_id"] == gateway.tracker.sessions["s1"].last_turn_id != second_id
        assert by_session["route"] == "replaces the judge's verdict"
    folded = {t.turn_id: t for t in TurnLog(tmp_path / "turns.jsonl").turns()}
    assert folded[turn_id].info["feedback"] == {"response_id": turn_id, "thumb": "down",
                                                "correction": "Answer in French, please."}
