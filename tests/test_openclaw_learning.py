"""The product's scenario in small: the real OpenClaw client on its *default* profile (~12.5k-token requests,
12 tools) talks to `clawgym serve --config chat` (the shipped recipe: hindsight groups, the OPD teacher, the
publish gate, the frozen prompt) on the tiny random model, a person corrects a reply in their own words, and
the loop closes: the correction becomes a wish, the turn a hindsight group under OpenClaw's real prompt, a
train step runs with OpenClaw's system prompt run once without gradients, and the gate decides what serves.
The learning itself is measured on the default model by benchmarks/openclaw_learning.py."""

from __future__ import annotations

import json
import time

import pytest

from clawgym.inference.server import BackgroundServer
from clawgym.launchers import resolve
from clawgym.rl.launch import load_config
from clawgym.serve.main import build_serving
from tests.openclaw_harness import OpenClawUnavailable, default_profile_config, openclaw_gateway
from tests.requirements import require_command

pytestmark = pytest.mark.slow
CORRECTION = "Please just answer me in plain words, not JSON or code."


def wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_a_correction_through_the_real_openclaw_becomes_a_wish_a_group_and_a_train_step(tmp_path):
    require_command("npm", "apt-get install npm; the OpenClaw client comes from npm")
    out = tmp_path / "run"
    # the shipped recipe, made small: the tiny model, short replies, one group of 4 a step
    config = load_config(resolve("chat"), [
        "policy.model=tiny-random", f"loop.output_dir={out}", "serve.max_tokens=24", "rollout.max_tokens=24",
        "serve.batch_size=4", "trainer.micro_batch_size=4", "policy.context_window=16384"])
    assert config.trainer.frozen_prompt_above == 1024 and config.serve.gate.enabled
    serving = build_serving(config)
    server = BackgroundServer(serving.app)
    server.start()
    try:
        with openclaw_gateway(tmp_path / "openclaw", server.url + "/v1", "sk-clawgym-local",
                              template=default_profile_config(), timeout_s=600.0) as openclaw:
            said = ["What is a good way to keep basil alive on a windowsill?", CORRECTION, "Thanks.",
                    "How often should I water a cactus?", CORRECTION]
            replies = [openclaw.chat("person-1" if i < 3 else "person-2", text) for i, text in enumerate(said)]
            assert all(isinstance(r, str) for r in replies)
            steps = out / "train_steps.jsonl"
            assert wait_for(lambda: steps.exists() and steps.read_text().strip(), 900), "no train step ran"
    except OpenClawUnavailable as exc:
        pytest.fail(f"OpenClaw could not run: {exc}")
    finally:
        server.stop()
    serving.gateway.log.flush()
    turns = serving.gateway.log.turns()
    assert len({t.session_id for t in turns}) == 2 and len(turns) >= len(said)
    assert all(len(t.prompt_ids) > 8000 for t in turns)  # OpenClaw's default profile: its whole prompt, as sent
    users = serving.wishes.users()
    wishes = [w.text for user in users for w in serving.wishes.wishes(user)]
    assert any("plain words" in w for w in wishes), wishes  # the person's words, remembered
    events = [json.loads(line) for line in (out / "turns.jsonl").read_text().splitlines() if line.strip()]
    groups = [e for e in events if e["event"] == "hindsight_group"]
    assert groups and all(g["wishes"] for g in groups)
    (step, *_) = [json.loads(line) for line in steps.read_text().splitlines() if line.strip()]
    # OpenClaw's system prompt ran once without gradients and served the group's other replies
    assert step["frozen_prompt_tokens"] > 8000 and step["samples"] == 4
    assert "published" in step and ("gate" in step)  # the gate decided what serves, and said so
