"""benchmarks/trainer_throughput.py: a torch row on a random-init tiny shape carries the throughput, FLOP,
MFU and memory keys; rows that cannot run (megatron without a GPU) come back with a status, not an error.
The GPU rows themselves run on a GPU machine (scripts/gpu_throughput.sh)."""

import argparse

import pytest
import torch

from clawgym.inference.catalog import MODELS, QWEN_05B, TINY_RANDOM
from clawgym.inference.models import shape_config
from tests.scripts import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/trainer_throughput.py")


def bench_args(**overrides) -> argparse.Namespace:
    values = dict(random_init=False, seed=0, steps=1, peak_tflops=None, batch=2, micro_batch=1,
                  prompt_len=8, response_len=4)
    values.update(overrides)
    return argparse.Namespace(**values)


def test_shape_config_builds_the_catalog_architecture():
    config = shape_config(QWEN_05B)
    with torch.device("meta"):
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == MODELS[QWEN_05B].params
    assert config.rope_parameters["rope_theta"] == MODELS[QWEN_05B].rope_theta


def test_torch_row_on_a_random_tiny_shape_has_the_new_columns(bench):
    row = bench.run_row(f"shape:{TINY_RANDOM}", "full", "cpu", bench_args())
    assert row["status"] == "ok", row
    assert row["trainer"] == "torch" and row["model"] == f"shape:{TINY_RANDOM}"
    assert row["params_m"] == pytest.approx(MODELS[TINY_RANDOM].params / 1e6)
    assert row["tokens_per_s"] > 0 and row["tflops"] > 0
    assert row["mfu"] is None and row["peak_mem_gib"] is None  # no known peak on a CPU; no GPU memory
    assert "|  |  |" in bench.table_row(row)  # blank MFU and memory cells
    # with a peak given, MFU = achieved / peak
    lora = bench.run_row(TINY_RANDOM, "lora", "cpu", bench_args(random_init=True, peak_tflops=1.0))
    assert lora["status"] == "ok" and lora["model"] == f"shape:{TINY_RANDOM}"
    assert lora["trainable_m"] < lora["params_m"] and lora["mfu"] == pytest.approx(lora["tflops"])


def test_flops_count_the_frozen_base_as_four_per_parameter(bench):
    config = shape_config(QWEN_05B)
    size = dict(batch=1, prompt_len=0, response_len=1)  # one response token: the LM head counts at it
    n, attention = MODELS[QWEN_05B].params, 6 * 24 * 896  # 6 L d S T with S = T = 1
    assert bench.step_flops(config, n, 0, "full", size) == 6 * n + attention
    assert bench.step_flops(config, n, 10, "lora", size) == 4 * n + 6 * 10 + attention
    prompt = dict(batch=1, prompt_len=1, response_len=0)  # a prompt token skips the LM head
    assert bench.step_flops(config, n, 0, "full", prompt) == 6 * (n - 151936 * 896) + attention


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the megatron row runs")
def test_megatron_rows_without_a_gpu_report_a_status(bench):
    args = bench_args()
    for device, want in (("cpu", "skipped: the megatron trainer needs a CUDA GPU"), ("cuda", "skipped: no GPU")):
        row = bench.run_row(f"shape:{TINY_RANDOM}", "full", device, args, trainer="megatron")
        assert row["status"] == want
        assert want in bench.table_row(row)


def test_a_failing_row_reports_an_error_and_does_not_raise(bench):
    row = bench.run_row("shape:no-such-model", "full", "cpu", bench_args())
    assert row["status"].startswith("error: ValueError") and "not a catalog model" in row["status"]
