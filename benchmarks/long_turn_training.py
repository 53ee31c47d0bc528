"""Training on OpenClaw-sized turns on a CPU: peak memory and seconds per train step.

A judged OpenClaw turn is a prompt of 3-16k tokens (OpenClaw's system prompt, tool schemas, the
conversation) and a reply of up to ``maxTokens``. The personal trainer trains on it as sampled (the
full prompt, token in, token out). This measures one train step of the torch trainer, as `clawgym serve`
builds it (SmolLM2-135M, LoRA r=16 from the chat launcher, or full weights), on such turns: the peak
resident memory of the process and the seconds per step, with and without gradient checkpointing.
Each row runs in its own subprocess so that peak memory is that row's alone. Prompts above the
model's 8,192-token window use a YaRN-extended window (``policy.context_window``), as serving them does.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/long_turn_training.py [--prompts 8000 16000] [--method hybrid]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

RESPONSE = 128


def conversation(tokenizer, tokens: int) -> list[dict]:
    """A system prompt of English prose (Debian's license texts) and a question, ~``tokens`` long in all."""
    root = Path("/usr/share/common-licenses")
    text = "".join(path.read_text(errors="ignore") for path in sorted(root.iterdir()) if path.is_file())
    ids = tokenizer(text, add_special_tokens=False)["input_ids"][: tokens - 40]
    if len(ids) < tokens - 40:
        raise SystemExit(f"not enough text under {root} for {tokens} tokens")
    return [{"role": "system", "content": tokenizer.decode(ids)},
            {"role": "user", "content": "Which of these licenses lets me ship a closed-source app?"}]


def one_row(prompt_tokens: int, lora: bool, checkpointing: bool, method: str, steps: int,
            model_name: str = "smollm2-135m") -> dict:
    """Build the trainer as `clawgym serve` does and time ``steps`` train steps on one long turn."""
    import torch

    from clawgym.inference.catalog import MODELS
    from clawgym.inference.chat_template import encode_prompt
    from clawgym.inference.models import load_model
    from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig
    from clawgym.rl.types import Sample

    native = MODELS[model_name].context_window if model_name in MODELS else 8192
    window = 2 * native if prompt_tokens + RESPONSE > native else None
    model, tokenizer = load_model(model_name, context_window=window)
    config = TrainerConfig(method=method, lr=1e-4, micro_batch_size=1, gradient_checkpointing=checkpointing,
                           lora=LoraSettings(r=16, alpha=32) if lora else None)
    trainer = TorchTrainer(model, tokenizer, config)
    generator = torch.Generator().manual_seed(0)
    messages = conversation(tokenizer, prompt_tokens)
    prompt = encode_prompt(tokenizer, messages)
    samples = []
    for reward in (1.0, 0.0):  # a group of two replies, one judged good and one bad: a non-zero advantage
        response = torch.randint(100, 40000, (RESPONSE,), generator=generator).tolist()  # in every vocabulary here
        samples.append(Sample(prompt_ids=prompt, response_ids=response, old_logprobs=[-5.0] * RESPONSE, reward=reward,
                              group_id="g", hint="The user wants a shorter answer." if method != "grpo" else None,
                              hint_messages=messages))
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times = []
    for _ in range(steps):
        begin = time.perf_counter()
        metrics = trainer.train_step(samples)
        times.append(time.perf_counter() - begin)
    return {"prompt_tokens": len(prompt), "lora": lora, "checkpointing": checkpointing, "method": method,
            "samples": len(samples), "seconds_per_step": min(times), "rss_before_gib": start_rss / 1024,
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024,
            "loss": float(metrics.get("loss", float("nan")))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, nargs="+", default=[8000, 16000])
    parser.add_argument("--method", default="hybrid")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--row", help=argparse.SUPPRESS)  # internal: run one row, print JSON
    args = parser.parse_args()
    if args.row:
        spec = json.loads(args.row)
        print(json.dumps(one_row(**spec)))
        return
    rows = []
    for prompt in args.prompts:
        for lora, checkpointing in ((True, True), (True, False), (False, True)):
            spec = {"prompt_tokens": prompt, "lora": lora, "checkpointing": checkpointing, "method": args.method,
                    "steps": args.steps}
            done = subprocess.run([sys.executable, __file__, "--row", json.dumps(spec)], capture_output=True, text=True)
            if done.returncode != 0:
                tail = done.stderr.strip().splitlines()[-1:] or ["killed"]
                rows.append({**spec, "error": f"exit {done.returncode}: {tail[0]}"})
            else:
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(rows[-1], file=sys.stderr, flush=True)
    print(f"\nSmolLM2-135M, {RESPONSE}-token replies, 2 samples a step, method {args.method}, "
          f"torch threads {os.environ.get('OMP_NUM_THREADS', 'default')}, load average {os.getloadavg()[0]:.1f}")
    print("| prompt tokens | weights | gradient checkpointing | s / train step | peak RSS (GiB) |")
    print("|---:|:---|:---:|---:|---:|")
    for row in rows:
        weights = "LoRA r=16" if row["lora"] else "full"
        if "error" in row:
            print(f"| {row['prompt_tokens']} | {weights} | {'on' if row['checkpointing'] else 'off'} "
                  f"| {row['error']} | |")
        else:
            print(f"| {row['prompt_tokens']} | {weights} | {'on' if row['checkpointing'] else 'off'} "
                  f"| {row['seconds_per_step']:.1f} | {row['peak_rss_gib']:.2f} |")


if __name__ == "__main__":
    main()
