"""Decoding speed of SmolLM2-135M at OpenClaw-sized contexts: a cache rebuilt per step vs HFPolicy's buffer.

A later OpenClaw turn reuses a ~4k-token prefix and then decodes up to ``maxTokens`` tokens, one
forward pass each, so the cost of a decoding step at a long context is the turn's latency. Three
variants, side by side in one process, alternating rounds so that load on a shared machine hits all
alike:

- ``dynamic``: transformers' ``DynamicCache`` rebuilt from the batch's tensors at every step and grown
  by ``torch.cat``, transformers' SDPA: the cache is copied twice a token;
- ``buffer``: :class:`clawgym.inference.kv_buffer.KVBuffer`: a step writes only the new column;
- ``buffer+gqa``: the buffer plus :mod:`clawgym.inference.attention` (attention on the key/value heads
  without repeating them): what ``HFPolicy`` runs.

All produce the same logits (checked here). Prints ms per decoding step (median over rounds).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/decode_speed.py [--contexts 256 4096 8000] [--rows 1 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from transformers import DynamicCache

from clawgym.inference.attention import GQA_DECODE
from clawgym.inference.kv_buffer import CACHE_KWARG, KVBuffer
from clawgym.inference.models import load_model


def decode(model, keys, values, mask, steps: int, use_buffer: bool) -> tuple[float, torch.Tensor]:
    """Seconds per step of ``steps`` decoding steps from a prefilled batch, and the last logits."""
    rows, width = mask.shape
    buffer = KVBuffer(keys, values, mask) if use_buffer else None
    start = time.perf_counter()
    for step in range(steps):
        mask = torch.cat([mask, torch.ones(rows, 1, dtype=torch.long)], dim=1)
        if use_buffer:
            cache = buffer.cache(1)
        else:
            cache = DynamicCache(ddp_cache_data=list(zip(keys, values)))
        out = model(input_ids=torch.full((rows, 1), 42), position_ids=torch.full((rows, 1), width + step),
                    attention_mask=mask, use_cache=True, logits_to_keep=1, **{CACHE_KWARG: cache})
        if use_buffer:
            buffer.advance(1, mask)
        else:
            layers = getattr(out, CACHE_KWARG).layers
            keys, values = [layer.keys for layer in layers], [layer.values for layer in layers]
    return (time.perf_counter() - start) / steps, out.logits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--contexts", type=int, nargs="+", default=[256, 4096, 8000])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    model, _ = load_model(args.model)
    model.eval()
    print(f"model {args.model}, torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    print("| context | rows | dynamic (ms/step) | buffer (ms/step) | buffer+gqa (ms/step) | speed-up | same logits |")
    print("|---:|---:|---:|---:|---:|---:|:---:|")
    variants = {"dynamic": (False, "sdpa"), "buffer": (True, "sdpa"), "buffer+gqa": (True, GQA_DECODE)}
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for context in args.contexts:
            for rows in args.rows:
                ids = torch.randint(100, 40000, (1, context), generator=generator).expand(rows, context)
                cache = getattr(model(input_ids=ids, use_cache=True, logits_to_keep=1), CACHE_KWARG)
                keys = [layer.keys.contiguous() for layer in cache.layers]
                values = [layer.values.contiguous() for layer in cache.layers]
                mask = torch.ones(rows, context, dtype=torch.long)
                times: dict[str, list[float]] = {name: [] for name in variants}
                logits = {}
                for _ in range(args.rounds):
                    for name, (use_buffer, attention) in variants.items():
                        model.set_attn_implementation(attention)
                        seconds, logits[name] = decode(model, keys, values, mask, args.steps, use_buffer)
                        times[name].append(seconds)
                ms = {name: statistics.median(values) * 1e3 for name, values in times.items()}
                same = all(torch.allclose(logits["dynamic"], other, atol=1e-4) for other in logits.values())
                print(f"| {context} | {rows} | {ms['dynamic']:.1f} | {ms['buffer']:.1f} | {ms['buffer+gqa']:.1f} "
                      f"| {ms['dynamic'] / ms['buffer+gqa']:.2f}x | {'yes' if same else 'NO'} |", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
