"""LoRA exported to SGLang as adapters (``trainer.lora.export: adapter``), against the server that follows
SGLang 0.5.23's HTTP API (:mod:`tests.sglang_fake`): each published version is a peft directory loaded
with ``POST /load_lora_adapter`` {lora_name, lora_path} under a versioned name, ``/generate`` names it in
``lora_path``, and the previous version goes through ``POST /unload_lora_adapter`` {lora_name}; both
answer ``{success, error_message, loaded_adapters}`` (HTTP 400 on failure), as in SGLang 0.5.23's
``sglang/srt/entrypoints/http_server.py`` and ``sglang/srt/managers/io_struct.py``
(``LoadLoRAAdapterReqInput``, ``UnloadLoRAAdapterReqInput``, ``LoRAUpdateOutput``).

The builder test places the whole partition (torch trainer, SGLang launch, adapter transport) on CPU
and checks the launch command line it builds: LoRA serving flags and the YaRN context window.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json

import httpx
import pytest
import torch
import yaml

from clawgym.inference.models import load_model, load_tokenizer
from clawgym.inference.server import BackgroundServer
from clawgym.inference.sglang import SGLangError, SGLangPolicy, launch_command
from clawgym.rl.launch import load_config
from clawgym.rl.launch.build import build_stack
from clawgym.rl.loop.training import publish_weights
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.trainer.transport import AdapterTransport, TransportError, make_transport, served_weights
from tests.sglang_fake import fake_sglang

SETTINGS = LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj", "down_proj"))


def lora_trainer() -> TorchTrainer:
    model, tokenizer = load_model("tiny-random")
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(lr=1e-2, lora=SETTINGS))
    nudge(trainer, seed=0)
    return trainer


def nudge(trainer: TorchTrainer, seed: int) -> None:
    """Random adapters (peft starts B at 0, which would merge to the base weights)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in trainer.model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.1)


def server_state(url: str) -> dict:
    data = httpx.get(f"{url}/debug/weights", timeout=30).json()["data"]
    return torch.load(io.BytesIO(base64.b64decode(data)), weights_only=True)


def adapter_policy(url: str, tmp_path, settings: LoraSettings = SETTINGS) -> SGLangPolicy:
    policy = SGLangPolicy("tiny-random", base_url=url, tokenizer=load_tokenizer("tiny-random"))
    policy.transport = make_transport("adapter", policy, adapter_dir=tmp_path / "adapters", lora=settings,
                                      base_model="tiny-random")
    return policy


@pytest.fixture(scope="module")
def lora_server():
    app, seen = fake_sglang(load_tokenizer("tiny-random"), max_lora_rank=8)  # --enable-lora --max-lora-rank 8
    with BackgroundServer(app) as url:
        yield url, seen


def test_adapters_load_under_versioned_names_route_generation_and_replace_the_previous(tmp_path, lora_server):
    url, seen = lora_server
    trainer = lora_trainer()
    policy = adapter_policy(url, tmp_path)
    assert isinstance(policy.transport, AdapterTransport)
    assert served_weights(trainer, policy) == trainer.export_adapters  # the loop exports adapters, not merged weights
    from peft import PeftModel

    async def main():
        try:
            await steps()
        finally:
            await policy.close()

    async def steps():
        base = await policy.generate_ids([1, 2, 3])
        assert "lora_path" not in seen[-1] and base.metadata["lora"] is None  # nothing published: the base serves
        version = await policy.update_weights(await asyncio.to_thread(served_weights(trainer, policy)))
        generation = await policy.generate_ids([1, 2, 3])
        assert version == 1 and policy.adapter == "clawgym-v1"
        load = next(b for b in reversed(seen) if "lora_path" in b and "input_ids" not in b)
        assert load == {"lora_name": "clawgym-v1", "lora_path": str(tmp_path / "adapters" / "clawgym-v1")}
        assert seen[-1]["lora_path"] == "clawgym-v1" and generation.metadata["lora"] == "clawgym-v1"
        served = server_state(url)["loras"]
        exported = trainer.export_adapters()
        assert set(served) == {"clawgym-v1"} and set(served["clawgym-v1"]) == set(exported)
        assert all(torch.equal(served["clawgym-v1"][k], exported[k]) for k in exported)  # exact, fp32

        # the directory is a real peft adapter: loaded on the base model and merged, it is the merged export
        merged = PeftModel.from_pretrained(load_model("tiny-random")[0], tmp_path / "adapters" / "clawgym-v1")
        merged = merged.merge_and_unload().state_dict()
        want = trainer.export_weights()
        assert max((merged[k] - want[k]).abs().max().item() for k in want) < 1e-6

        nudge(trainer, seed=1)
        version = await policy.update_weights(await asyncio.to_thread(served_weights(trainer, policy)))
        await policy.generate_ids([1, 2, 3])
        assert version == 2 and seen[-1]["lora_path"] == "clawgym-v2"
        assert {"lora_name": "clawgym-v1"} in seen  # the previous version was unloaded ...
        assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["clawgym-v2"]  # ... and its files removed
        served = server_state(url)["loras"]
        exported = trainer.export_adapters()
        assert set(served) == {"clawgym-v2"} and all(
            torch.equal(served["clawgym-v2"][k], exported[k]) for k in exported)

    try:
        asyncio.run(main())
    finally:
        unload_all(url)


def unload_all(url: str) -> None:
    for name in list(server_state(url)["loras"]):
        httpx.post(f"{url}/unload_lora_adapter", json={"lora_name": name}, timeout=30)


def test_refusals_leave_the_served_adapter_and_version_as_they_were(tmp_path, lora_server):
    url, _ = lora_server
    trainer = lora_trainer()
    too_wide = LoraSettings(r=16, alpha=32, target_modules=("q_proj",))
    wide_trainer = TorchTrainer(load_model("tiny-random")[0], load_tokenizer("tiny-random"),
                                TrainerConfig(lora=too_wide))
    with pytest.raises(ValueError, match="full weights"):
        TorchTrainer(load_model("tiny-random")[0], load_tokenizer("tiny-random"), TrainerConfig()).export_adapters()

    async def refused(policy):
        with pytest.raises(SGLangError, match="exceeds --max-lora-rank 8"):  # HTTP 400 from /load_lora_adapter
            await policy.update_weights(wide_trainer.export_adapters())
        assert policy.adapter is None and policy.version == 0
        assert not (tmp_path / "adapters" / "clawgym-v1").exists()  # the refused version's directory is gone
        with pytest.raises(TransportError, match="LoRA adapters only"):  # merged weights are not adapters
            await policy.update_weights(trainer.export_weights())
        await policy.close()

    asyncio.run(refused(adapter_policy(url, tmp_path, too_wide)))

    async def not_enabled(policy):
        with pytest.raises(SGLangError, match="--enable-lora"):
            await policy.update_weights(trainer.export_adapters())
        assert policy.adapter is None
        await policy.close()

    app, _ = fake_sglang(load_tokenizer("tiny-random"))  # launched without --enable-lora
    with BackgroundServer(app) as plain_url:
        asyncio.run(not_enabled(adapter_policy(plain_url, tmp_path)))


def test_the_builder_launches_sglang_for_adapters_and_the_context_window_and_publishes(
    tmp_path, lora_server, monkeypatch):
    url, seen = lora_server
    model, tokenizer = load_model("tiny-random")
    model.save_pretrained(tmp_path / "ckpt")  # SGLang serves a checkpoint directory
    tokenizer.save_pretrained(tmp_path / "ckpt")
    native = model.config.max_position_embeddings
    data = {
        "method": "grpo",
        "policy": {"backend": "sglang", "model": str(tmp_path / "ckpt"), "context_window": 4 * native},
        "judge": {"type": "rules"},
        "trainer": {"lr": 1e-2, "lora": {"enabled": True, "r": 4, "alpha": 8, "export": "adapter",
                                         "target_modules": ["q_proj", "v_proj"]}},
        "loop": {"output_dir": str(tmp_path / "run")},
        "gpu": {"enabled": True, "backend": "torch+sglang", "gpus_per_node": 1, "actor_gpus": 1, "rollout_gpus": 0,
                "sglang_args": ["--mem-fraction-static", "0.5"]},
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(data))
    launched = []

    def launch(cls, model_path, server_args=(), **kwargs):  # no SGLang here: record the command, attach the test server
        launched.append(launch_command(model_path, 30000, server_args))
        return cls(model_path, url, tokenizer=model_path)

    monkeypatch.setattr(SGLangPolicy, "launch", classmethod(launch))
    stack = build_stack(load_config(tmp_path / "run.yaml"), device="cpu")
    try:
        (command,) = launched
        override = {"max_position_embeddings": 4 * native, "rope_scaling": {
            "rope_type": "yarn", "rope_theta": float(model.config.rope_parameters["rope_theta"]), "factor": 4.0,
            "original_max_position_embeddings": native}}
        assert command[1:] == ["-m", "sglang.launch_server", "--model-path",
                               str(tmp_path / "ckpt"), "--host", "127.0.0.1",
                               "--port", "30000", "--tp-size", "1", "--mem-fraction-static", "0.5", "--enable-lora",
                               "--max-lora-rank", "4", "--lora-target-modules", "q_proj", "v_proj", "--context-length",
                               str(4 * native), "--json-model-override-args",
                               json.dumps(override, separators=(",", ":"))]
        assert stack.plan.transport == "adapter" and isinstance(stack.policy.transport, AdapterTransport)

        async def publish_and_generate():
            await publish_weights(stack.trainer, stack.policy)  # what the loop does after each step
            await stack.policy.generate_ids([1, 2, 3])
            await stack.close()

        asyncio.run(publish_and_generate())
        assert stack.policy.adapter == "clawgym-v1" and seen[-1]["lora_path"] == "clawgym-v1"
        config = json.loads((tmp_path / "run" / "adapters" / "clawgym-v1" / "adapter_config.json").read_text())
        assert (config["r"], config["lora_alpha"], config["base_model_name_or_path"]) == (4, 8, str(tmp_path / "ckpt"))
    finally:
        unload_all(url)
