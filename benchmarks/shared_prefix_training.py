"""One train step with and without running the shared prompt beginning once (``trainer.shared_prefix``).

A GRPO group is several replies to one prompt, and an agent's turns begin with the same system prompt and
tool schemas, so most of the tokens a step forwards are the same tokens again. With ``shared_prefix`` the
torch trainer runs a micro-batch's common beginning once and the rest of each row on its keys and values
(:func:`clawgym.rl.trainer.batching.response_logits`): the same loss and gradients for fewer tokens. This
times one step both ways on the same samples and the same starting weights, and checks that the two
steps end at the same adapter weights. Workloads, each the trainer settings of a shipped run:

- ``demo``: `make run` (``clawgym/launchers/demo.yaml``): two GRPO groups of 8 replies to a teacher
  task of OpenClawChat-v0, micro-batch 8, LoRA r16 on every layer, replies of 40-128 tokens;
- ``chat``: the personal trainer as ``clawgym/launchers/chat.yaml`` builds it (method hybrid, the OPD
  teacher reading an inline hint, gradient checkpointing, micro-batch 8) on two hindsight groups of 4 replies
  of 40-128 tokens to teacher tasks, the groups' samples interleaved; shared, a group is a micro-batch of
  its own and, forwarding under ``checkpoint_above_tokens: 1024`` tokens, runs without checkpointing;
- ``toolcall``: ToolCall-v0's first turn (its system prompt, task and tool schemas, as the policy renders
  them) in a group of 4 replies of 40-96 tokens, micro-batch 4 (the agentic benchmark's small budget takes
  2), LoRA r16 on the top 4 layers.

Replies are seeded random tokens of the stated lengths: the work of a step depends on the lengths, not
on which tokens. Their old logprobs are the starting weights' own (on-policy, ratio 1), so every sample's
gradient counts and "max weight diff" compares two real updates. One torch thread, as the demo's trainer
gets on 2 cores (``--threads`` to change).

    .venv/bin/python benchmarks/shared_prefix_training.py [--workloads demo chat toolcall] [--model qwen2.5-coder-0.5b]

Appends its rows to ``benchmarks/results/shared_prefix_training.jsonl`` with the CPU's name and the dtype.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results" / "shared_prefix_training.jsonl"

WORKLOADS = {
    "demo": {"env": "clawgym/OpenClawChat-v0", "kwargs": {"personas": ["teacher"], "max_turns": 1, "split": "train"},
             "groups": 2, "group_size": 8, "micro_batch": 8, "reply": (40, 128), "top_layers": None},
    "chat": {"env": "clawgym/OpenClawChat-v0", "kwargs": {"personas": ["teacher"], "max_turns": 1, "split": "train"},
             "groups": 2, "group_size": 4, "micro_batch": 8, "reply": (40, 128), "top_layers": None,
             "interleave": True, "hint": "Address the student by name and state the correct result.",
             "trainer": {"method": "hybrid", "hint_format": "inline", "gradient_checkpointing": True},
             "shared": {"checkpoint_above_tokens": 1024}},
    "toolcall": {"env": "clawgym/ToolCall-v0", "kwargs": {}, "groups": 1, "group_size": 4, "micro_batch": 4,
                 "reply": (40, 96), "top_layers": 4},
}


def cpu_name() -> str:
    """As benchmarks/cpu_dtype_speed.py names the CPU."""
    return torch.cpu.get_capabilities().get("cpu_name") or platform.processor() or platform.machine()


def make_samples(tokenizer, spec: dict, seed: int) -> list:
    """``groups`` x ``group_size`` samples: each group one task's real prompt, replies of random length."""
    import gymnasium as gym

    import clawgym  # noqa: F401  (registers the env ids)
    from clawgym.rl.trainer.samples import render_prompt_ids
    from clawgym.rl.types import Sample

    generator = torch.Generator().manual_seed(seed)
    low, high = spec["reply"]
    env = gym.make(spec["env"], **spec["kwargs"])
    samples = []
    try:
        for group in range(spec["groups"]):
            observation, _ = env.reset(seed=seed + group)
            prompt = render_prompt_ids(tokenizer, observation, env.unwrapped.tools or None)
            for i in range(spec["group_size"]):
                length = int(torch.randint(low, high + 1, (1,), generator=generator))
                reply = torch.randint(100, 20000, (length,), generator=generator).tolist()
                samples.append(Sample(prompt_ids=prompt, response_ids=reply, old_logprobs=[-3.0] * length,
                                      reward=float(i % 2), group_id=f"g{group}", hint=spec.get("hint"),
                                      hint_messages=list(observation) if spec.get("hint") else None))
    finally:
        env.close()
    if spec.get("interleave"):  # the personal trainer's batches need not come group by group
        samples = [samples[i] for i in sorted(range(len(samples)), key=lambda i: i % spec["group_size"])]
    return samples


@torch.no_grad()
def set_old_logprobs(model_name: str, dtype: torch.dtype, samples: list) -> None:
    """The starting weights' logprobs of each reply, one sample at a time (nothing shared)."""
    from clawgym.inference.models import load_model
    from clawgym.rl.trainer.batching import collate, gather_logprobs, response_logits

    model, _ = load_model(model_name, dtype=dtype)
    for sample in samples:
        batch = collate([sample.prompt_ids], [sample.response_ids], 0, torch.device("cpu"))
        logits = response_logits(model, batch, share_prefix=False)
        sample.old_logprobs = gather_logprobs(logits, batch.targets)[0].tolist()


def one_step(model_name: str, dtype: torch.dtype, spec: dict, samples: list, shared: bool) -> tuple[float, dict, dict]:
    from clawgym.inference.models import load_model
    from clawgym.rl.launch.build import lora_targets
    from clawgym.rl.launch.schema import LoraSection
    from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig

    model, tokenizer = load_model(model_name, dtype=dtype)
    targets = lora_targets(LoraSection(top_layers=spec["top_layers"] or 0), model.config.num_hidden_layers)
    lora = LoraSettings(r=16, alpha=32, target_modules=targets)
    settings = {**spec.get("trainer", {}), **(spec.get("shared", {}) if shared else {})}
    trainer = TorchTrainer(model, tokenizer, TrainerConfig(lr=2e-4, micro_batch_size=spec["micro_batch"], lora=lora,
                                                           shared_prefix=shared, **settings))
    start = time.perf_counter()
    metrics = trainer.train_step(samples)
    seconds = time.perf_counter() - start
    return seconds, metrics, {k: v.float() for k, v in trainer.trainable_state_dict().items()}


def forwarded_tokens(samples: list, micro_batch: int, shared: bool) -> int:
    """Token positions the trainer's forward pass runs (a checkpointed micro-batch runs it twice; not counted)."""
    from clawgym.rl.trainer import batching

    total = 0
    for indices in batching.micro_batches([s.prompt_ids for s in samples], micro_batch, by_prompt=shared):
        part = [samples[i] for i in indices]
        batch = batching.collate([s.prompt_ids for s in part], [s.response_ids for s in part], 0, torch.device("cpu"))
        total += batching.forwarded_tokens(batch, shared)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--dtype", default="", help="float32 / bfloat16; empty: the catalog's choice for this CPU")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from clawgym.inference.catalog import default_dtype
    from clawgym.inference.models import load_tokenizer

    torch.set_num_threads(args.threads)
    dtype_name = args.dtype or str(default_dtype(args.model)).removeprefix("torch.")
    dtype = getattr(torch, dtype_name)
    tokenizer = load_tokenizer(args.model)
    rows = []
    for name in args.workloads:
        spec = WORKLOADS[name]
        samples = make_samples(tokenizer, spec, args.seed)
        set_old_logprobs(args.model, dtype, samples)
        whole_s, whole_m, whole_w = one_step(args.model, dtype, spec, samples, shared=False)
        shared_s, shared_m, shared_w = one_step(args.model, dtype, spec, samples, shared=True)
        drift = max(float((shared_w[k] - whole_w[k]).abs().max()) for k in whole_w)
        scale = statistics.fmean(float(v.abs().mean()) for v in whole_w.values())
        row = {
            "workload": name, "model": args.model, "dtype": dtype_name, "threads": args.threads,
            "cpu": cpu_name(), "samples": len(samples), "micro_batch": spec["micro_batch"],
            "prompt_tokens": statistics.fmean(len(s.prompt_ids) for s in samples),
            "reply_tokens": statistics.fmean(len(s.response_ids) for s in samples),
            "forwarded_whole": forwarded_tokens(samples, spec["micro_batch"], False),
            "forwarded_shared": forwarded_tokens(samples, spec["micro_batch"], True),
            "step_s_whole": whole_s, "step_s_shared": shared_s, "speedup": whole_s / shared_s,
            "loss_whole": whole_m["loss"], "loss_shared": shared_m["loss"],
            "grad_norm_whole": whole_m["grad_norm"], "grad_norm_shared": shared_m["grad_norm"],
            "max_weight_diff": drift, "mean_abs_weight": scale,
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        with RESULTS.open("a") as f:
            f.write(json.dumps(row) + "\n")

    print(f"\n{args.model} ({dtype_name}), {args.threads} torch thread(s), {cpu_name()}\n")
    print("| workload | samples | prompt tok | reply tok | tokens forwarded, whole → shared | step s, whole | "
          "step s, shared | speedup | loss whole / shared | grad norm whole / shared | max weight diff |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---|---|---:|")
    for r in rows:
        print(f"| {r['workload']} | {r['samples']} | {r['prompt_tokens']:.0f} | {r['reply_tokens']:.0f} | "
              f"{r['forwarded_whole']:,} → {r['forwarded_shared']:,} | {r['step_s_whole']:.1f} | "
              f"{r['step_s_shared']:.1f} | {r['speedup']:.2f}x | {r['loss_whole']:.5f} / {r['loss_shared']:.5f} | "
              f"{r['grad_norm_whole']:.4f} / {r['grad_norm_shared']:.4f} | {r['max_weight_diff']:.1e} |")


if __name__ == "__main__":
    main()
