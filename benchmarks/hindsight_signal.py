"""What a run's hindsight groups offered the trainer, wish by wish, read back from its turn log.

A cell of the method table reports held-out scores; this says why they moved. Every group the personal
trainer scored is a ``hindsight_group`` event in the turn log (each member's reply, the wishes it met,
its reward and advantage); :func:`clawgym.serve.hindsight.wish_signal` reduces them per wish, for the
first and the second half of the run's groups:

    .venv/bin/python benchmarks/hindsight_signal.py runs/lfc/<cell>          # or a turns.jsonl

``real``: how often the served reply met the wish; ``none met``: groups in which no member met it (nothing
to learn it from); ``push``: GRPO's step toward the members that meet it (> 0: toward meeting it).
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawgym.rl.types import read_jsonl  # noqa: E402
from clawgym.serve.hindsight import wish_signal  # noqa: E402


def group_events(path: Path) -> list[dict]:
    log = path / "turns.jsonl" if path.is_dir() else path
    if not log.exists():
        raise SystemExit(f"no turn log at {log}")
    return [e for e in read_jsonl(log) if e.get("event") == "hindsight_group"]  # a torn last line is skipped


def number(value: float | None, spec: str = ".2f") -> str:
    """A share or a push; "-" where the half had no group for the wish (or no trained one)."""
    return "-" if value is None or math.isnan(value) else format(value, spec)


def table(groups: list[dict]) -> str:
    half = len(groups) // 2
    first, second = wish_signal(groups[:half]), wish_signal(groups[half:])
    lines = [f"{'wish':<52} {'groups':>6}  {'real':>11}  {'none met':>11}  {'push':>13}",
             f"{'':<52} {'':>6}  {'1st -> 2nd half':>41}"]
    for wish in sorted(set(first) | set(second)):
        a, b = first.get(wish, {}), second.get(wish, {})
        n = int(a.get("groups", 0) + b.get("groups", 0))
        cells = [f"{number(a.get(k))} -> {number(b.get(k))}" for k in ("real", "none_met")]
        push = f"{number(a.get('push'), '+.2f')} -> {number(b.get('push'), '+.2f')}"
        lines.append(f"{wish[:52]:<52} {n:>6}  {cells[0]:>11}  {cells[1]:>11}  {push:>13}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run directory (its turns.jsonl) or a turn log")
    args = parser.parse_args()
    groups = group_events(args.run)
    if not groups:
        raise SystemExit(f"{args.run}: no hindsight_group events (a run without serve.hindsight_k, "
                         "or one recorded before groups were logged)")
    outcomes = collections.Counter(g["outcome"] for g in groups)
    kinds = collections.Counter(m["kind"] for g in groups for m in g["members"])
    print(f"{len(groups)} groups: {dict(outcomes)}; members {dict(kinds)}")
    print(table(groups))


if __name__ == "__main__":
    main()
