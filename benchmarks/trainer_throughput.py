"""Trainer throughput: tokens/s, model TFLOP/s, MFU and peak GPU memory of ``train_step`` (forward +
backward + optimiser) for the torch trainer and, on a GPU, the megatron trainer.

    python benchmarks/trainer_throughput.py                      # tiny-random and smollm2-135m, full and LoRA, torch
    python benchmarks/trainer_throughput.py --models tiny-random --steps 5 --batch 8
    python benchmarks/trainer_throughput.py --devices cuda --trainers torch megatron \\
        --models qwen2.5-coder-0.5b qwen2.5-coder-1.5b --random-init    # GPU: no checkpoint needed

Models are catalog names (``clawgym models``) or checkpoint directories. ``--random-init`` (or one model
spelled ``shape:qwen2.5-coder-0.5b``) builds the catalog entry's architecture
(:func:`clawgym.inference.models.shape_config`) with seeded random weights instead of loading them,
so a machine without the checkpoint (or a network) measures the real shapes; no tokenizer is used.

Each row trains ``--steps`` timed steps (after one warm-up step) on a fixed synthetic batch:
``--batch`` samples of ``--prompt-len`` prompt + ``--response-len`` response tokens drawn from the
vocabulary with a seeded generator; method grpo, no KL, one optimiser step of ``--batch / --micro-batch``
micro-batches. Unset sizes default per device: CPU 4 x (128 + 64), micro-batch 2; CUDA a realistic RL
batch, 16 x (1024 + 512), micro-batch 4. tokens/s counts every token forwarded (prompt + response);
"train tok/s" only the response tokens that carry loss. Step time is the median over the timed steps
(CUDA synchronised); "best tokens/s" uses the fastest step. Old logprobs are a constant, which changes
the loss value but not the work done. CUDA rows run in bf16 (CPU rows in fp32).

The torch trainer (HF model, peft LoRA) keeps bf16 weights and AdamW states (8 bytes a parameter before
activations) and computes logits only at response positions. The megatron trainer (megatron-core GPTModel,
TP=1 PP=1 in one process, local layer spec: no transformer-engine, unfused attention) loads the same
weights from an HF directory (``save_pretrained`` to a temp dir), trains with fp32 main weights, fp32 grads
and the distributed optimiser (18 bytes a parameter) and computes logits at every position.

**FLOPs and MFU.** With N the HF parameter count (a tied embedding once), V·h the LM head, L layers,
d = heads x head_dim, S = prompt + response, T = batch x S tokens and T_r = batch x response tokens:

    full: F = 6 (N - V·h·(1 if tied else 2)) T  +  6 V·h T_r  +  6 L d S T
    LoRA: F = 4 (N - V·h·(1 if tied else 2)) T  +  4 V·h T_r  +  6 N_lora T  +  6 L d S T

6 = forward 2 + backward 4 (activation and weight gradients); a frozen base has no weight gradients
(forward 2 + activation gradients 2 = 4); the last term is causal attention (QK^T and AV over S/2
positions on average, forward and backward). The LM head is credited only at response positions (all
the loss needs), so the megatron trainer's prompt logits are work MFU does not count. "TFLOP/s" = F /
step time; MFU = TFLOP/s / ``--peak-tflops`` (default by GPU name: dense bf16, H100 SXM and H200 989;
an unknown GPU or a CPU leaves MFU blank). "peak GiB" = ``torch.cuda.max_memory_allocated`` over the
row (model, optimiser, steps), reset before each row.

A row that cannot run says why (``skipped: no GPU``, megatron-core missing, the megatron trainer on a
CPU), a CUDA out-of-memory row says ``OOM``, any other failure ``error: ...`` (traceback on stderr);
the other rows still run. Each finished row goes to stderr at once and, with ``--json``, rewrites the
JSON file, so a run cut short keeps what it measured. Prints a markdown table at the end.

The one-GPU rows (``bash scripts/gpu_throughput.sh``) are kept in ``benchmarks/results/trainer_throughput_h100.json``;
``--markdown PATH`` writes the generated results page from them (or from ``--render`` files) and runs nothing:

    python benchmarks/trainer_throughput.py --markdown docs/results/trainer_throughput.md
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from clawgym.inference.catalog import MODELS
from clawgym.inference.models import load_model, shape_config
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
from clawgym.rl.types import Sample

RESULTS = Path(__file__).resolve().parent / "results" / "trainer_throughput_h100.json"
PAGE = Path("docs/results/trainer_throughput.md")
SIZES = {"cpu": dict(batch=4, micro_batch=2, prompt_len=128, response_len=64),
         "cuda": dict(batch=16, micro_batch=4, prompt_len=1024, response_len=512)}
# dense bf16 tensor-core peaks (no sparsity), TFLOP/s; the first name contained in the device name wins
PEAK_BF16_TFLOPS = (("H200", 989.0), ("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0), ("A100", 312.0))


def make_samples(vocab: int, batch: int, prompt_len: int, response_len: int, seed: int) -> list[Sample]:
    generator = torch.Generator().manual_seed(seed)
    samples = []
    for i in range(batch):
        prompt = torch.randint(3, vocab, (prompt_len,), generator=generator).tolist()
        response = torch.randint(3, vocab, (response_len,), generator=generator).tolist()
        samples.append(Sample(prompt_ids=prompt, response_ids=response, old_logprobs=[-10.0] * response_len,
                              reward=1.0 if i % 2 == 0 else -1.0, group_id="bench"))
    return samples


def sizes(device: str, args: argparse.Namespace) -> dict[str, int]:
    return {k: getattr(args, k) if getattr(args, k) is not None else v for k, v in SIZES[device].items()}


def peak_tflops(device: str, args: argparse.Namespace) -> float | None:
    if args.peak_tflops or device != "cuda":
        return args.peak_tflops
    name = torch.cuda.get_device_name()
    return next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def step_flops(config: Any, n_params: int, n_lora: int, mode: str, size: dict[str, int]) -> float:
    """F of the module docstring for one step."""
    heads = config.num_attention_heads
    d_attn = heads * (getattr(config, "head_dim", None) or config.hidden_size // heads)
    seq = size["prompt_len"] + size["response_len"]
    tokens, response = size["batch"] * seq, size["batch"] * size["response_len"]
    head = config.vocab_size * config.hidden_size
    body = n_params - head * (1 if config.tie_word_embeddings else 2)
    k = 6 if mode == "full" else 4
    return (k * body * tokens + k * head * response + 6 * n_lora * tokens
            + 6 * config.num_hidden_layers * d_attn * seq * tokens)


def why_not(trainer: str, device: str) -> str | None:
    if device == "cuda" and not torch.cuda.is_available():
        return "skipped: no GPU"
    if trainer == "megatron":
        if device != "cuda":
            return "skipped: the megatron trainer needs a CUDA GPU"
        from clawgym.rl.trainer.megatron_setup import megatron_available

        ok, why = megatron_available()
        return None if ok else f"skipped: {why}"
    return None


def build_model(spec: str, device: str, dtype: torch.dtype, args: argparse.Namespace) -> tuple[Any, Any]:
    """(model, tokenizer or None); a ``shape:`` model is built random on ``device`` from its catalog shape."""
    name = spec.removeprefix("shape:")
    if not (spec.startswith("shape:") or args.random_init):
        return load_model(name, device=device, dtype=dtype, seed=args.seed)
    if name not in MODELS:
        raise ValueError(f"{name!r} is not a catalog model, so it has no shape to build ({', '.join(MODELS)})")
    from transformers import AutoModelForCausalLM

    torch.manual_seed(args.seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(shape_config(name), dtype=dtype)
    return model.to(device).eval(), None


def free_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def run_row(model_name: str, mode: str, device: str, args: argparse.Namespace,
            trainer: str = "torch") -> dict[str, Any]:
    random = model_name.startswith("shape:") or args.random_init
    shown = f"shape:{model_name.removeprefix('shape:')}" if random else model_name
    size = sizes(device, args)
    row: dict[str, Any] = {"model": shown, "trainer": trainer, "mode": mode, "device": device, **size}
    why = why_not(trainer, device)
    if why:
        row["status"] = why
        return row
    try:
        free_memory()
        measure(row, model_name, mode, device, trainer, size, args)
    except torch.OutOfMemoryError:
        row["status"] = "OOM"
    except Exception as exc:  # one broken row must not lose the others' numbers
        traceback.print_exc()
        row["status"] = ("OOM"
                         if "out of memory" in str(exc).lower()
                         else f"error: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]}")
    free_memory()
    return row


def measure(row: dict[str, Any], model_name: str, mode: str, device: str, trainer: str, size: dict[str, int],
            args: argparse.Namespace) -> None:
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model, tokenizer = build_model(model_name, device, dtype, args)
    hf_config, n_params = model.config, sum(p.numel() for p in model.parameters())
    lora = LoraSettings(r=16, alpha=32) if mode == "lora" else None
    config = TrainerConfig(lr=1e-5, micro_batch_size=size["micro_batch"],
                           grad_accum=max(1, size["batch"] // size["micro_batch"]), lora=lora)
    with tempfile.TemporaryDirectory(prefix="clawgym-bench-") as tmp:
        if trainer == "megatron":
            from clawgym.rl.trainer.megatron import MegatronConfig, MegatronTrainer

            model.save_pretrained(tmp)
            del model
            free_memory()  # the peak counts the megatron trainer alone
            engine: Any = MegatronTrainer(tmp, tokenizer,
                                          MegatronConfig(tensor_parallel=1, pipeline_parallel=1,
                                                         bf16=device == "cuda", trainer=config))
        else:
            engine = TorchTrainer(model, tokenizer, config)
            del model
    trainable = sum(p.numel() for p in engine.model.parameters() if p.requires_grad)
    samples = make_samples(hf_config.vocab_size, size["batch"], size["prompt_len"], size["response_len"], args.seed)
    engine.train_step(samples)  # warm-up (allocations, kernels)
    times = []
    for _ in range(args.steps):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        engine.train_step(samples)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    tokens = size["batch"] * (size["prompt_len"] + size["response_len"])
    step, best = statistics.median(times), min(times)
    flops = step_flops(hf_config, n_params, trainable if mode == "lora" else 0, mode, size)
    peak = peak_tflops(device, args)
    row.update(
        status="ok",
        params_m=n_params / 1e6,
        trainable_m=trainable / 1e6,
        step_s=step,
        best_step_s=best,
        tokens_per_s=tokens / step,
        best_tokens_per_s=tokens / best,
        train_tokens_per_s=size["batch"] * size["response_len"] / step,
        tflops=flops / step / 1e12,
        mfu=flops / step / 1e12 / peak if peak else None,
        peak_mem_gib=torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None,
        gpu=torch.cuda.get_device_name() if device == "cuda" else None,
        steps=args.steps,
        torch=torch.__version__,
    )
    del engine


def table_row(r: dict[str, Any]) -> str:
    head = f"| {r['model']} | {r['trainer']} | {r['mode']} | {r['device']} |"
    if r["status"] != "ok":
        return f"{head} {r['status']} | | | | | | | | |"
    mfu = f"{100 * r['mfu']:.1f}%" if r.get("mfu") is not None else ""
    mem = f"{r['peak_mem_gib']:.1f}" if r.get("peak_mem_gib") is not None else ""
    return (f"{head} {r['params_m']:.1f} | {r['trainable_m']:.2f} | {r['step_s']:.2f} | {r['tokens_per_s']:.0f} | "
            f"{r['train_tokens_per_s']:.0f} | {r['best_tokens_per_s']:.0f} | {r['tflops']:.3g} | {mfu} | {mem} |")


def markdown(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    where = []
    for device in dict.fromkeys(r["device"] for r in rows):
        first = next((r for r in rows if r["device"] == device and "batch" in r), None)
        gpu = next((r["gpu"] for r in rows if r.get("gpu")), "no GPU")
        what = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} "
                "threads") if device == "cpu" else gpu
        where.append(f"{device} ({what})" + (f": batch {first['batch']} x ({first['prompt_len']} prompt + "
                                             f"{first['response_len']} "
                                             f"response) tokens, micro-batch {first['micro_batch']}" if first else ""))
    lines = [
        f"trainer train_step, median of {args.steps} steps after a warm-up; " + "; ".join(where) +
        f"; torch {torch.__version__}, load average {os.getloadavg()[0]:.1f} at the end (other jobs share these CPUs)",
        "",
        "| model | trainer | mode | device | params (M) | trainable (M) | step (s) | tokens/s | "
        "train tok/s | best tokens/s "
        "| TFLOP/s | MFU | peak GiB |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    return "\n".join(lines + [table_row(r) for r in rows])


def page(rows: list[dict[str, Any]], sources: list[Path]) -> str:
    """docs/results/trainer_throughput.md: the rows' table and the hardware they name, from the JSON files alone."""
    def where(r: dict[str, Any]) -> str:
        return r.get("gpu") or r["device"]

    setups = sorted({f"{where(r)}: batch {r['batch']} x ({r['prompt_len']} prompt + {r['response_len']} response) "
                     f"tokens, micro-batch {r['micro_batch']}" + (f", torch {r['torch']}" if r.get("torch") else "")
                     + (f", median of {r['steps']} steps after a warm-up" if r.get("steps") else
                        ", median of the timed steps after a warm-up") for r in rows})
    lines = ["| shape | trainer | mode | trainable (M) | step (s) | tokens/s | TFLOP/s | MFU | peak GiB | ran on |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        model = r["model"].removeprefix("shape:")
        mode = "full" if r["mode"] == "full" else "LoRA r16"
        if r["status"] != "ok":
            lines.append(f"| {model} | {r['trainer']} | {mode} | {r['status']} | | | | | | {where(r)} |")
            continue
        mfu = f"{100 * r['mfu']:.1f} %" if r.get("mfu") is not None else ""
        mem = f"{r['peak_mem_gib']:.1f}" if r.get("peak_mem_gib") is not None else ""
        lines.append(f"| {model} | {r['trainer']} | {mode} | {r['trainable_m']:,.1f} | {r['step_s']:.2f} | "
                     f"{r['tokens_per_s']:,.0f} | {r['tflops']:.0f} | {mfu} | {mem} | {where(r)} |")
    shown = ", ".join(f"`{path.resolve().relative_to(RESULTS.parents[2]) if path.is_absolute() else path}`"
                      for path in sources)
    return "\n".join([
        "# Trainer throughput: the torch and megatron trainers on one GPU", "",
        f"Generated by `benchmarks/trainer_throughput.py --markdown {PAGE}` from {shown}; do not edit by hand.", "",
        "One `train_step` (forward, backward, optimiser) of each trainer on the catalog models' shapes with random "
        "weights, bf16, method grpo on a fixed synthetic batch; tokens/s counts every forwarded token. TFLOP/s and "
        "MFU use the formula in the benchmark's docstring (MFU against the GPU's dense bf16 peak; for LoRA it counts "
        "4 of 6 FLOPs a frozen parameter). peak GiB: `torch.cuda.max_memory_allocated` over the row.", "",
        "Hardware and setup: " + "; ".join(setups) + ".", "", *lines, "",
        "    bash scripts/gpu_throughput.sh     # on a GPU machine: benchmarks/trainer_throughput.py --devices cuda "
        "--trainers torch megatron --random-init, one process a row", ""])


def shutdown_distributed() -> None:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        try:
            from megatron.core import parallel_state

            parallel_state.destroy_model_parallel()
        except ImportError:
            pass
        torch.distributed.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["tiny-random", "smollm2-135m"],
                        help="catalog names (shape:NAME for a random-init model of that shape) or checkpoint dirs")
    parser.add_argument("--random-init", action="store_true",
                        help="build every (catalog) model from its shape with random weights")
    parser.add_argument("--trainers", nargs="+", default=["torch"], choices=["torch", "megatron"])
    parser.add_argument("--modes", nargs="+", default=["full", "lora"], choices=["full", "lora"])
    parser.add_argument("--devices", nargs="+", default=["cpu", "cuda"], choices=["cpu", "cuda"])
    parser.add_argument("--batch", type=int, default=None, help="samples a step (default: CPU 4, CUDA 16)")
    parser.add_argument("--micro-batch", type=int, default=None, help="default: CPU 2, CUDA 4")
    parser.add_argument("--prompt-len", type=int, default=None, help="default: CPU 128, CUDA 1024")
    parser.add_argument("--response-len", type=int, default=None, help="default: CPU 64, CUDA 512")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="peak bf16 TFLOP/s for MFU (default: by GPU name)")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file (rewritten after each row)")
    parser.add_argument("--render", nargs="+", default=None, metavar="JSON",
                        help="only print the table of these --json files' rows")
    parser.add_argument("--markdown", default=None, metavar="PATH",
                        help=f"only write the results page ({PAGE}) from --render files (default {RESULTS.name})")
    args = parser.parse_args()
    if args.markdown:
        sources = [Path(p) for p in args.render] if args.render else [RESULTS]
        rows = [row for path in sources for row in json.loads(path.read_text(encoding="utf-8"))]
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(page(rows, sources))
        return
    if args.render:
        rows = [row for path in args.render for row in json.load(open(path, encoding="utf-8"))]
        print(markdown(rows, args), flush=True)
        return
    rows = []
    for d in args.devices:
        for m in args.models:
            for mode in args.modes:
                for trainer in args.trainers:
                    rows.append(run_row(m, mode, d, args, trainer))
                    print(table_row(rows[-1]), file=sys.stderr, flush=True)
                    if args.json:
                        with open(args.json, "w", encoding="utf-8") as handle:
                            json.dump(rows, handle, indent=2)
    shutdown_distributed()
    print(markdown(rows, args), flush=True)


if __name__ == "__main__":
    main()
