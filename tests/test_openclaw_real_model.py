"""The real OpenClaw client with the real default model (Qwen2.5-Coder-0.5B on the CPU), configured exactly
as the README's "Recipe 3: use it with OpenClaw" says: full replies over several turns, the prefix cache making
later turns cheap, and every request inside the model's 32,768-token window."""

from __future__ import annotations

import datetime
import shutil
import time

import httpx
import pytest
import torch

from clawgym.inference.server import BackgroundServer
from clawgym.launchers import resolve
from clawgym.rl.launch import load_config
from clawgym.serve.main import build_serving
from clawgym.serve.turn_log import TurnLog
from tests.openclaw_harness import OpenClawUnavailable, openclaw_gateway, readme_config

pytestmark = pytest.mark.slow
torch.set_num_threads(1)  # on a shared CPU, two torch threads thrash (turn 1: >600 s vs 177 s at load ~25)


@pytest.fixture(scope="module")
def real_stack(tmp_path_factory):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed, so the OpenClaw client cannot be installed (apt-get install npm)")
    root = tmp_path_factory.mktemp("openclaw-real")
    config = load_config(resolve("chat"),
                         ["serve.train=false", "method=grpo", "judge.type=rules", f"loop.output_dir={root / 'run'}"])
    serving = build_serving(config)
    server = BackgroundServer(serving.app)
    server.start()
    try:
        with openclaw_gateway(root / "openclaw", server.url + "/v1", "sk-clawgym-local", template=readme_config(),
                              timeout_s=600.0) as openclaw:
            yield openclaw, serving, server
    except OpenClawUnavailable as exc:
        pytest.fail(f"OpenClaw could not run: {exc}")
    finally:
        server.stop()


def test_readme_config_talks_to_the_default_model_for_three_full_turns(real_stack):
    openclaw, serving, server = real_stack
    models = httpx.get(server.url + "/v1/models").json()["data"][0]
    config = readme_config()["models"]["providers"]["clawgym"]["models"][0]
    assert models["id"] == config["id"] == "qwen2.5-coder-0.5b"  # the README's model is the served default
    assert models["context_window"] == config["contextWindow"] == 32768  # the README says what /v1/models says
    assert config["maxTokens"] <= models["max_output_tokens"]
    first_day = datetime.date.today()
    replies = [openclaw.chat("A", "Hi! Can you suggest a name for my new cat?"),
               openclaw.chat("B", "What is a good way to start learning Python?"),
               openclaw.chat("A", "Why do you like that name?")]
    crossed_midnight = datetime.date.today() != first_day
    assert all(reply.strip() for reply in replies), replies
    deadline = time.monotonic() + 10
    while serving.gateway.stats.main_turns < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    serving.gateway.log.flush()
    turns = TurnLog(serving.gateway.log.path).turns()
    assert len(turns) >= 3 and len({t.session_id for t in turns}) == 2
    for turn in turns:  # full replies: at least 20 tokens unless the model ended the answer itself
        stopped = turn.response_ids[-1] in serving.policy.stop_ids  # the model ended its answer itself
        assert len(turn.response_ids) >= 20 or stopped, turn.info
        assert len(turn.prompt_ids) + len(turn.response_ids) <= 32768
    # OpenClaw's system prompt is the same for every session of a day: every later turn reuses thousands of
    # prefix tokens. It states the date ("Current date: ..." about 1,500 tokens in), so a run that crosses
    # midnight (the host's time zone, OpenClaw's default) shares only what comes before that line.
    floor = 1000 if crossed_midnight else 2000
    # the first turn reads its prompt afresh, unless the call guard answered it again in words (clawgym/serve/
    # call_guard.py): then the first attempt had read it, and the answer recorded reuses it
    first = turns[0]
    if "call_guard" in first.info:
        assert first.info["reused_prefix_tokens"] > floor, first.info
    else:
        assert first.info["reused_prefix_tokens"] == 0
    assert all(t.info["reused_prefix_tokens"] > floor for t in turns[1:]), [
        t.info["reused_prefix_tokens"] for t in turns]
