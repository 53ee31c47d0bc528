"""The megatron trainer with and without LoRA against the torch trainer, over gloo on CPU (TP=2, PP=2),
and the LoRA adapters' layout and sharding rules on their own.

The parallel runs start 2 processes of tests/megatron_parity.py (megatron-core's real GPTModel, DDP,
optimizer and pipeline schedule; the CUDA-only spots redirected by tests/megatron_cpu.py in those
processes only). Both trainers compute in float64 (``MegatronConfig(float64=True)``, the HF model loaded
in fp64, and the fp32 upcasts of both libraries kept at fp64 by ``tests.megatron_cpu.allow_float64``), so
fp32 summation order cannot hide a gap: loss, KL, clip fraction, grad norm, every gradient tensor
(compared element by element in HF/peft names) and the weights after two AdamW steps must agree to 1e-6.
Measured (TP=2 and PP=2, full and LoRA): every gap at most 2e-14 (loss 6e-16, grads 1.4e-15); in fp32
the same runs differed by up to 1.2e-6 on the tied embedding's grad, which is why they run in fp64.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from clawgym.rl.trainer import LoraSettings, TrainerConfig
from clawgym.rl.trainer import megatron_lora as L
from clawgym.rl.trainer.megatron_convert import ModelShape, fuse_gate_up, fuse_qkv

HAS_MEGATRON = (importlib.util.find_spec("megatron") is not None
                and importlib.util.find_spec("megatron.core") is not None)
needs_megatron = pytest.mark.skipif(not HAS_MEGATRON,
                                    reason="megatron-core is not installed (pip install megatron-core)")
ROOT = Path(__file__).resolve().parents[1]
SHAPE = ModelShape(num_layers=2, hidden_size=16, num_heads=4, num_kv_heads=2, head_dim=4, ffn_hidden_size=24,
                   vocab_size=50, tie_embeddings=True)


def _adapter(linear: str, chosen, tp_size: int = 1) -> L.LoraAdapter:
    kind, parts = L.LORA_LINEARS[linear]
    sizes = L._part_sizes(linear, SHAPE)
    local = {p: (o // tp_size, i) if kind == "column" else (o, i // tp_size) for p, (o, i) in sizes.items()}
    groups = (SHAPE.num_kv_heads // tp_size, 2 * SHAPE.head_dim, SHAPE.head_dim) if linear.endswith("qkv") else None
    adapter = L.LoraAdapter(kind, local, chosen, r=3, scale=2.0, qkv_groups=groups, dtype=torch.float32,
                            device=torch.device("cpu"), tp_size=tp_size)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in adapter.parameters():
            param.copy_(torch.randn(param.shape, generator=generator))
    return adapter


@needs_megatron
def test_fused_qkv_adapter_lays_out_q_k_v_per_query_group_like_the_base_weight():
    adapter = _adapter("self_attention.linear_qkv", ["q", "v"])  # k not targeted: its rows get no delta
    delta = {p: 2.0 * getattr(adapter, f"B_{p}") @ getattr(adapter, f"A_{p}") for p in ("q", "v")}
    zeros_k = torch.zeros(SHAPE.num_kv_heads * SHAPE.head_dim, SHAPE.hidden_size)
    want = fuse_qkv(delta["q"], zeros_k, delta["v"], SHAPE)
    assert torch.allclose(adapter.delta_weight(), want, atol=1e-6)
    x = torch.randn(5, 2, SHAPE.hidden_size)  # [s, b, h] as megatron feeds it
    assert torch.allclose(adapter.delta_output(x), x @ want.T, atol=1e-5)
    adapter_fc1 = _adapter("mlp.linear_fc1", ["gate", "up"])
    gate, up = (2.0 * getattr(adapter_fc1, f"B_{p}") @ getattr(adapter_fc1, f"A_{p}") for p in ("gate", "up"))
    assert torch.allclose(adapter_fc1.delta_weight(), fuse_gate_up(gate, up), atol=1e-6)


@needs_megatron
def test_sharding_rule_column_splits_b_rows_row_splits_a_columns():
    column = _adapter("self_attention.linear_qkv", ["q", "k", "v"], tp_size=2)
    assert column.B_q.shape == (SHAPE.num_heads * SHAPE.head_dim // 2, 3) and column.A_q.shape == (3, SHAPE.hidden_size)
    assert column.B_q.tensor_model_parallel and column.B_q.partition_dim == 0 and not column.A_q.tensor_model_parallel
    row = _adapter("mlp.linear_fc2", ["down"], tp_size=2)
    assert row.A_down.shape == (3, SHAPE.ffn_hidden_size // 2) and row.B_down.shape == (SHAPE.hidden_size, 3)
    assert row.A_down.tensor_model_parallel and row.A_down.partition_dim == 1 and not row.B_down.tensor_model_parallel
    a, b = torch.randn(3, 8), torch.randn(8, 3)
    name = "decoder.layers.1.mlp.linear_fc2_lora."
    assert torch.equal(L.lora_tp_merge(name + "A_down", [a, b.T]), torch.cat([a, b.T], dim=1))
    assert torch.equal(L.lora_tp_merge(name + "B_down", [b, b + 1]), b)  # whole on every rank: the first copy
    assert L.lora_merged_shape(name + "A_down", (3, 12), 2) == (3, 24)
    assert L.megatron_to_peft_name("decoder.layers.3.self_attention.linear_qkv_lora.B_k") == \
        "base_model.model.model.layers.3.self_attn.k_proj.lora_B.weight"
    with pytest.raises(KeyError, match="not a LoRA adapter"):
        L.megatron_to_peft_name("decoder.layers.3.self_attention.linear_qkv.weight")


@needs_megatron
def test_loading_peft_adapters_takes_this_ranks_slice_and_refuses_mismatches():
    adapters = {
        "decoder.layers.0.self_attention.linear_qkv_lora": _adapter("self_attention.linear_qkv", ["q", "v"], tp_size=2)}
    prefix = "base_model.model.model.layers.1.self_attn."  # stage-local layer 0 is global layer 1 (layer_offset=1)
    whole = {f"{prefix}q_proj.lora_A.default.weight": torch.randn(3, 16),
             f"{prefix}q_proj.lora_B.default.weight": torch.randn(16, 3),
             f"{prefix}v_proj.lora_A.weight": torch.randn(3, 16), f"{prefix}v_proj.lora_B.weight": torch.randn(8, 3),
             # another stage's: ignored
             "base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight": torch.randn(3, 16)}
    L.load_peft_adapters(adapters, whole, tp_rank=1, tp_size=2, layer_offset=1)
    adapter = adapters["decoder.layers.0.self_attention.linear_qkv_lora"]
    # A whole on a column-parallel linear
    assert torch.equal(adapter.A_q, whole[f"{prefix}q_proj.lora_A.default.weight"])
    assert torch.equal(adapter.B_v, whole[f"{prefix}v_proj.lora_B.weight"][4:])  # B: rank 1's half of the output rows
    with pytest.raises(KeyError, match="missing for 1 parameters"):
        L.load_peft_adapters(adapters, {k: v for k, v in whole.items() if "v_proj.lora_B" not in k}, 1, 2, 1)
    with pytest.raises(KeyError, match="not targeted"):
        L.load_peft_adapters(adapters, {**whole, f"{prefix}k_proj.lora_A.weight": torch.randn(3, 16)}, 1, 2, 1)
    with pytest.raises(ValueError, match="does not fit"):
        L.load_peft_adapters(adapters, {**whole, f"{prefix}q_proj.lora_A.default.weight": torch.randn(5, 16)}, 1, 2, 1)


def test_megatron_config_takes_lora_and_refuses_what_it_does_not_implement():
    from clawgym.rl.trainer.megatron_setup import MegatronConfig

    assert MegatronConfig(trainer=TrainerConfig(lora=LoraSettings(r=8))).trainer.lora.r == 8
    with pytest.raises(ValueError, match="transformer_engine: false"):
        MegatronConfig(transformer_engine=True, trainer=TrainerConfig(lora=LoraSettings()))
    with pytest.raises(ValueError, match="dropout"):
        MegatronConfig(trainer=TrainerConfig(lora=LoraSettings(dropout=0.1)))
    with pytest.raises(ValueError, match="not linears"):
        MegatronConfig(trainer=TrainerConfig(lora=LoraSettings(target_modules=("q_proj", "c_attn"))))
    assert MegatronConfig(bf16=False, float64=True).params_dtype == torch.float64  # the parity runs' precision
    assert (MegatronConfig().params_dtype, MegatronConfig(bf16=False).params_dtype) == (torch.bfloat16, torch.float32)
    with pytest.raises(ValueError, match="bf16=False for float64"):
        MegatronConfig(float64=True)


# ---- the whole trainer over gloo ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_parity(tmp_path: Path, tp: int, pp: int) -> dict:
    from transformers import AutoModelForCausalLM

    from clawgym.inference.models import load_tokenizer, tiny_random_config

    tokenizer = load_tokenizer("tiny-random")  # cached before two processes want it
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # no pad_token_id: HF's padding_idx would drop that row's grad, megatron's does not
        model = AutoModelForCausalLM.from_config(tiny_random_config(len(tokenizer), pad_token_id=None))
    model.save_pretrained(tmp_path / "hf")
    world, port = tp * pp, _free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", TP=str(tp), PP=str(pp))
        procs.append(subprocess.Popen([sys.executable, str(ROOT / "tests" / "megatron_parity.py"),
                                       str(tmp_path / "hf"), str(tmp_path)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=400)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(o[-2000:] for o in outputs)
    line = next(s for s in outputs[0].splitlines() if s.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow
@needs_megatron
@pytest.mark.parametrize("tp,pp", [(2, 1), (1, 2)], ids=["tp2", "pp2"])
def test_megatron_equals_torch_trainer_full_and_lora(tmp_path, tp, pp):
    """Two hybrid steps (3 micro-batches, k3 KL, hinted teacher) on both trainers, full weights then LoRA
    (r=4 on all seven projections, the torch trainer's randomised peft adapters loaded into megatron);
    then the adapters are saved as a peft directory and loaded back by peft."""
    result = _run_parity(tmp_path, tp, pp)
    assert (result["tp"], result["pp"]) == (tp, pp)
    for mode in ("full", "lora"):
        row = result[mode]
        gaps = row["gaps"]
        assert row["dtypes"] == ["torch.float64"], (mode, row["dtypes"])  # both models and megatron's grads
        assert gaps["loss"] < 1e-6 and gaps["kl"] < 1e-6 and gaps["clip_frac"] < 1e-6, (mode, gaps)
        assert gaps["grad"] < 1e-6, (mode, row["worst_grad"], gaps)  # every element of every grad tensor
        assert gaps["grad_norm"] < 1e-6, (mode, gaps)
        assert row["kl"] > 0  # the KL reference (LoRA: adapters off) was really exercised
        assert row["same_keys"] and row["weight_gap"] < 1e-6  # exported (fp64) after two AdamW steps of lr 1e-3
    assert result["full"]["n_grads"] == 26  # every base tensor has a grad
    lora = result["lora"]
    assert lora["n_grads"] == 2 * 7 * 2  # A and B of 7 projections in 2 layers, nothing else trains
    assert lora["adapters_same_keys"] and lora["adapter_gap"] < 1e-6  # export_adapters hands out fp32
    assert lora["frozen_untouched"]  # norms and embeddings exported bit-exact: the base is frozen
    assert lora["peft_reload_gap"] < 1e-6  # save_adapters' directory, loaded and merged by peft = our merged export
    assert lora["adapter_delta"] > 1e-2  # ... and the adapters really moved the weights
