"""What a longer window costs SmolLM2-135M: perplexity of the native model vs YaRN-extended ones.

OpenClaw's default request is ~13.3k SmolLM2 tokens and the model's window is 8,192. Extending the
window with YaRN (``policy.context_window``) changes the rotary frequencies, so it may hurt the short
contexts the model was trained on. This measures perplexity on English prose (the license texts every
Debian machine ships in /usr/share/common-licenses, concatenated) at three lengths: 512 tokens, 6,000
tokens (inside the native window) and 12,000 tokens (only an extended model can read it), and the
prefill time of each. All rows run in this one process, one after another.

    .venv/bin/python benchmarks/context_extension.py [--windows 8192 16384 24576]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import torch

from clawgym.inference.models import load_model

TEXTS = ["GPL-3", "Apache-2.0", "LGPL-3", "GFDL-1.3", "MPL-2.0", "GPL-2", "Artistic", "CC0-1.0"]
LENGTHS = (512, 6000, 12000)
SCORED = 256


def corpus(tokenizer, need: int) -> list[int]:
    root = Path("/usr/share/common-licenses")
    ids: list[int] = []
    for name in TEXTS:
        if (root / name).is_file():
            ids += tokenizer((root / name).read_text(errors="ignore"), add_special_tokens=False)["input_ids"]
        if len(ids) >= need:
            return ids[:need]
    raise SystemExit(f"not enough text under {root} for {need} tokens")


@torch.inference_mode()
def perplexity(model, ids: list[int], length: int) -> tuple[float, float]:
    """Perplexity of the last ``SCORED`` tokens of a ``length``-token window (so every row scores the
    same amount of text, with more or less context before it), and the forward's seconds."""
    window = torch.tensor([ids[:length]])
    started = time.perf_counter()
    logits = model(input_ids=window, logits_to_keep=SCORED + 1).logits[0, :-1].float()
    seconds = time.perf_counter() - started
    targets = window[0, -SCORED:]
    nll = torch.nn.functional.cross_entropy(logits, targets)
    return math.exp(float(nll)), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--windows", type=int, nargs="+", default=[8192, 16384, 24576])
    args = parser.parse_args()
    rows = []
    for window in args.windows:
        model, tokenizer = load_model(args.model, context_window=window)
        ids = corpus(tokenizer, max(LENGTHS))
        native = window <= 8192
        cells = []
        for length in LENGTHS:
            if length > model.config.max_position_embeddings:
                cells.append("n/a (window too small)")
                continue
            ppl, seconds = perplexity(model, ids, length)
            cells.append(f"{ppl:.2f} ({seconds:.1f} s)")
        rows.append((f"{window} ({'native' if native else 'YaRN x' + format(window / 8192, 'g')})", cells))
        del model
    print(f"model {args.model}; perplexity of the last {SCORED} tokens of an N-token text (forward seconds); "
          f"{torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f}\n")
    print("| window | " + " | ".join(f"N = {n:,}" for n in LENGTHS) + " |")
    print("|---|" + "---:|" * len(LENGTHS))
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
