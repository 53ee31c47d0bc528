"""Tokens/s of the in-process HF policy at 1 vs N concurrent requests (continuous batching).

    .venv/bin/python benchmarks/hf_throughput.py --models tiny-random smollm2-135m --concurrency 1 8

Each wave sends N requests at once (temperature 1, fixed seeds, ``--max-tokens`` each); the rate counts
the tokens actually generated (a request that samples EOS early contributes fewer). On a shared CPU,
``--threads 1`` avoids thread thrashing.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.hf import HFPolicy


async def measure(policy: HFPolicy, concurrency: int, max_tokens: int, rounds: int) -> tuple[float, float]:
    """(generated tokens per second, mean seconds per request) over ``rounds`` waves of requests."""
    messages = [{"role": "user", "content": "Write a short story about a robot learning to paint."}]
    await policy.generate(messages, sampling=SamplingParams(max_tokens=4, seed=0))  # warm-up
    tokens, latencies = 0, []
    start = time.perf_counter()
    for wave in range(rounds):
        async def one(i: int) -> int:
            t0 = time.perf_counter()
            g = await policy.generate(messages, sampling=SamplingParams(max_tokens=max_tokens, seed=wave * 100 + i))
            latencies.append(time.perf_counter() - t0)
            return len(g.response_ids)
        tokens += sum(await asyncio.gather(*[one(i) for i in range(concurrency)]))
    elapsed = time.perf_counter() - start
    return tokens / elapsed, sum(latencies) / len(latencies)


def hf_generate_baseline(policy: HFPolicy, concurrency: int, max_tokens: int) -> float:
    """Peer baseline: transformers' own ``model.generate`` on a static left-padded batch (tokens/s)."""
    messages = [{"role": "user", "content": "Write a short story about a robot learning to paint."}]
    from clawgym.inference.chat_template import encode_prompt

    ids = torch.tensor([encode_prompt(policy.tokenizer, messages)] * concurrency, device=policy.device)
    with torch.inference_mode():
        start = time.perf_counter()
        out = policy.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, max_new_tokens=max_tokens,
                                    min_new_tokens=max_tokens, pad_token_id=policy.tokenizer.pad_token_id)
        elapsed = time.perf_counter() - start
    return (out.shape[1] - ids.shape[1]) * concurrency / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=["tiny-random", "smollm2-135m"])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtypes", nargs="+", default=["float32"],
                        help="compute dtypes to compare (float32, bfloat16)")
    parser.add_argument("--baseline", action="store_true", help="also time transformers' model.generate (static batch)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows, baselines = [], []
    for model in args.models:
        for dtype in args.dtypes:
            name = model if len(args.dtypes) == 1 else f"{model} {dtype}"
            policy = HFPolicy.from_pretrained(model, device=args.device, dtype=getattr(torch, dtype))
            for concurrency in args.concurrency:
                rate, latency = await measure(policy, concurrency, args.max_tokens, args.rounds)
                rows.append((name, concurrency, rate, latency))
                if args.baseline:
                    baselines.append((name, concurrency, hf_generate_baseline(policy, concurrency, args.max_tokens)))
            await policy.close()
    base = {name: rate for name, c, rate, _ in rows if c == args.concurrency[0]}
    print(f"device={args.device} torch_threads={torch.get_num_threads()} max_tokens={args.max_tokens} "
          f"rounds={args.rounds}")
    print(f"{'model':<28} {'concurrent':>10} {'tokens/s':>10} {'speed-up':>9} {'s/request':>10}")
    for name, concurrency, rate, latency in rows:
        print(f"{name:<28} {concurrency:>10} {rate:>10.1f} {rate / base[name]:>8.2f}x {latency:>10.2f}")

    for name, concurrency, rate in baselines:
        print(f"{name:<28} {concurrency:>10} {rate:>10.1f}  (transformers model.generate, static batch)")


if __name__ == "__main__":
    asyncio.run(main())
