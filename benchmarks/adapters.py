"""Many users, one base model: 8 users on 8 LoRA adapters vs the same load on one adapter.

Each round sends 8 concurrent chat requests (one per user, 64 new tokens each, sampled with fixed
seeds) to one :class:`MultiAdapterHFPolicy` serving SmolLM2-135M-Instruct with r=16 adapters on every
projection. "one adapter" routes all 8 to slot 1; "8 adapters" gives each user its own slot, so every
decoding step mixes 8 adapters (the grouped bmm path); "base, no bank" is a plain HFPolicy for scale.
Rows take turns round by round, so machine load hits them alike. Also timed: what choosing a user's
adapter adds to a request (the view, the sampling copy and the per-step routing).

    .venv/bin/python benchmarks/adapters.py [--model smollm2-135m] [--rounds 4] [--tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.inference.models import load_model
from clawgym.inference.multi_adapter import MultiAdapterHFPolicy
from clawgym.inference.testing import random_lora_state

USERS = 8
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# Long-answer requests, so (nearly) every request decodes the full token budget under every adapter and
# the rows compare the same work (short answers would leave single-row tail steps that depend on luck).
QUESTIONS = [f"Write a long, detailed story of at least 400 words about {topic}." for topic in
             ("a lighthouse keeper", "a lost dog", "a city on Mars", "a baker in Lima", "a chess prodigy",
              "a river journey", "a haunted library", "a robot gardener")]


async def one_round(views, tokens: int, round_index: int) -> tuple[int, float]:
    started = time.perf_counter()
    results = await asyncio.gather(*(
        view.generate([{"role": "user", "content": QUESTIONS[i]}], None,
                      SamplingParams(temperature=1.0, max_tokens=tokens, seed=1000 * round_index + i))
        for i, view in enumerate(views)))
    return sum(len(g.response_ids) for g in results), time.perf_counter() - started


async def run(model_name: str, rounds: int, tokens: int) -> None:
    model, tokenizer = load_model(model_name)
    served = MultiAdapterHFPolicy(model, tokenizer, slots=USERS + 1, r=16, alpha=32,
                                  target_modules=TARGETS, max_batch_size=16)
    for slot in range(1, USERS + 1):
        served.load_adapter(slot, random_lora_state(served.model, TARGETS, seed=slot, r=16, scale=0.01))
    plain_model, _ = load_model(model_name)
    plain = HFPolicy(plain_model, tokenizer, max_batch_size=16)
    rows = {
        "base, no bank": [plain] * USERS,
        "one adapter (8 users on slot 1)": [served.adapter(1)] * USERS,
        "8 adapters (one per user)": [served.adapter(slot) for slot in range(1, USERS + 1)],
    }
    await one_round(rows["8 adapters (one per user)"], 8, 0)  # warm-up
    results: dict[str, list[float]] = {name: [] for name in rows}
    generated: dict[str, int] = {name: 0 for name in rows}
    for r in range(rounds):
        for name, views in rows.items():
            n, seconds = await one_round(views, tokens, r + 1)
            results[name].append(n / seconds)
            generated[name] += n
    selection = []
    for _ in range(2000):
        started = time.perf_counter()
        view = served.adapter(5)
        view._sampling(None)
        served.bank.route([1, 2, 3, 4, 5, 6, 7, 8])
        selection.append((time.perf_counter() - started) * 1e3)
    served.bank.route([0])
    await served.close()
    await plain.close()

    one = statistics.median(results["one adapter (8 users on slot 1)"])
    print(f"model {model_name}, {USERS} concurrent users x {tokens} new tokens, {rounds} rounds, "
          f"{torch.get_num_threads()} torch threads, load {os.getloadavg()[0]:.1f}\n")
    print("| load | tokens/s (median) | min | max | vs one adapter | tokens per request |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} | "
              f"{statistics.median(values) / one:.2f}x | {generated[name] / (rounds * USERS):.1f} |")
    print(f"\nadapter selection per request (view + sampling + routing one step of 8 rows): "
          f"{statistics.median(selection):.3f} ms median, {max(selection):.3f} ms max")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    asyncio.run(run(args.model, args.rounds, args.tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
