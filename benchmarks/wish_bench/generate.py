"""Write the wish benchmark's items: a model's replies to every request, each labelled by the hand checks.

For every kind of person and every request, the model writes ``--plain`` sampled replies with no wish in
the system prompt (each labelled against every wish of the kind) and, for every wish, ``--prompted``
sampled replies with that wish written into the system prompt (each labelled against that wish only, so
a reply written to a test wish never shows up among dev items). Sampling is at temperature 0.9, so both met and
unmet replies occur, with a seed per reply drawn from ``--seed`` and the reply's key (the tokens also
depend on which replies share a batch, so a resumed run may differ in the replies it had left to write).

The raw replies go to ``--replies`` (JSONL, appended after every batch): a rerun skips the replies already
there, so an interrupted run resumes where it stopped. The items are then rewritten from all the replies
of the file and the current checks into ``--items``, one per line: kind, request, request_index, reply,
wish, wish_id, split, met, model, seed, sample, prompted, finish_reason.

    .venv/bin/python benchmarks/wish_bench/generate.py                       # qwen2.5-coder-0.5b
    .venv/bin/python benchmarks/wish_bench/generate.py --model qwen2.5-coder-1.5b
    .venv/bin/python benchmarks/wish_bench/generate.py --model tiny-random --kinds parent --plain 1 \\
        --prompted 0 --replies /tmp/r.jsonl --items /tmp/i.jsonl                            # a smoke run
    .venv/bin/python benchmarks/wish_bench/generate.py --items-only          # the items of the replies written
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.wish_bench.checks import met  # noqa: E402
from benchmarks.wish_bench.people import KINDS, Kind, kind, split_of  # noqa: E402
from clawgym.envs.openclaw_chat.env import SYSTEM_PROMPT  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
REPLIES = RESULTS / "wish_bench_replies.jsonl"
ITEMS = RESULTS / "wish_bench_items.jsonl"
DEFAULT_MODEL = "qwen2.5-coder-0.5b"
TEMPERATURE = 0.9
MAX_TOKENS = 384


def system_prompt(wish: str | None) -> str:
    if wish is None:
        return SYSTEM_PROMPT
    return f"{SYSTEM_PROMPT}\nThis user told you before: \"{wish}\". Do as they asked."


def key_of(model: str, kind_id: str, request_index: int, prompted: str, sample: int) -> str:
    return f"{model}|{kind_id}|{request_index}|{prompted}|{sample}"


def seed_of(base: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{base}|{key}".encode()).digest()[:4], "big")


def jobs_for(model: str, kinds: Sequence[Kind], plain: int, prompted: int, seed: int) -> list[dict[str, Any]]:
    """Every reply to write: per request, ``plain`` without a wish and ``prompted`` per wish with it."""
    jobs = []
    for k in kinds:
        for r, request in enumerate(k.requests):
            variants = [("", None)] * plain + [(w.id, w.text) for w in k.wishes for _ in range(prompted)]
            counts: dict[str, int] = {}
            for wish_id, text in variants:
                sample = counts[wish_id] = counts.get(wish_id, -1) + 1
                key = key_of(model, k.id, r, wish_id, sample)
                jobs.append({"key": key, "model": model, "kind": k.id, "request_index": r, "request": request,
                             "prompted": wish_id, "wish_text": text, "sample": sample, "seed": seed_of(seed, key)})
    return jobs


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by an interrupted run: written again
                continue
    return rows


async def write_replies(policy: Any, jobs: list[dict[str, Any]], path: Path, batch: int = 64,
                        max_tokens: int = MAX_TOKENS) -> int:
    """Generate the replies of ``jobs`` not yet in ``path``, ``batch`` at a time (one asyncio.gather each),
    appending each batch to ``path``. Returns how many were written."""
    from clawgym.core.policy import SamplingParams

    done = {row["key"] for row in read_jsonl(path)}
    todo = [job for job in jobs if job["key"] not in done]
    print(f"{len(jobs)} replies wanted, {len(jobs) - len(todo)} already in {path}, {len(todo)} to write", flush=True)
    if not todo:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with path.open("a", encoding="utf-8") as handle:  # end a line an interrupted run cut short
            handle.write("\n")
    started = time.perf_counter()

    async def one(job: dict[str, Any]) -> dict[str, Any]:
        messages = [{"role": "system", "content": system_prompt(job["wish_text"])},
                    {"role": "user", "content": job["request"]}]
        sampling = SamplingParams(temperature=TEMPERATURE, max_tokens=max_tokens, seed=job["seed"])
        generation = await policy.generate(messages, sampling=sampling)
        row = {k: v for k, v in job.items() if k != "wish_text"}
        return {**row, "reply": generation.text, "finish_reason": generation.finish_reason}

    written = 0
    for start in range(0, len(todo), batch):
        rows = await asyncio.gather(*(one(job) for job in todo[start:start + batch]))
        with path.open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        written += len(rows)
        elapsed = time.perf_counter() - started
        left = elapsed / written * (len(todo) - written)
        print(f"  {written}/{len(todo)} replies, {elapsed:.0f} s, about {left:.0f} s left", flush=True)
    return written


def items_of(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each reply labelled by the hand checks: a plain reply against every wish of its kind, a prompted one
    against its own wish. A reply of a request or wish no longer in the benchmark is left out."""
    items = []
    for row in replies:
        try:
            k = kind(row["kind"])
            request = k.requests[row["request_index"]]
        except (KeyError, IndexError):
            continue
        if request != row["request"]:
            continue  # the request was rewritten since: its old replies are not items
        wishes = [w for w in k.wishes if not row["prompted"] or w.id == row["prompted"]]
        for w in wishes:
            items.append({"kind": k.id, "request": request, "request_index": row["request_index"],
                          "reply": row["reply"], "wish": w.text, "wish_id": w.id, "split": split_of(w.id),
                          "met": met(w.id, request, row["reply"]), "model": row["model"], "seed": row["seed"],
                          "sample": row["sample"], "prompted": bool(row["prompted"]),
                          "finish_reason": row.get("finish_reason")})
    return items


def write_items(replies_path: Path, items_path: Path) -> list[dict[str, Any]]:
    items = items_of(read_jsonl(replies_path))
    items_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = items_path.with_suffix(items_path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    tmp.replace(items_path)
    return items


def summary(items: list[dict[str, Any]]) -> str:
    out = []
    for split in ("dev", "test"):
        part = [i for i in items if i["split"] == split]
        wishes = {i["wish_id"] for i in part}
        both = {w for w in wishes if {i["met"] for i in part if i["wish_id"] == w} == {True, False}}
        out.append(f"{split}: {len(part)} items, {sum(i['met'] for i in part)} met, {len(wishes)} wishes "
                   f"({len(both)} with both labels)")
    return "; ".join(out)


def main(argv: Sequence[str] | None = None, policy: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL, help="a model clawgym knows by name, or a checkpoint dir")
    parser.add_argument("--kinds", nargs="+", default=[k.id for k in KINDS], help="kinds of person (default: all)")
    parser.add_argument("--plain", type=int, default=4, help="replies per request with no wish in the prompt")
    parser.add_argument("--prompted", type=int, default=2, help="replies per request and wish with the wish in it")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--batch", type=int, default=64, help="replies generated together (one asyncio.gather)")
    parser.add_argument("--replies", type=Path, default=REPLIES)
    parser.add_argument("--items", type=Path, default=ITEMS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--items-only", action="store_true",
                        help="only rewrite --items from the replies already in --replies (loads no model)")
    args = parser.parse_args(argv)
    kinds = [kind(k) for k in args.kinds]
    if args.items_only:
        items = write_items(args.replies, args.items)
        print(f"wrote {len(items)} items to {args.items}: {summary(items)}", flush=True)
        return 0

    jobs = jobs_for(args.model, kinds, args.plain, args.prompted, args.seed)
    done = {row["key"] for row in read_jsonl(args.replies)}
    if any(job["key"] not in done for job in jobs):
        owned = policy is None
        if owned:
            import torch

            from clawgym.inference.catalog import default_dtype
            from clawgym.inference.hf import HFPolicy

            torch.manual_seed(args.seed)
            policy = HFPolicy.from_pretrained(args.model, dtype=getattr(torch, default_dtype(args.model)),
                                              seed=args.seed)

        async def run() -> None:
            try:
                await write_replies(policy, jobs, args.replies, args.batch, args.max_tokens)
            finally:
                if owned:
                    await policy.close()

        asyncio.run(run())
    else:
        print(f"all {len(jobs)} replies already in {args.replies}", flush=True)
    items = write_items(args.replies, args.items)
    print(f"wrote {len(items)} items to {args.items}: {summary(items)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
