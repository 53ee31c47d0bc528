"""Weight transports, exact against the trainer's weights: in-process (hf), tensors in the serving dtype
(colocated SGLang), and the NCCL-group path run over gloo with the same code, against a server that
follows SGLang 0.5.23's weight-update API (:mod:`tests.sglang_fake`)."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import torch

from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import load_model
from clawgym.inference.server import BackgroundServer
from clawgym.inference.sglang import SGLangError, SGLangPolicy, free_port
from clawgym.rl.trainer import TorchTrainer, TrainerConfig
from clawgym.rl.trainer.transport import (
    InProcessTransport,
    NcclTransport,
    TensorTransport,
    TransportError,
    buckets,
)
from tests.sglang_fake import fake_sglang

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained():
    """A torch trainer whose weights moved away from the served ones (so a no-op transport fails)."""
    model, tokenizer = load_model("tiny-random")
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(lr=1e-2))
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return trainer, tokenizer


def server_weights(url: str) -> dict:
    data = httpx.get(f"{url}/debug/weights", timeout=30).json()["data"]
    return torch.load(io.BytesIO(base64.b64decode(data)), weights_only=True)


def tensor_policy(url: str, tokenizer, **transport) -> SGLangPolicy:
    """A policy on the fake server at ``url`` that publishes weights as tensors (colocated SGLang)."""
    policy = SGLangPolicy("tiny-random", base_url=url, tokenizer=tokenizer)
    policy.transport = TensorTransport(policy.post, device="cpu", **transport)
    return policy


def test_buckets_split_by_bytes_and_keep_order():
    named = [(f"w{i}", torch.zeros(n)) for i, n in enumerate([10, 10, 30, 5, 100])]  # float32: 4 bytes each
    groups = list(buckets(iter(named), bucket_bytes=80))
    assert [[n for n, _ in g] for g in groups] == [["w0", "w1"], ["w2"], ["w3"], ["w4"]]  # 100 floats go alone
    assert [n for g in groups for n, _ in g] == [n for n, _ in named]


def test_in_process_transport_is_exact(trained):
    trainer, tokenizer = trained
    serve_model, _ = load_model("tiny-random")
    policy = HFPolicy(serve_model, tokenizer)

    async def main():
        try:
            await InProcessTransport(policy).publish(trainer.export_weights(), version=1)
        finally:
            await policy.close()

    asyncio.run(main())
    expected = trainer.export_weights()
    got = serve_model.state_dict()
    assert set(got) == set(expected)
    assert all(torch.equal(got[k], expected[k]) for k in expected)


def test_tensor_transport_sends_buckets_in_the_serving_dtype_exactly(trained):
    trainer, tokenizer = trained
    app, seen = fake_sglang(tokenizer)
    with BackgroundServer(app) as url:
        async def main():
            policy = tensor_policy(url, tokenizer, dtype=torch.bfloat16, tp_ranks=2, bucket_bytes=64 << 10)
            try:
                return await policy.update_weights(trainer.export_weights())
            finally:
                await policy.close()

        version = asyncio.run(main())
        state = server_weights(url)
    expected = trainer.export_weights()
    assert version == 1 and state["version"] == "1"
    assert set(state["weights"]) == set(expected)
    assert all(torch.equal(state["weights"][k], expected[k].to(torch.bfloat16)) for k in expected)
    updates = [b for b in seen if "ranks" in b]
    assert len(updates) > 2 and all(b["ranks"] == 2 for b in updates)  # several buckets, one payload per TP rank
    assert [b["flush_cache"] for b in updates] == [False] * (len(updates) - 1) + [True]
    assert state["flushes"] == 1


def test_tensor_transport_reports_a_refusal(trained):
    trainer, tokenizer = trained
    app, _ = fake_sglang(tokenizer)
    with BackgroundServer(app) as url:
        async def main():
            policy = tensor_policy(url, tokenizer, dtype=torch.float32)  # the server wants bf16
            try:
                with pytest.raises(SGLangError, match="serving dtype"):
                    await policy.update_weights(trainer.export_weights())
                return policy.version
            finally:
                await policy.close()

        assert asyncio.run(main()) == 0  # a refused update does not bump the version


def test_sglang_policy_without_a_transport_says_so(trained):
    trainer, tokenizer = trained

    async def main():
        policy = SGLangPolicy("tiny-random", base_url="http://127.0.0.1:9", tokenizer=tokenizer)
        try:
            await policy.update_weights(trainer.export_weights())
        finally:
            await policy.close()

    with pytest.raises(SGLangError, match="no weight transport"):
        asyncio.run(main())


@pytest.fixture
def sglang_process():
    """The fake SGLang server in its own process: it joins the weight-update group as rank 1."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "tests.sglang_fake", str(port)], cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the fake SGLang server did not start")
        time.sleep(0.2)
    yield url
    process.terminate()
    process.wait(30)


@pytest.mark.slow
def test_nccl_transport_over_gloo_is_exact(trained, sglang_process):
    trainer, tokenizer = trained
    url = sglang_process

    async def main():
        policy = SGLangPolicy("tiny-random", base_url=url, tokenizer=tokenizer)
        transport = NcclTransport(policy.post, "127.0.0.1", free_port(), server_ranks=1, backend="gloo", device="cpu",
                                  bucket_bytes=256 << 10)
        policy.transport = transport
        sent: list[dict] = []
        post = transport.post

        async def recording_post(path, body):
            sent.append({"path": path, **body})
            return await post(path, body)

        transport.post = recording_post
        try:
            first = await policy.update_weights(trainer.export_weights())
            with torch.no_grad():
                for p in trainer.model.parameters():
                    p.mul_(0.5)
            second = await policy.update_weights(trainer.export_weights())  # the group is reused
            return first, second, sent
        finally:
            await policy.close()  # destroys the group on both sides

    first, second, sent = asyncio.run(main())
    state = server_weights(url)
    expected = trainer.export_weights()
    assert (first, second) == (1, 2) and state["version"] == "2"
    assert all(torch.equal(state["weights"][k], expected[k].to(torch.bfloat16)) for k in expected)
    assert set(state["weights"]) == set(expected)
    init = [s for s in sent if s["path"] == "/init_weights_update_group"]
    assert len(init) == 1 and init[0]["rank_offset"] == 1 and init[0]["world_size"] == 2
    updates = [s for s in sent if s["path"] == "/update_weights_from_distributed"]
    assert len(updates) >= 4 and all(set(u["dtypes"]) == {"bfloat16"} for u in updates)
    assert sum(u["flush_cache"] for u in updates) == 2  # once per published version


def test_nccl_transport_reports_a_server_that_never_joined():
    async def main():
        async def refuse(path, body):
            return {"success": False, "message": "Failed to initialize custom process group: boom."}

        transport = NcclTransport(refuse, "127.0.0.1", free_port(), server_ranks=1, backend="gloo", device="cpu",
                                  timeout_s=3)
        await transport.connect()

    with pytest.raises(TransportError, match="did not join the weight-update group: Failed to initialize"):
        asyncio.run(main())
