"""CPU speed of the named models side by side: decoding, long contexts, prefix reuse, one LoRA train step.

For each model in ``--models`` (the serving path of ``clawgym serve``: :class:`HFPolicy` in the model's
default dtype, prefix cache on; ``NAME:int8`` serves int8 weights, ``policy.quantize: int8``), in one run:

- **decode alone / 8 concurrent**: generated tokens per second for one request, and for 8 at once;
- **long contexts**: for a prompt of C tokens (C in ``--contexts``, within the model's window), the
  prefill (seconds, cold cache), the prefill of the same prompt plus a new user message (prefix reuse),
  and the decoding step at that context (ms per token, from a 1-token and a 17-token reply);
- **sampler vs trainer**: the mean and max |difference| between the logprobs the server records for
  a sampled reply and the ones the trainer computes for it (the model's default dtype, unquantised);
- **train step**: one LoRA r=16 hybrid train step (2 samples) on a ``--train-prompt``-token turn, as
  ``clawgym serve`` trains it (gradient checkpointing on), in a subprocess so its peak RSS is its own
  (``benchmarks/long_turn_training.py``'s row).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/model_cpu_speed.py [--models smollm2-135m qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.catalog import MODELS
from clawgym.inference.hf import HFPolicy

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from long_turn_training import conversation  # noqa: E402

SHORT = [{"role": "user", "content": "Write a short story about a robot learning to paint."}]


async def rate(policy: HFPolicy, concurrency: int, max_tokens: int) -> float:
    """Generated tokens per second for ``concurrency`` requests at once (temperature 1, fixed seeds)."""
    start = time.perf_counter()
    generations = await asyncio.gather(*[policy.generate(SHORT, sampling=SamplingParams(max_tokens=max_tokens, seed=i))
                                         for i in range(concurrency)])
    return sum(len(g.response_ids) for g in generations) / (time.perf_counter() - start)


async def timed(policy: HFPolicy, messages: list[dict], max_tokens: int) -> tuple[float, int]:
    start = time.perf_counter()
    generation = await policy.generate(messages,
                                       sampling=SamplingParams(temperature=1.0, max_tokens=max_tokens, seed=0))
    return time.perf_counter() - start, len(generation.response_ids)


async def context_row(policy: HFPolicy, tokens: int) -> dict:
    messages = conversation(policy.tokenizer, tokens)
    policy.prefix_cache.discard()  # a cold start: nothing of this prompt is cached
    cold, _ = await timed(policy, messages, 1)
    follow = messages + [{"role": "assistant", "content": "The MIT and BSD licenses do."},
                         {"role": "user", "content": "And which one needs me to keep a notice?"}]
    warm, _ = await timed(policy, follow, 1)
    long_reply, produced = await timed(policy, follow, 17)
    step_ms = (long_reply - warm) / max(1, produced - 1) * 1000 if produced > 1 else float("nan")
    return {"context": tokens, "prefill_s": cold, "prefill_reuse_s": warm, "decode_ms": step_ms}


def train_row(model: str, prompt_tokens: int) -> dict:
    spec = {"prompt_tokens": prompt_tokens, "lora": True, "checkpointing": True, "method": "hybrid", "steps": 1,
            "model_name": model}
    done = subprocess.run([sys.executable, str(ROOT / "long_turn_training.py"), "--row", json.dumps(spec)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


async def logprob_gap(policy: HFPolicy, trainer_model: torch.nn.Module) -> tuple[float, float]:
    """(mean, max) |sampler logprob - trainer logprob| over the tokens of three sampled replies."""
    from clawgym.rl.trainer.batching import collate, gather_logprobs, response_logits

    gaps = []
    for seed in range(3):
        g = await policy.generate(SHORT, sampling=SamplingParams(max_tokens=64, seed=seed))
        batch = collate([g.prompt_ids], [g.response_ids], policy.tokenizer.pad_token_id, "cpu")
        with torch.no_grad():
            mine = gather_logprobs(response_logits(trainer_model, batch), batch.targets)[0, : len(g.response_ids)]
        gaps.append((mine - torch.tensor(g.response_logprobs)).abs())
    every = torch.cat(gaps)
    return float(every.mean()), float(every.max())


async def measure(spec: str, args: argparse.Namespace) -> dict:
    from clawgym.inference.int8 import quantize_linears
    from clawgym.inference.models import load_model

    model, _, quantize = spec.partition(":")
    served, tokenizer = load_model(model)
    if quantize == "int8":
        quantize_linears(served)
    policy = HFPolicy(served, tokenizer, name=spec, max_batch_size=8)
    try:
        await policy.generate(SHORT, sampling=SamplingParams(max_tokens=4, seed=0))  # warm-up
        dtype = str(served.get_input_embeddings().weight.dtype).replace("torch.", "")
        result = {"model": spec, "dtype": dtype + (" + int8 linears" if quantize else ""),
                  "alone": await rate(policy, 1, args.max_tokens), "eight": await rate(policy, 8, args.max_tokens),
                  "contexts": []}
        result["gap_mean"], result["gap_max"] = await logprob_gap(policy, load_model(model)[0])
        window = MODELS[model].context_window if model in MODELS else 8192
        for tokens in args.contexts:
            if tokens + 200 <= window:
                result["contexts"].append(await context_row(policy, tokens))
                print(result["contexts"][-1], file=sys.stderr, flush=True)
    finally:
        await policy.close()
    result["train"] = train_row(model, args.train_prompt) if not quantize else {"error": "as without int8"}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+",
                        default=["smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b:int8"])
    parser.add_argument("--contexts", type=int, nargs="+", default=[4096, 16384, 32000])
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--train-prompt", type=int, default=2048)
    args = parser.parse_args()
    results = [asyncio.run(measure(model, args)) for model in args.models]
    print(f"\nCPU: {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, load average "
          f"{os.getloadavg()[0]:.1f}")
    print("| model | weights | decode alone (tok/s) | 8 concurrent (tok/s) | sampler-trainer logprob gap, mean / max "
          "| train step, 2k-token turn (s) | peak RSS (GiB) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        train = r["train"]
        step = f"{train['seconds_per_step']:.1f}" if "error" not in train else train["error"]
        rss = f"{train['peak_rss_gib']:.2f}" if "error" not in train else ""
        print(f"| {r['model']} | {r['dtype']} | {r['alone']:.1f} | {r['eight']:.1f} | "
              f"{r['gap_mean']:.3f} / {r['gap_max']:.2f} "
              f"| {step} | {rss} |")
    print("\n| model | context (tokens) | prefill, cold (s) | prefill with prefix reuse (s) | decode step (ms) |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        for c in r["contexts"]:
            print(f"| {r['model']} | {c['context']} | {c['prefill_s']:.1f} | {c['prefill_reuse_s']:.2f} | "
                  f"{c['decode_ms']:.0f} |")


if __name__ == "__main__":
    main()
