"""Base scores of the named models on the agentic settings, under the strict and the lenient reading.

Greedy (temperature 0), one episode per task with the eval seeds of ``clawgym eval``:

- BFCL-v0: ``--per-category`` tasks of each single-turn category in ``--bfcl-categories``;
- ToolCall-v0: the first ``--limit`` tasks of its held-out ``test`` split;
- Terminal-v0: its held-out ``test`` split (bubblewrap sandbox);
- MiniWoB-v0: the first ``--limit`` tasks (real Chromium).

Each (model, env, reading) cell appends one row to ``benchmarks/results/base_scores.jsonl`` and is
skipped when that row exists (``--force`` reruns), so the table can be filled piece by piece. The
*strict* reading takes only ``<tool_call>`` blocks as calls; the *lenient* one (every env's default)
also takes a message that is only a bare or fenced JSON call (:mod:`clawgym.core.messages`), as
BFCL's own prompt-mode handlers do.

    .venv/bin/python benchmarks/base_scores.py --models qwen2.5-coder-0.5b smollm2-135m --envs bfcl toolcall
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path

import torch

from clawgym.core.policy import SamplingParams
from clawgym.inference.hf import HFPolicy
from clawgym.rl.evaluate import eval_rows, play_tasks

RESULTS = Path(__file__).resolve().parent / "results" / "base_scores.jsonl"
READINGS = ("strict", "lenient")


def env_cells(args: argparse.Namespace) -> dict[str, tuple[str, dict, int | None]]:
    """env name -> (gym id, env kwargs, task limit)."""
    return {
        "bfcl": ("clawgym/BFCL-v0", {"category": args.bfcl_categories, "per_category": args.per_category}, None),
        "toolcall": ("clawgym/ToolCall-v0", {"split": "test"}, args.limit),
        "terminal": ("clawgym/Terminal-v0", {"split": "test", "max_turns": args.max_turns}, None),
        "miniwob": ("clawgym/MiniWoB-v0", {"max_turns": args.max_turns}, args.limit),
    }


def done_cells() -> set[tuple[str, str, str]]:
    if not RESULTS.exists():
        return set()
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    return {(r["model"], r["env"], r["reading"]) for r in rows}


async def run_cell(policy: HFPolicy, env_id: str, kwargs: dict, limit: int | None, reading: str,
                   args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    trajectories = await play_tasks(env_id, policy, limit=limit, env_kwargs={**kwargs, "tool_call_reading": reading},
                                    sampling=SamplingParams(temperature=0.0, max_tokens=args.max_tokens),
                                    num_workers=args.concurrency)
    row = eval_rows(trajectories, by="category" if "BFCL" in env_id else None)
    return {"rows": row, "wall_s": round(time.perf_counter() - started, 1),
            "tool_calls": sum(t.info.get("tool_calls", 0) for t in trajectories)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"])
    parser.add_argument("--envs", nargs="+", default=["bfcl", "toolcall", "terminal", "miniwob"])
    parser.add_argument("--readings", nargs="+", default=list(READINGS), choices=READINGS)
    parser.add_argument("--bfcl-categories", nargs="+",
                        default=["simple_python", "multiple", "parallel", "parallel_multiple",
                                 "irrelevance", "live_simple"])
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--limit", type=int, default=20, help="ToolCall-v0 / MiniWoB-v0 tasks")
    parser.add_argument("--max-turns", type=int, default=10, help="Terminal-v0 / MiniWoB-v0 turn limit")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    cells = env_cells(args)
    done = set() if args.force else done_cells()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for model in args.models:
        todo = [(env, reading) for env in args.envs for reading in args.readings if (model, env, reading) not in done]
        if not todo:
            continue
        policy = HFPolicy.from_pretrained(model, max_batch_size=args.concurrency)
        try:
            for env, reading in todo:
                env_id, kwargs, limit = cells[env]
                result = await run_cell(policy, env_id, kwargs, limit, reading, args)
                record = {"model": model, "env": env, "reading": reading, "env_kwargs": kwargs, "limit": limit,
                          "max_tokens": args.max_tokens, "dtype": str(policy.model.dtype).replace("torch.", ""),
                          "host": f"{platform.machine()} {os.cpu_count()} cores",
                          "torch_threads": torch.get_num_threads(), **result}
                with RESULTS.open("a") as out:
                    out.write(json.dumps(record) + "\n")
                overall = result["rows"]["all"]
                print(f"{model:20s} {env:9s} {reading:8s} success {overall['success_rate']:.3f} over "
                      f"{overall['episodes']} ({overall['errors']} errors), {result['tool_calls']} tool calls, "
                      f"{result['wall_s']:.0f} s", flush=True)
        finally:
            await policy.close()
    print_table()


def print_table() -> None:
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()] if RESULTS.exists() else []
    latest = {(r["model"], r["env"], r["reading"]): r for r in rows}
    models = list(dict.fromkeys(r["model"] for r in rows))
    envs = list(dict.fromkeys(r["env"] for r in rows))
    print("\n| model | " + " | ".join(f"{e} strict | {e} lenient" for e in envs) + " |")
    print("|---|" + "---:|" * (2 * len(envs)))
    for model in models:
        cells = []
        for env in envs:
            for reading in READINGS:
                r = latest.get((model, env, reading))
                cells.append(f"{r['rows']['all']['success_rate']:.2f} (n={r['rows']['all']['episodes']})" if r else "–")
        print(f"| {model} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    asyncio.run(main())
