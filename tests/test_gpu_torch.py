"""The one-GPU path on a real CUDA device: torch trainer, hf policy, checkpoints, ``clawgym train``, and
the judge-only rehearsal through the deployed gateway.

Skipped without CUDA (CI has none). On a GPU machine: ``pytest -m gpu``. The trainer's numbers are
checked against the CPU in float64 (TF32 off), where summation order cannot hide a real difference;
bf16 only has to run, stay finite and land near the fp32 loss. ``CLAWGYM_TEST_DEVICE=cpu`` runs the same
tests on the CPU (CPU against CPU), which checks the tests themselves on a machine without a GPU.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import os

import pytest
import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import build_tiny_random, load_tokenizer
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.trainer.batching import collate, gather_logprobs, response_logits
from clawgym.rl.trainer.samples import render_prompt_ids
from clawgym.rl.types import Sample

DEVICE = os.environ.get("CLAWGYM_TEST_DEVICE", "cuda")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="no CUDA GPU on this machine"),
]

HELLO = [{"role": "user", "content": "Say hello to the user."}]


@pytest.fixture(scope="module", autouse=True)
def exact_matmuls():
    """TF32 would round fp32 matmuls to 10-bit mantissas: the parity checks want the real fp32 / fp64."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.convert_tokens_to_ids("<|im_end|>")]


@torch.no_grad()
def policy_logprobs(model, prompt: list[int], response: list[int]) -> list[float]:
    device = next(model.parameters()).device
    batch = collate([prompt], [response], 0, device)
    return gather_logprobs(response_logits(model, batch), batch.targets)[0].float().tolist()


def judged_samples(tokenizer, model) -> list[Sample]:
    """Two groups of two replies, rewarded +1 / -1, one of each group hinted (hybrid: RL + OPD terms)."""
    prompt_ids = render_prompt_ids(tokenizer, HELLO)
    replies = [("Hello there, friend!", 1.0, "g0", None), ("Go away.", -1.0, "g0", "Be friendly."),
               ("Hi! Nice to meet you.", 1.0, "g1", None), ("No.", -1.0, "g1", "Greet the user warmly.")]
    samples = []
    for text, reward, group, hint in replies:
        response = encode(tokenizer, text)
        samples.append(Sample(prompt_ids=prompt_ids, response_ids=response,
                              old_logprobs=policy_logprobs(model, prompt_ids, response),
                              reward=reward, group_id=group, hint=hint, hint_messages=HELLO if hint else None))
    return samples


def max_weight_diff(a: torch.nn.Module, b: torch.nn.Module) -> float:
    theirs = dict(b.named_parameters())
    return max(float((p.detach().cpu() - theirs[n].detach().cpu()).abs().max()) for n, p in a.named_parameters())


# ---- the torch trainer ---------------------------------------------------------------------------


def test_a_hybrid_step_on_the_gpu_equals_the_cpu_step_in_float64(tokenizer, monkeypatch):
    """Loss, KL, grad norm and the weights after two AdamW steps: the device must not change the math.

    RMSNorm is kept in fp64 (transformers computes it in fp32). RoPE's cos/sin stay fp32 by design, and
    CPU and CUDA round those differently, so the bound is 1e-7 relative, not fp64's 1e-15: a wrong mask,
    position or dtype on the GPU moves these numbers by 1e-3 or more."""
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    from tests.megatron_cpu import float64_rms_norm

    monkeypatch.setattr(Qwen2RMSNorm, "forward", float64_rms_norm(Qwen2RMSNorm.forward))
    config = TrainerConfig(method="hybrid", kl_coef=0.04, lr=1e-3, micro_batch_size=2, grad_accum=2)
    cpu_model = build_tiny_random(len(tokenizer), dtype=torch.float64)
    dev_model = copy.deepcopy(cpu_model).to(DEVICE)
    samples = judged_samples(tokenizer, cpu_model)
    cpu, dev = TorchTrainer(cpu_model, tokenizer, config), TorchTrainer(dev_model, tokenizer, config)
    worst = 0.0
    for _ in range(2):
        a, b = cpu.train_step(copy.deepcopy(samples)), dev.train_step(copy.deepcopy(samples))
        assert b["skipped"] == 0.0 and b["kl"] >= 0.0
        for key in ("loss", "pg_loss", "kl", "grad_norm", "opd_adv_mean", "clip_frac"):
            assert math.isclose(a[key], b[key], rel_tol=1e-7, abs_tol=1e-12), (key, a[key], b[key])
            worst = max(worst, abs(a[key] - b[key]) / max(abs(a[key]), 1e-12))
    weights = max_weight_diff(cpu.model, dev.model)
    print(f"CPU vs {DEVICE} in fp64, two hybrid steps: worst relative metric gap {worst:.1e}, weights {weights:.1e}")
    assert dev.step == 2 and weights < 1e-7
    assert max_weight_diff(cpu.model, cpu._frozen) > 1e-4  # the steps really moved the weights


def test_bf16_lora_hybrid_trains_on_the_gpu_near_the_fp32_loss(tokenizer):
    """The dtype a GPU run uses: finite, close to fp32, base frozen, and the merged export on the device."""
    lora = LoraSettings(r=8, alpha=16)
    config = TrainerConfig(method="hybrid", kl_coef=0.04, lr=1e-3, micro_batch_size=4, lora=lora)
    fp32 = build_tiny_random(len(tokenizer)).to(DEVICE)
    samples = judged_samples(tokenizer, fp32)
    reference = TorchTrainer(fp32, tokenizer, config).train_step(copy.deepcopy(samples))
    bf16 = build_tiny_random(len(tokenizer), dtype=torch.bfloat16).to(DEVICE)
    base_before = {n: p.detach().clone() for n, p in bf16.named_parameters()}
    trainer = TorchTrainer(bf16, tokenizer, config)
    adapters_before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    metrics = trainer.train_step(copy.deepcopy(samples))
    assert metrics["skipped"] == 0.0 and all(math.isfinite(v) for v in metrics.values())
    assert abs(metrics["loss"] - reference["loss"]) < 0.05 * max(1.0, abs(reference["loss"]))
    trained = {n: p for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert any(not torch.equal(trained[n], adapters_before[n]) for n in trained)  # lora_B leaves zero on step 1
    frozen = {n.replace("base_model.model.", "").replace(".base_layer", ""): p
              for n, p in trainer.model.named_parameters() if not p.requires_grad}
    assert all(torch.equal(frozen[n], base_before[n]) for n in base_before if n in frozen)
    exported = trainer.export_weights(device=DEVICE, dtype=torch.bfloat16)
    assert set(exported) == set(dict(build_tiny_random(len(tokenizer)).state_dict()))  # plain HF names, adapters merged
    assert all(t.device.type == torch.device(DEVICE).type and t.dtype == torch.bfloat16 for t in exported.values())


def test_a_checkpoint_written_on_the_gpu_resumes_bit_for_bit(tokenizer, tmp_path):
    """Weights, AdamW moments and the CUDA RNG state come back, so the resumed step equals the unbroken one."""
    config = TrainerConfig(method="grpo", lr=1e-3, micro_batch_size=4)
    model = build_tiny_random(len(tokenizer)).to(DEVICE)
    samples = judged_samples(tokenizer, model)
    trainer = TorchTrainer(model, tokenizer, config)
    trainer.train_step(copy.deepcopy(samples))
    trainer.save_checkpoint(tmp_path / "ckpt")
    unbroken = trainer.train_step(copy.deepcopy(samples))
    resumed = TorchTrainer(build_tiny_random(len(tokenizer)).to(DEVICE), tokenizer, config)
    resumed.load_checkpoint(tmp_path / "ckpt")
    again = resumed.train_step(copy.deepcopy(samples))
    assert again["loss"] == unbroken["loss"] and again["grad_norm"] == unbroken["grad_norm"]
    assert max_weight_diff(trainer.model, resumed.model) == 0.0


# ---- the hf policy ---------------------------------------------------------------------------------


def test_the_hf_policy_on_the_gpu_batches_and_reports_the_trainers_logprobs(tokenizer):
    """Rollout logprobs are what the trainer recomputes on the same device (on-policy), seeds repeat."""
    model = build_tiny_random(len(tokenizer)).to(DEVICE)
    policy = HFPolicy(model, tokenizer)

    async def run():
        batch = await asyncio.gather(
            *[policy.generate(HELLO, sampling=SamplingParams(max_tokens=12, seed=i)) for i in range(6)])
        again = await policy.generate(HELLO, sampling=SamplingParams(max_tokens=12, seed=3))
        await policy.close()
        return batch, again

    generations, again = asyncio.run(run())
    assert policy.stats["max_batch_rows"] > 1  # the six requests really shared forward passes
    assert again.response_ids == generations[3].response_ids
    assert len({tuple(g.response_ids) for g in generations}) > 1  # seeds differ, samples differ
    for generation in generations:
        want = policy_logprobs(model, generation.prompt_ids, generation.response_ids)
        assert max(abs(a - b) for a, b in zip(want, generation.response_logprobs)) < 1e-4


# ---- the products on one GPU -------------------------------------------------------------------------


def test_clawgym_train_runs_on_one_gpu(tmp_path, capsys):
    from clawgym import cli
    from tests.loop_envs import PARITY_SPEC

    out = tmp_path / "run"
    config = tmp_path / "gpu.yaml"
    config.write_text(f"""
method: grpo
env: {{id: "{PARITY_SPEC}", kwargs: {{split: train}}, eval_kwargs: {{split: test}}}}
policy: {{model: tiny-random, device: {DEVICE}, dtype: bfloat16}}
judge: {{type: rules}}
rollout: {{workers: 8, group_size: 4, max_tokens: 8}}
trainer: {{lr: 1.0e-3, micro_batch_size: 8}}
loop: {{steps: 2, batch_groups: 2, buffer_groups: 4, eval_after: true, eval_episodes: 2, output_dir: "{out}"}}
""")
    assert cli.main(["train", str(config), "--check"]) == 0
    assert ("one-gpu" if DEVICE == "cuda" else "cpu") in capsys.readouterr().out
    assert cli.main(["train", str(config)]) == 0
    assert "trained 2 steps (policy version 2)" in capsys.readouterr().out
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records] == ["train", "train", "eval"]


@pytest.mark.slow
def test_the_judge_only_rehearsal_trains_through_the_gateway_on_the_gpu(tmp_path):
    """Simulated users -> gateway -> turn log -> prob/probhint judge -> personal trainer, all on the device."""
    from clawgym import launchers
    from clawgym.rl.launch import load_config
    from clawgym.serve import rehearsal

    config = load_config(launchers.resolve("chat"), [
        "policy.model=tiny-random", f"policy.device={DEVICE}", "method=hybrid", "judge.type=prob,probhint",
        f"loop.output_dir={tmp_path}", "serve.batch_size=2", "trainer.micro_batch_size=2", "serve.hindsight_k=0"])
    result = asyncio.run(rehearsal.rehearse(config, persona="teacher", steps=2, users=2, max_turns=2,
                                            max_tokens=8, eval_tasks=2))
    assert result.steps >= 2 and result.judged >= 4
    assert 0.0 <= result.before <= 1.0 and 0.0 <= result.after <= 1.0
