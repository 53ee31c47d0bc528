"""What a run's hindsight groups offered the trainer, wish by wish, read back from its turn log.

A cell of the method table reports held-out scores; this says why they moved. Every group the personal
trainer scored is a ``hindsight_group`` event in the turn log (each member's reply, the wishes it met,
its reward and advantage); :func:`clawgym.personal.hindsight.wish_signal` reduces them per wish, for the
first and the second half of the run's groups:

    .venv/bin/python benchmarks/hindsight_signal.py runs/lfc/<cell>          # or a turns.jsonl

``real``: how often the served reply met the wish; ``sibling`` / ``prompted`` / ``answered``: how often
the siblings sampled from the person's prompt / from the wish-reading prompt (``serve.hindsight_prompted``) /
after the person's next message (``serve.hindsight_answered``) met it;
``none met``: groups in which no member met it (nothing to learn it from); ``push``: GRPO's step toward
the members that meet it (> 0: toward meeting it). The same table follows for the groups on first replies
against those on later turns (after the person has spoken back), read from the log's turns: a wish the
person states only after a reply is met on later turns long before it is anticipated on first ones.

A third table says who decided each wish: the rubric judge's code (the formats, counts, names and warmth
of :mod:`clawgym.personal.rubric_cues`, re-run on every member) or a model (the rubric model, or the
request facts), and how often each said "met". A wish whose code part holds but whose model part rarely
says yes gives its groups little to push toward, whatever the replies do.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawgym.personal.hindsight import wish_signal  # noqa: E402
from clawgym.personal.rubric import RubricJudge  # noqa: E402
from clawgym.rl.types import read_jsonl  # noqa: E402


def read_log(path: Path) -> list[dict]:
    """Every event of a run's turn log (a torn last line is skipped), read once for both tables."""
    log = path / "turns.jsonl" if path.is_dir() else path
    if not log.exists():
        raise SystemExit(f"no turn log at {log}")
    return list(read_jsonl(log))


def group_events(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("event") == "hindsight_group"]


def number(value: float | None, spec: str = ".2f") -> str:
    """A share or a push; "-" where the part had no group for the wish (or no trained one)."""
    return "-" if value is None or math.isnan(value) else format(value, spec)


def first_replies(events: list[dict]) -> set[str]:
    """The turn ids of the log's first replies: turns whose context holds no earlier reply."""
    return {e["turn"]["turn_id"] for e in events if e.get("event") == "turn"
            and not any(m.get("role") == "assistant" for m in e["turn"].get("context", []))}


COLUMNS = (("real", ".2f"), ("sibling", ".2f"), ("prompted", ".2f"), ("answered", ".2f"), ("none_met", ".2f"),
           ("push", "+.2f"))


def table(first: list[dict], second: list[dict], labels: str = "1st -> 2nd half") -> str:
    """Per wish, each column as ``first -> second``: two parts of a run's groups side by side."""
    a_signal, b_signal = wish_signal(first), wish_signal(second)
    header = "".join(f"  {name.replace('_', ' '):>13}" for name, _ in COLUMNS)
    lines = [f"{'wish':<52} {'groups':>6}{header}", f"{'(' + labels + ')':<52}"]
    for wish in sorted(set(a_signal) | set(b_signal)):
        a, b = a_signal.get(wish, {}), b_signal.get(wish, {})
        n = int(a.get("groups", 0) + b.get("groups", 0))
        cells = "".join(f"  {number(a.get(k), spec) + ' -> ' + number(b.get(k), spec):>13}" for k, spec in COLUMNS)
        lines.append(f"{wish[:52]:<52} {n:>6}{cells}")
    return "\n".join(lines)


def who_decided(events: list[dict], groups: list[dict]) -> dict[str, collections.Counter]:
    """Per wish, over every group member: how many the cues decided (and met), and how many they left to a
    model (and the model called met), re-running the judge's cues on the member's reply and its turn's context."""
    contexts = {e["turn"]["turn_id"]: e["turn"].get("context", []) for e in events if e.get("event") == "turn"}
    cues_only = RubricJudge(None)  # no model: what the cues leave open comes back "unsure"
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for group in groups:
        context = contexts.get(group["turn_id"], [])
        members = group["members"]
        checks = cues_only.check_many([(list(m["met"]), context, m["reply"]) for m in members])
        for member, row in zip(members, checks):
            for check in row:
                if check.source == "uncheckable":
                    continue
                count = counts[check.wish]
                count["members"] += 1
                if check.source == "cues":
                    count["by_cues"] += 1
                    count["cues_met"] += bool(check.met)
                else:
                    count["by_model"] += 1
                    count["model_met"] += bool(member["met"].get(check.wish))
    return counts


def decided_table(counts: dict[str, collections.Counter]) -> str:
    """Per wish: members, the share the cues decided and their "met" rate, the share left to a model and its rate."""
    lines = [f"{'wish':<52} {'members':>7}  {'by cues':>7}  {'cues: met':>9}  {'by a model':>10}  {'model: met':>10}"]
    for wish in sorted(counts):
        c = counts[wish]
        lines.append(f"{wish[:52]:<52} {c['members']:>7}  {number(c['by_cues'] / c['members']):>7}  "
                     f"{number(c['cues_met'] / c['by_cues'] if c['by_cues'] else None):>9}  "
                     f"{number(c['by_model'] / c['members']):>10}  "
                     f"{number(c['model_met'] / c['by_model'] if c['by_model'] else None):>10}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run directory (its turns.jsonl) or a turn log")
    args = parser.parse_args()
    events = read_log(args.run)
    groups = group_events(events)
    if not groups:
        raise SystemExit(f"{args.run}: no hindsight_group events (a run without serve.hindsight_k, "
                         "or one recorded before groups were logged)")
    outcomes = collections.Counter(g["outcome"] for g in groups)
    kinds = collections.Counter(m["kind"] for g in groups for m in g["members"])
    print(f"{len(groups)} groups: {dict(outcomes)}; members {dict(kinds)}")
    half = len(groups) // 2
    print(table(groups[:half], groups[half:]))
    first = first_replies(events)
    on_first = [g for g in groups if g["turn_id"] in first]
    print(f"\n{len(on_first)} groups on first replies, {len(groups) - len(on_first)} on later turns")
    print(table(on_first, [g for g in groups if g["turn_id"] not in first], "first replies -> later turns"))
    print("\nwho decided each wish (the cues re-run on every member; the rest was a model's call)")
    print(decided_table(who_decided(events, groups)))


if __name__ == "__main__":
    main()
