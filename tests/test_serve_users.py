"""Many users, one base model, through the real gateway: per-user adapters, 401/403, the dashboard in
real Chromium, forgetting a user durably, and a restart."""

from __future__ import annotations

import httpx
import pytest
import torch

from clawgym.inference.server import BackgroundServer
from clawgym.rl.launch import load_config
from clawgym.serve.main import build_serving
from tests.test_chat_serve import ThanksIsGood, config_file
from tests.waiting import wait_for

KEYS = {"k-alice": "alice", "k-bob": "bob"}
ADMIN = "k-admin"


TRAINER = {"lr": 5e-2, "micro_batch_size": 2, "advantage": "raw",
           "lora": {"enabled": True, "r": 4, "alpha": 8, "target_modules": ["q_proj", "v_proj"]}}


def serve(tmp_path):
    config = config_file(tmp_path, trainer=TRAINER,
                         serve_base={"adapters": "per_user", "users": KEYS, "admin_key": ADMIN}, max_users=4)
    serving = build_serving(load_config(config))
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    return serving


def chat(client, key, session, messages, **extra):
    return client.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}", "X-Session-Id": session},
                       json={"model": "m", "messages": messages, "max_tokens": 8, **extra})


def conversation(client, key, session, replies):
    """A session in which the user answers each reply with ``replies`` in turn ("thanks" judges it +1,
    "no, ..." -1; a step needs verdicts that differ, as the batch baseline leaves agreeing ones nothing)."""
    messages = [{"role": "user", "content": f"{session}: hello"}]
    for reply in replies:
        answer = chat(client, key, session, messages).json()["choices"][0]["message"]["content"]
        messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": reply}]
    chat(client, key, session, messages)


def test_each_users_turns_train_only_their_adapter_and_forgetting_is_durable(tmp_path):
    serving = serve(tmp_path)
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=60) as client:
        # bad keys and someone else's adapter
        assert chat(client, "k-mallory", "s0", [{"role": "user", "content": "hi"}]).status_code == 401
        denied = chat(client, "k-alice", "s0", [{"role": "user", "content": "hi"}], model="adapter:bob")
        assert denied.status_code == 403 and "not yours" in denied.json()["error"]["message"]
        assert client.delete("/v1/users/bob", headers={"Authorization": "Bearer k-alice"}).status_code == 403

        conversation(client, "k-bob", "b1", ["ok"])  # bob: one turn, no verdict worth training
        bob_slot = serving.adapters.slot("bob")
        bob_before = serving.policy.bank.state(bob_slot)
        conversation(client, "k-alice", "a1", ["thanks!", "no, shorter"])  # alice: a +1 and a -1 turn -> a step
        wait_for(lambda: serving.trainer.steps["alice"] == 1, timeout=60.0)
        alice = serving.policy.bank.state(serving.adapters.slot("alice"))
        assert any(torch.count_nonzero(v) for k, v in alice.items() if "lora_B" in k)
        bob_after = serving.policy.bank.state(bob_slot)
        assert all(torch.equal(bob_before[k], bob_after[k]) for k in bob_before)  # bitwise untouched

        data = client.get("/dashboard/data", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        assert data["users"]["alice"]["steps"] == 1 and data["users"]["alice"]["adapter_version"] == 1
        assert (data["users"]["alice"]["verdicts"]["+1"] == 1 and data["users"]["alice"]["verdicts"]["-1"] == 1
                and data["users"]["bob"]["turns"] == 2)
        assert client.get("/dashboard/data").status_code == 401
        wishes = client.get("/v1/wishes", headers={"Authorization": "Bearer k-alice"}).json()["wishes"]
        assert [w["text"] for w in wishes] == ["shorter"] and data["users"]["alice"]["wishes"][0]["text"] == "shorter"

        forgotten = client.delete("/v1/users/alice", headers={"Authorization": f"Bearer {ADMIN}"})
        assert forgotten.status_code == 200 and forgotten.json()["adapter_deleted"] is True
        assert forgotten.json()["log_events_deleted"] >= 3 and forgotten.json()["wishes_deleted"] == 1
        assert client.get("/v1/wishes?user=alice", headers={"Authorization": f"Bearer {ADMIN}"}).json()["wishes"] == []
    log_text = (tmp_path / "run" / "turns.jsonl").read_text()
    assert "a1: hello" not in log_text and "b1: hello" in log_text and "shorter" not in log_text
    assert not (tmp_path / "run" / "adapters" / "alice").exists()
    assert '"alice"' not in (tmp_path / "run" / "train_steps.jsonl").read_text()
    serving.gateway.log.close()

    again = serve(tmp_path)  # a restart on the same directory: alice stays forgotten, bob is back
    users = {t.info.get("user") for t in again.gateway.log.turns()}
    assert users == {"bob"} and "alice" not in again.adapters.slots and "alice" not in again.dashboard.data()["users"]
    assert again.wishes.texts("alice") == []
    again.gateway.log.close()


def test_the_dashboard_shows_a_new_turn_and_a_published_step_in_chromium(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    serving = serve(tmp_path)
    with BackgroundServer(serving.app) as url, httpx.Client(base_url=url, timeout=60) as client, \
            playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{url}/dashboard?key={ADMIN}")
            page.wait_for_selector("#status:has-text('no turns yet')")
            chat(client, "k-alice", "a1", [{"role": "user", "content": "a1: hello"}])
            card = page.wait_for_selector("[data-user=alice]", timeout=15000)
            assert "turns: 1" in card.inner_text()
            conversation(client, "k-alice", "a2", ["thanks!", "no, shorter"])
            page.wait_for_selector("[data-user=alice] [data-stat='adapter version']:has-text('adapter "
                                   "version: 1')", timeout=60000)
            assert "train steps: 1" in page.inner_text("[data-user=alice]")
            assert page.query_selector("[data-user=alice] svg polyline") is not None  # the verdict curve is drawn
        finally:
            browser.close()
    serving.gateway.log.close()
