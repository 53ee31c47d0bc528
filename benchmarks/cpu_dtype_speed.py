"""bfloat16 against float32 on this CPU: decoding and one personal-trainer step, side by side.

Which dtype is faster on a CPU depends on the CPU. With native bfloat16 matmuls (x86 AVX512-BF16 or
AMX-BF16) bfloat16 halves the bytes each decoded token reads; without them torch emulates bfloat16 and
a matmul can take a hundred times as long as in float32. ``policy.dtype`` empty picks by the CPU
(:func:`clawgym.inference.catalog.default_dtype`); this shows what that choice is worth here. Per dtype:

- **decode**: generated tokens per second for 8 concurrent requests of ``--max-tokens`` (the in-process
  HF policy, as `clawgym serve` serves);
- **train step**: one LoRA r=16 hybrid step as the chat launcher trains (gradient checkpointing, the
  OPD teacher read with a hint) on ``--samples`` turns of a ``--prompt``-token prompt and a
  ``--response``-token reply.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/cpu_dtype_speed.py [--model qwen2.5-coder-0.5b]

Each run appends its rows to ``benchmarks/results/cpu_dtype_speed.jsonl`` with the CPU's name and flags.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "cpu_dtype_speed.jsonl"
sys.path.insert(0, str(ROOT))

from model_cpu_speed import SHORT as STORY  # noqa: E402  (the decode benchmark's request and its rate)
from model_cpu_speed import rate  # noqa: E402


async def decode_rate(policy, concurrency: int, max_tokens: int) -> float:
    """Generated tokens per second of ``concurrency`` requests sent at once (after a warm-up)."""
    from clawgym.core.policy import SamplingParams

    await policy.generate(STORY, sampling=SamplingParams(max_tokens=4, seed=0))
    return await rate(policy, concurrency, max_tokens)


def train_step_seconds(model, tokenizer, samples: int, prompt: int, response: int) -> float:
    """Seconds of one hybrid LoRA step (the chat launcher's trainer settings) on made-up turns."""
    from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
    from clawgym.rl.types import Sample

    trainer = TorchTrainer(model, tokenizer, TrainerConfig(method="hybrid", lr=1e-4, micro_batch_size=8,
                                                           gradient_checkpointing=True,
                                                           lora=LoraSettings(r=16, alpha=32)))
    generator = torch.Generator().manual_seed(0)
    batch = [Sample(prompt_ids=torch.randint(100, 20000, (prompt,), generator=generator).tolist(),
                    response_ids=torch.randint(100, 20000, (response,), generator=generator).tolist(),
                    old_logprobs=[-5.0] * response, reward=(-1.0) ** i, advantage=(-1.0) ** i,
                    hint="Please address the student by name.", hint_messages=STORY)
             for i in range(samples)]
    start = time.perf_counter()
    trainer.train_step(batch)
    return time.perf_counter() - start


async def one_dtype(name: str, dtype: str, args: argparse.Namespace) -> dict:
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.models import load_model

    policy = HFPolicy.from_pretrained(name, dtype=getattr(torch, dtype), seed=0)
    try:
        decode = await decode_rate(policy, args.concurrency, args.max_tokens)
    finally:
        await policy.close()
    model, tokenizer = load_model(name, dtype=getattr(torch, dtype))
    train = train_step_seconds(model, tokenizer, args.samples, args.prompt, args.response)
    return {"model": name, "dtype": dtype, "decode_tokens_per_s": decode, "train_step_s": train}


def main() -> None:
    from clawgym.inference.catalog import cpu_has_native_bf16, default_dtype

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--response", type=int, default=64)
    args = parser.parse_args()

    capabilities = torch.cpu.get_capabilities()
    host = {"cpu": capabilities.get("cpu_name") or platform.processor(), "machine": platform.machine(),
            "threads": torch.get_num_threads(), "native_bf16": cpu_has_native_bf16(),
            "flags": sorted(k for k in ("avx2", "avx512_f", "avx512_bf16", "amx_bf16") if capabilities.get(k)),
            "torch": torch.__version__, "default_dtype": default_dtype(args.model)}
    rows = [{**asyncio.run(one_dtype(args.model, dtype, args)), **host} for dtype in args.dtypes]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as out:
        for row in rows:
            out.write(json.dumps({**row, "samples": args.samples, "prompt": args.prompt,
                                  "response": args.response, "concurrency": args.concurrency}) + "\n")
    print(f"{host['cpu']} ({host['machine']}, {host['threads']} threads, flags {', '.join(host['flags'])}; "
          f"native bfloat16: {'yes' if host['native_bf16'] else 'no'}; policy.dtype empty -> {host['default_dtype']})")
    print(f"{'dtype':<10}{'decode tok/s (x' + str(args.concurrency) + ')':>22}"
          f"{f'train step ({args.samples} x {args.prompt}+{args.response} tok)':>34}")
    for row in rows:
        print(f"{row['dtype']:<10}{row['decode_tokens_per_s']:>22.1f}{row['train_step_s']:>32.1f} s")
    if len(rows) == 2:
        a, b = rows
        print(f"{b['dtype']} / {a['dtype']}: decode x{b['decode_tokens_per_s'] / a['decode_tokens_per_s']:.2f}, "
              f"train step time x{b['train_step_s'] / a['train_step_s']:.2f}")


if __name__ == "__main__":
    main()
