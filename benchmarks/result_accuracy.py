"""Can the model do the arithmetic its personas check? First replies of the method table's conversations.

Each persona has one check that needs the *correct* number (student "gives the final answer", teacher
and TA "mentions the result"): a wrong number does not pass. A correction such as "That doesn't give
me the final number." cannot teach a model to add, so this check's pass rate bounds what any method
learns from the conversation. This reads the turn logs that `learning_from_conversation.py` leaves
in its run directories (no model is run), matches each first reply to its bundled task, and counts
replies that state the right number, a wrong number (after a result cue, as the checks read it), or
no number, separately for replies of the initial weights (policy version 0) and of trained ones.

    .venv/bin/python benchmarks/result_accuracy.py                 # runs/lfc/*/turns.jsonl
    .venv/bin/python benchmarks/result_accuracy.py --runs path/to/runs
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks, stated_results  # noqa: E402

OUTCOMES = ("right", "wrong", "none")


def classify(reply: str, answer: float) -> str:
    """``right`` if the reply states the answer as a result, ``wrong`` if it states another number, else ``none``."""
    stated = stated_results(reply)
    if float(answer) in stated:
        return "right"
    return "wrong" if stated else "none"


def openers() -> dict[str, tuple[str, float]]:
    """The first user message of every bundled task -> (persona, correct answer)."""
    return {PERSONAS[t.data["persona"]].opener(t): (t.data["persona"], float(t.answer)) for t in bundled_tasks()}


def first_replies(turns_file: Path):
    """(first user message, reply text, policy version) of every first turn in a turn log."""
    for line in turns_file.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:  # the torn last line of a log still being written
            continue
        turn = event.get("turn") if event.get("event") == "turn" else None
        if not turn or int(turn["turn_index"]) != 0:
            continue
        users = [m for m in turn["context"] if m.get("role") == "user"]
        if users:
            yield users[-1]["content"], turn["action"].get("content") or "", int(turn["policy_version"])


def count(runs: Path) -> tuple[Counter, int]:
    """(persona, weights, outcome) -> replies; and how many first replies matched no bundled task."""
    tasks, counts, unmatched = openers(), Counter(), 0
    for turns_file in sorted(runs.glob("*/turns.jsonl")):
        for prompt, reply, version in first_replies(turns_file):
            if prompt not in tasks:
                unmatched += 1
                continue
            persona, answer = tasks[prompt]
            counts[(persona, "initial" if version == 0 else "trained", classify(reply, answer))] += 1
    return counts, unmatched


def table(counts: Counter) -> str:
    lines = [f"{'persona':<9}{'weights':<9}{'replies':>8}" + "".join(f"{o:>14}" for o in OUTCOMES)]
    for persona in sorted({k[0] for k in counts}):
        for weights in ("initial", "trained"):
            row = [counts[(persona, weights, o)] for o in OUTCOMES]
            if sum(row):
                cells = "".join(f"{n:>6} ({n / sum(row):4.0%})" for n in row)
                lines.append(f"{persona:<9}{weights:<9}{sum(row):>8}{cells}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/lfc"),
                        help="a directory of run directories with turns.jsonl")
    args = parser.parse_args()
    if not args.runs.is_dir():
        sys.exit(f"{args.runs} is not a directory: run benchmarks/learning_from_conversation.py first, or pass --runs")
    counts, unmatched = count(args.runs)
    if not counts:
        sys.exit(f"no first replies to bundled chat tasks under {args.runs}/*/turns.jsonl")
    print("first replies of the training conversations: the correct number stated, a wrong one, none")
    print(table(counts))
    if unmatched:
        print(f"({unmatched} first replies to prompts that are not bundled tasks were skipped)")


if __name__ == "__main__":
    main()
