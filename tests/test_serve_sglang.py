"""``clawgym serve`` with the sglang backend, on CPU, against the server that follows SGLang 0.5.23's HTTP API
(:mod:`tests.sglang_fake`, whose docstring cites the endpoints and their shapes).

``build_serving`` places the policy, torch trainer and weight transport through the same builder as
``clawgym train`` (``device="cpu"`` runs the partition's code without a GPU): a chat turn goes through
the gateway to SGLang's ``/generate``, judged turns train the personal trainer, and the trained weights
must arrive at the server (``/update_weights_from_tensor``) exactly, in the serving dtype.
"""

from __future__ import annotations

import asyncio
import base64
import io
import time

import httpx
import openai
import pytest
import torch
import yaml

from clawgym import cli
from clawgym.inference.models import load_tokenizer
from clawgym.inference.server import BackgroundServer
from clawgym.rl.launch import ConfigError, load_config
from clawgym.rl.trainer.transport import NcclTransport
from clawgym.rl.types import Sample, read_jsonl
from clawgym.serve.main import build_serving
from tests.sglang_fake import SERVING_DTYPE, fake_sglang
from tests.test_chat_serve import ThanksIsGood
from tests.test_weight_transport import sglang_process  # noqa: F401  (the test server in its own process)


@pytest.fixture(scope="module")
def sglang_server():
    app, seen = fake_sglang(load_tokenizer("tiny-random"))
    with BackgroundServer(app) as url:
        yield url, seen


def sglang_config(tmp_path, url, judge="rules", serve=None, gpu=None):
    """One GPU, SGLang colocated with the torch trainer (weights as tensors), the server attached at ``url``."""
    data = {
        "method": "grpo",
        "env": {"id": "clawgym/OpenClawChat-v0"},
        "policy": {"backend": "sglang", "model": "tiny-random", "base_url": url},
        "judge": {"type": judge},
        "trainer": {"lr": 1e-2, "micro_batch_size": 2, "lora": {"enabled": False}},
        "loop": {"output_dir": str(tmp_path / "run")},
        "gpu": {"enabled": True, "backend": "torch+sglang", "gpus_per_node": 1, "actor_gpus": 1, "rollout_gpus": 0,
                **(gpu or {})},
        "serve": {"api_key": "k", "batch_size": 2, "max_tokens": 64, **(serve or {})},
    }
    path = tmp_path / "chat.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def server_weights(url):
    data = httpx.get(f"{url}/debug/weights", timeout=30).json()["data"]
    return torch.load(io.BytesIO(base64.b64decode(data)), weights_only=True)


def test_turns_are_served_by_sglang_and_trained_weights_reach_it(tmp_path, sglang_server):
    url, seen = sglang_server
    serving = build_serving(load_config(sglang_config(tmp_path, url)), device="cpu")
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    trainer = serving.trainer.trainer
    before = {name: t.clone() for name, t in trainer.export_weights().items()}
    with BackgroundServer(serving.app) as gateway_url:
        api = openai.OpenAI(base_url=gateway_url + "/v1", api_key="k", max_retries=0)

        def chat(user, messages):
            return api.chat.completions.create(model="m", messages=messages, user=user,
                                               max_tokens=64).choices[0].message

        # the test server always calls the tool `add`: its result is the next state
        def reply(user, first, answer, result):
            call = answer.model_dump(exclude_none=True)
            chat(user, [first, call, {"role": "tool", "tool_call_id": answer.tool_calls[0].id, "content": result}])

        generated = len([b for b in seen if "input_ids" in b])
        first_a, first_b = {"role": "user", "content": "hi"}, {"role": "user", "content": "hey"}
        a1 = chat("alice", [first_a])
        assert len([b for b in seen if "input_ids" in b]) == generated + 1  # answered through SGLang's /generate
        assert seen[-1]["sampling_params"]["max_new_tokens"] == 64 and seen[-1]["return_logprob"] is True
        assert [c.function.name for c in a1.tool_calls] == ["add"]
        b1 = chat("bob", [first_b])
        reply("alice", first_a, a1, "thanks!")
        reply("bob", first_b, b1, "no, wrong")
        steps_file = tmp_path / "run" / "train_steps.jsonl"
        deadline = time.monotonic() + 60
        while not steps_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    (step,) = list(read_jsonl(steps_file))
    assert step["samples"] == 2 and step["policy_version"] == 1 and serving.policy.version == 1
    updates = [b for b in seen if "ranks" in b]
    assert updates and updates[-1]["flush_cache"] is True and updates[-1]["weight_version"] == "1"
    served = server_weights(url)
    assert served["version"] == "1"
    trained = trainer.export_weights()
    assert set(served["weights"]) == set(trained)
    for name, tensor in trained.items():
        assert served["weights"][name].dtype == SERVING_DTYPE
        assert torch.equal(served["weights"][name], tensor.to(SERVING_DTYPE)), name
    assert any(not torch.equal(before[n], trained[n]) for n in trained)  # the step moved the weights

    # a restart on the same run directory: the restored weights reach the server before anyone is answered
    serving.gateway.log.close()
    again = build_serving(load_config(tmp_path / "chat.yaml"), device="cpu")
    marker = len(seen)
    with BackgroundServer(again.app) as gateway_url:
        api = openai.OpenAI(base_url=gateway_url + "/v1", api_key="k", max_retries=0)
        api.chat.completions.create(model="m", messages=[{"role": "user", "content": "back"}],
                                    user="carol", max_tokens=8)
    kinds = ["update" if "ranks" in b else "generate" if "input_ids" in b else "other" for b in seen[marker:]]
    assert kinds == ["update", "generate"] and again.policy.version == 1
    restored = server_weights(url)["weights"]
    assert all(torch.equal(restored[n], t.to(SERVING_DTYPE)) for n, t in again.trainer.trainer.export_weights().items())


def test_a_restart_keeps_training_where_the_trainer_left_off_on_sglang(tmp_path, sglang_server):
    """Restarted on a run whose trainer is at version 5, SGLang serves the restored weights as version 5,
    so new turns are fresh and train (counting from 1 again made them stale, never trained)."""
    url, seen = sglang_server
    config = load_config(sglang_config(tmp_path, url))
    before = build_serving(config, device="cpu")
    before.trainer.trainer.version = 5  # as after five steps
    before.trainer.trainer.save_checkpoint(tmp_path / "run" / "checkpoint")
    before.gateway.log.close()
    serving = build_serving(config, device="cpu")
    serving.gateway.judge_stage.judges = [ThanksIsGood()]
    marker = len(seen)
    with BackgroundServer(serving.app) as gateway_url:
        api = openai.OpenAI(base_url=gateway_url + "/v1", api_key="k", max_retries=0)
        for user, result in (("alice", "thanks!"), ("bob", "no, wrong")):
            first = {"role": "user", "content": "hi"}
            answer = api.chat.completions.create(model="m", messages=[first], user=user,
                                                 max_tokens=64).choices[0].message
            api.chat.completions.create(model="m", user=user, max_tokens=64, messages=[
                first, answer.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": answer.tool_calls[0].id, "content": result}])
        deadline = time.monotonic() + 60
        while (serving.trainer.steps < 1 or serving.trainer.busy) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert serving.trainer.steps == 1 and serving.trainer.refused["stale"] == 0, serving.trainer.refused
    assert [b["weight_version"] for b in seen[marker:] if "ranks" in b] == ["5", "6"]
    assert serving.policy.version == serving.trainer.trainer.version == 6
    serving.gateway.log.flush()
    assert {t.policy_version for t in serving.gateway.log.turns()} == {5}


@pytest.mark.slow
def test_sglang_on_its_own_gpus_gets_the_trained_weights_over_the_nccl_group(tmp_path, sglang_process):  # noqa: F811
    """Disaggregated (rollout_gpus: 1): the plan's NCCL path, run over gloo with the same code."""
    url = sglang_process
    path = sglang_config(tmp_path, url, gpu={"gpus_per_node": 2, "rollout_gpus": 1, "bucket_mb": 1})
    serving = build_serving(load_config(path), device="cpu")
    transport = serving.policy.transport
    assert isinstance(transport, NcclTransport) and transport.backend == "gloo"
    tokens = serving.policy.tokenizer("a tiny reply", add_special_tokens=False)["input_ids"]
    serving.trainer.pending = [Sample(prompt_ids=[1, 2, 3], response_ids=tokens, old_logprobs=[-1.0] * len(tokens),
                                      reward=r, advantage=r, turn_id=f"t{i}") for i, r in enumerate((1.0, -1.0))]

    async def step():
        try:
            return await serving.trainer.train_once()
        finally:
            await serving.policy.close()  # leaves the weight-update group on both sides

    record = asyncio.run(step())
    assert record["policy_version"] == 1 and record["trained"] == ["t0", "t1"]
    served = server_weights(url)
    trained = serving.trainer.trainer.export_weights()
    assert served["version"] == "1" and set(served["weights"]) == set(trained)
    assert all(torch.equal(served["weights"][n], t.to(SERVING_DTYPE)) for n, t in trained.items())


def test_serve_check_prints_where_the_model_is_served_and_how_weights_travel(tmp_path, sglang_server, capsys):
    url, _ = sglang_server
    assert cli.main(["serve", "--config", str(sglang_config(tmp_path, url)), "--check"]) == 0
    printed = capsys.readouterr().out
    assert "placement: partition" in printed and "weights  tensor:" in printed
    assert f"the SGLang server at {url} (attached)" in printed
    path = sglang_config(tmp_path, None, gpu={"gpus_per_node": 2, "rollout_gpus": 1})
    assert cli.main(["serve", "--config", str(path), "--check"]) == 0
    printed = capsys.readouterr().out
    assert "weights  nccl:" in printed and "SGLang server launched on the rollout GPUs" in printed


@pytest.mark.parametrize("change, message", [
    ({"serve": {"adapters": "per_user"}, "trainer": {"lora": {"enabled": True}}},
     "per_user needs the in-process hf policy"),
    ({"judge": {"type": "prob,probhint"}}, "reads label probabilities from an in-process hf model"),
    ({"trainer": {"teacher": "judge"}, "method": "opd", "judge": {"type": "hint", "model": "smollm2-135m"},
      "gpu": {"judge_gpus": 1, "gpus_per_node": 2}}, "the judge is an SGLang server that returns no teacher"),
    ({"gpu": {"enabled": False}}, "needs the gpu section"),
])
def test_what_the_sglang_backend_cannot_serve_is_refused_with_why(tmp_path, sglang_server, change, message, capsys):
    url, _ = sglang_server
    path = sglang_config(tmp_path, url)
    data = yaml.safe_load(path.read_text())
    for key, value in change.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=message):
        build_serving(load_config(path), device="cpu")
    assert cli.main(["serve", "--config", str(path), "--check"]) == 2
    assert message in capsys.readouterr().err
