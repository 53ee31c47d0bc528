"""How long does compiling a wish keep the judge model busy, batched as the product does it or call by call?

For the first ``--wishes`` wishes of the wish benchmark's dev split, the judge model (an in-process
:class:`~clawgym.inference.hf.HFPolicy`, the engine ``clawgym serve`` runs) writes what compiling a wish needs
(:func:`clawgym.personal.wish_checks.draft`: ``--drafts`` check drafts, the first greedy, and three replies told to
meet and three told to miss the wish) two ways, side by side on each wish (which goes first alternates):

- ``batched``: :func:`~clawgym.personal.wish_checks.draft`, every text in one engine batch (the product's way);
- ``sequential``: the same prompts as five calls in a row (the greedy draft, the sampled drafts, the meet- and
  the miss-replies), the way compiling ran before the batch.

While each arm runs, ``--load`` simulated people keep the engine serving short greedy replies
(``--reply-tokens``), as a person talking to ``clawgym serve`` does; the row records each arm's seconds per wish
and the served replies' median latency during it. One row per run in ``--results``
(benchmarks/results/wish_compile_speed.jsonl), with the host and commit; ``--markdown`` writes the page.

    .venv/bin/python benchmarks/wish_compile_speed.py                      # 0.5B coder, 3 wishes, one person talking
    .venv/bin/python benchmarks/wish_compile_speed.py --markdown           # docs/results/wish_compile_speed.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agentic_learning import cpu_kind  # noqa: E402
from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import add_page_arguments, generated_by, write_page  # noqa: E402
from wish_judge import ITEMS, load_policy, read_items, shown  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "wish_compile_speed.jsonl"
PAGE = Path("docs/results/wish_compile_speed.md")
ARMS = ("batched", "sequential")
PERSON = [{"role": "user", "content": "In one sentence: why do leaves change colour in autumn?"}]


def sequential(policy: Any, wish: str, request: str, drafts: int, temperature: float) -> None:
    """The texts of :func:`~clawgym.personal.wish_checks.draft`, one call after another."""
    from clawgym.inference.completion import greedy_completion, sampled_completions
    from clawgym.personal.wish_checks import (
        EXAMPLES_EACH,
        MAX_CODE_TOKENS,
        MAX_EXAMPLE_TOKENS,
        code_prompt,
        reply_prompt,
    )

    greedy_completion(policy, code_prompt(wish), MAX_CODE_TOKENS)
    sampled_completions(policy, code_prompt(wish), drafts - 1, MAX_CODE_TOKENS, temperature)
    for side in (True, False):
        sampled_completions(policy, reply_prompt(request, wish, side), EXAMPLES_EACH, MAX_EXAMPLE_TOKENS, temperature)


def batched(policy: Any, wish: str, request: str, drafts: int, temperature: float) -> None:
    from clawgym.personal.wish_checks import draft

    draft(policy, wish, request, drafts, temperature)


class People:
    """``n`` people each asking for a short greedy reply again as soon as the last one came (their latencies kept)."""

    def __init__(self, policy: Any, n: int, reply_tokens: int) -> None:
        self.policy, self.n, self.reply_tokens = policy, n, reply_tokens
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._talk()), daemon=True)

    async def _person(self) -> None:
        from clawgym.core.policy import SamplingParams

        while not self._stop.is_set():
            started = time.perf_counter()
            await self.policy.generate(PERSON, sampling=SamplingParams(temperature=0.0, max_tokens=self.reply_tokens))
            self.latencies.append(time.perf_counter() - started)

    async def _talk(self) -> None:
        await asyncio.gather(*(self._person() for _ in range(self.n)))

    def __enter__(self) -> "People":
        if self.n:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.n:
            self._thread.join(timeout=600)


def measure(policy: Any, wishes: Sequence[tuple[str, str]], drafts: int, temperature: float, load: int,
            reply_tokens: int) -> dict[str, dict[str, Any]]:
    arms: dict[str, dict[str, Any]] = {arm: {"seconds": [], "reply_latencies": []} for arm in ARMS}
    run = {"batched": batched, "sequential": sequential}
    for k, (wish, request) in enumerate(wishes):
        for arm in ARMS if k % 2 == 0 else ARMS[::-1]:
            with People(policy, load, reply_tokens) as people:
                started = time.perf_counter()
                run[arm](policy, wish, request, drafts, temperature)
                arms[arm]["seconds"].append(round(time.perf_counter() - started, 1))
            arms[arm]["reply_latencies"] += people.latencies
            print(f"  {arm:10s} {arms[arm]['seconds'][-1]:6.1f} s  {wish[:60]!r}", flush=True)
    for arm in arms.values():
        latencies = arm.pop("reply_latencies")
        arm["replies"] = len(latencies)
        arm["reply_p50_s"] = round(statistics.median(latencies), 2) if latencies else None
    return arms


# ------------------------------------------------------------------ the page
def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| judge model | wishes | drafts | people talking | batched: s a wish (mean) "
             "| sequential: s a wish (mean) | speed-up | reply p50 batched / sequential (s) | host | commit |",
             "|" + "---|" * 10]
    for row in rows:
        b, s = row["arms"]["batched"], row["arms"]["sequential"]
        mean_b, mean_s = statistics.mean(b["seconds"]), statistics.mean(s["seconds"])
        lines.append(f"| {row['model']} | {len(b['seconds'])} | {row['drafts']} | {row['load']} | {mean_b:.0f} | "
                     f"{mean_s:.0f} | {mean_s / mean_b:.1f}x | {b['reply_p50_s']} / {s['reply_p50_s']} | "
                     f"{row['host']} | {row['commit']} |")
    return "\n".join(lines)


def markdown(results: Path) -> str:
    rows = read_rows(results)
    return "\n\n".join([
        "# Compiling a wish: the judge model's time, batched or call by call",
        generated_by("wish_compile_speed.py", PAGE, shown(results)),
        "Each row: the first wishes of the wish benchmark's dev split; per wish, the texts compiling needs (check "
        "drafts, the first greedy, and three replies told to meet and three to miss the wish) written in one engine "
        "batch (`batched`, clawgym.personal.wish_checks.draft) and as five calls in a row (`sequential`), side by "
        "side, while simulated people keep asking the same engine for short replies.",
        table(rows),
        "Command: `.venv/bin/python benchmarks/wish_compile_speed.py`.",
        f"Hardware (each row's `host`): {'; '.join(sorted({row['host'] for row in rows}))}.",
    ]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=Path, default=ITEMS)
    parser.add_argument("--judge-model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--wishes", type=int, default=3)
    parser.add_argument("--drafts", type=int, default=6)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--load", type=int, default=1, help="simulated people talking to the engine meanwhile")
    parser.add_argument("--reply-tokens", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args(argv)
    if write_page(args, markdown):
        return 0
    first: dict[str, str] = {}
    for item in read_items(args.items, "dev"):
        first.setdefault(item["wish"], item["request"])
    wishes = list(first.items())[:args.wishes]
    policy = load_policy(args.judge_model, args.seed)
    wall = time.perf_counter()
    try:
        arms = measure(policy, wishes, args.drafts, args.temperature, args.load, args.reply_tokens)
    finally:
        asyncio.run(policy.close())
    row = {"model": args.judge_model, "drafts": args.drafts, "temperature": args.temperature, "load": args.load,
           "reply_tokens": args.reply_tokens, "wishes": [w for w, _ in wishes], "arms": arms,
           "host": f"{host()}, {cpu_kind()}", "commit": git_commit(), "wall_s": round(time.perf_counter() - wall, 1)}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")
    print(table([row]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
