"""How good are the checks the judge model drafts for a wish, and how well does each rule pick one without labels?

For every wish of one split of the wish benchmark (``benchmarks/wish_bench``) the judge model drafts
``def met(request, reply) -> bool`` ``--drafts`` times with the product's prompt
(:func:`clawgym.personal.wish_checks.code_prompt`: the first draft greedy, the rest sampled at ``--temperature``)
and writes the replies the product tests drafts on (:func:`~clawgym.personal.wish_checks.reply_prompt`: three told
to meet the wish and three told to miss it, answering the wish's first request). Every draft then runs in the
check sandboxes (:class:`~clawgym.personal.check_runner.CheckRunner`) on every item of its wish and on those
examples, and each *selection rule* picks at most one draft per wish; the items' labels are used only to score
what a rule picked:

- ``greedy``: the greedy draft, untested (refused only when it does not run);
- ``examples``: :func:`~clawgym.personal.wish_checks.choose` with ``accept="majority"``: the draft right on most
  meet- and most miss-examples; none passing, the wish stays with the model;
- ``vote``: the draft that agrees most with the majority verdict of all drafts that ran, over the wish's items
  (the person's own replies, unlabelled), among drafts that are not constant on them;
- ``examples+vote``: among the drafts that pass the examples' ``separates`` test, the one that agrees most with
  the vote;
- ``consensus``: the product's rule, :func:`~clawgym.personal.wish_checks.choose` itself with the wish's items
  (unlabelled) as the person's replies: ``examples+vote``, else the greedy draft when it ran on all;
- ``oracle``: the draft that agrees most with the labels: the bound on any rule, never a judge.

For each rule: how many wishes got a check, the items those checks decided and how often they agree with the
labels. The model's answers and the example replies are kept in ``--cache`` (one JSON line a wish), so the rules
are re-scored without the model (``--no-model``) and an interrupted run resumes. One row a run is appended to
``--results`` (benchmarks/results/wish_check_drafts.jsonl) with the host and commit; ``--split test`` is for
reporting a rule chosen on dev, never for choosing one.

    .venv/bin/python benchmarks/wish_check_drafts.py                                  # 0.5B coder, dev, 6 drafts
    .venv/bin/python benchmarks/wish_check_drafts.py --judge-model qwen2.5-coder-1.5b
    .venv/bin/python benchmarks/wish_check_drafts.py --no-model                       # re-score the cache
    .venv/bin/python benchmarks/wish_check_drafts.py --no-model --use-drafts 3        # the first 3 drafts only
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import add_page_arguments, generated_by, write_page  # noqa: E402
from wish_judge import ITEMS, file_digest, load_policy, read_items, shown  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "wish_check_drafts.jsonl"
PAGE = ROOT / "docs" / "results" / "wish_check_drafts.md"
CACHE_DIR = ROOT / "benchmarks" / "results" / "wish_check_drafts"
RULES = ("greedy", "examples", "vote", "examples+vote", "consensus", "oracle")


# ------------------------------------------------------------------ the model's part (cached)
def draft_wish(policy: Any, wish: str, request: str, drafts: int, temperature: float) -> dict[str, Any]:
    """The model's answers to the check prompt and its example replies for one wish, as the product asks."""
    from clawgym.personal.wish_checks import draft

    started = time.perf_counter()
    drafted = draft(policy, wish, request, drafts, temperature)
    answers, meet, miss = drafted.answers, drafted.meet, drafted.miss
    return {"wish": wish, "request": request, "answers": answers, "meet": meet, "miss": miss,
            "seconds": round(time.perf_counter() - started, 1)}


def read_cache(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["wish"]: row for row in rows}


# ------------------------------------------------------------------ the rules (no model)
def verdicts(runner: Any, codes: Sequence[str], request_replies: Sequence[tuple[str, str]]) -> list[list[bool | None]]:
    """Each code's verdict on each (request, reply); None where it crashed or timed out."""
    results = runner.run([(code, request, reply) for code in codes for request, reply in request_replies])
    n = len(request_replies)
    return [[r.met for r in results[k * n:(k + 1) * n]] for k in range(len(codes))]


def agreement(a: Sequence[bool | None], b: Sequence[bool | None]) -> int:
    return sum(x is not None and x == y for x, y in zip(a, b))


def pick(rule: str, runs: list[list[bool | None]], example_tests: list[Any], examples: Any,
         labels: Sequence[bool], greedy: bool) -> int | None:
    """The index of the draft ``rule`` picks, or None (the wish stays with the model). ``runs``: each draft's
    verdicts on the wish's items; a draft that crashed on any item is never picked; ``greedy``: the first draft
    is the greedy answer's (it parsed and was not refused)."""
    from clawgym.personal.wish_checks import passes

    ran = [k for k, run in enumerate(runs) if all(v is not None for v in run)]
    if rule == "greedy":
        return 0 if greedy and 0 in ran else None
    if rule == "oracle":
        return max(ran, key=lambda k: (agreement(runs[k], labels), -k), default=None)
    if rule == "examples":
        passing = [k for k in ran if passes(example_tests[k], examples, "majority")]
        return max(passing, key=lambda k: (example_tests[k].score, -k), default=None)
    varied = [k for k in ran if len(set(runs[k])) > 1]
    votes = [collections.Counter(runs[k][i] for k in ran).most_common(1)[0][0] if ran else None
             for i in range(len(labels))]
    if rule == "vote":
        return max(varied, key=lambda k: (agreement(runs[k], votes), -k), default=None)
    if rule == "examples+vote":
        passing = [k for k in varied if passes(example_tests[k], examples, "separates")]
        return max(passing, key=lambda k: (agreement(runs[k], votes), example_tests[k].score, -k), default=None)
    raise ValueError(f"unknown rule {rule!r}; one of {RULES}")


def score_wish(runner: Any, cached: dict[str, Any], items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every rule's pick for one wish and how its pick agrees with the labels of the wish's items."""
    from clawgym.personal.check_runner import refusal
    from clawgym.personal.wish_checks import Draft, choose, examples_of, parse_code

    first = parse_code(cached["answers"][0]) if cached["answers"] else None
    codes = [c for c in dict.fromkeys(parse_code(a) for a in cached["answers"]) if c is not None]
    codes = [c for c in codes if refusal(c) is None]
    greedy = bool(codes) and codes[0] == first
    labels = [bool(item["met"]) for item in items]
    out: dict[str, Any] = {"wish": cached["wish"], "wish_id": items[0]["wish_id"], "n": len(items),
                           "met": sum(labels), "drafts": len(cached["answers"]), "runnable": len(codes),
                           "seconds": cached["seconds"], "rules": {}}
    examples = examples_of(cached["request"], cached["meet"], cached["miss"])
    if not codes:
        out["rules"] = {rule: None for rule in RULES}
        return out
    runs = verdicts(runner, codes, [(item["request"], item["reply"]) for item in items])
    tests = [Draft(code) for code in codes]
    if examples is not None:
        replies = [(r, True) for r in examples.meet] + [(r, False) for r in examples.miss]
        for test, run in zip(tests, verdicts(runner, codes, [(examples.request, r) for r, _ in replies])):
            for (_, should), met in zip(replies, run):
                if met is None:
                    test.error = test.error or "crashed"
                elif met == should:
                    test.meet_hits += should
                    test.miss_hits += not should
    out["draft_agree"] = [agreement(run, labels) for run in runs]
    for rule in RULES:
        if rule == "consensus":  # the product's rule itself, the wish's unlabelled replies as the person's
            code = None if examples is None else choose(codes, examples, runner, "consensus",
                                                         [(item["request"], item["reply"]) for item in items])[0]
            out["rules"][rule] = None if code is None else {"draft": codes.index(code),
                                                            "agree": agreement(runs[codes.index(code)], labels)}
            continue
        if rule not in ("greedy", "vote", "oracle") and examples is None:
            out["rules"][rule] = None
            continue
        k = pick(rule, runs, tests, examples, labels, greedy)
        out["rules"][rule] = None if k is None else {"draft": k, "agree": agreement(runs[k], labels)}
    return out


def totals(wishes: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per rule: wishes checked, the items their checks decided, and the agreeing ones; of all items of the split."""
    out = {}
    for rule in RULES:
        picked = [w for w in wishes if w["rules"].get(rule)]
        out[rule] = {"wishes": len(picked), "decided": sum(w["n"] for w in picked),
                     "agree": sum(w["rules"][rule]["agree"] for w in picked)}
    return out


def report(row: dict[str, Any]) -> str:
    n = row["n"]
    lines = [f"check drafts of {row['judge_model']} ({row['drafts']} per wish, T {row['temperature']}) on "
             f"{row['wishes']} {row['split']}-split wishes, {n} items; {row['s_per_wish']:.1f} s of model per wish",
             "", f"{'rule':<15} {'wishes':>7} {'items decided':>14} {'agree':>8}"]
    for rule, t in row["totals"].items():
        share = f"{t['agree'] / t['decided']:.1%}" if t["decided"] else "–"
        lines.append(f"{rule:<15} {t['wishes']:>7} {t['decided']:>8} ({t['decided'] / n:.0%}) {share:>8}")
    lines += ["", f"{'wish':<26} {'n':>4} {'met':>4} {'ran':>4}  " + "  ".join(f"{r:>13}" for r in RULES)]
    for w in row["per_wish"]:
        cells = ["–" if w["rules"][r] is None else f"{w['rules'][r]['agree'] / w['n']:.2f}" for r in RULES]
        lines.append(f"{w['wish_id']:<26} {w['n']:>4} {w['met']:>4} {w['runnable']:>4}  "
                     + "  ".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


def read_rows(path: Path = RESULTS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def cell(t: dict[str, int], n: int) -> str:
    return f"{t['wishes']}, {t['decided'] / n:.0%}, {t['agree'] / t['decided']:.1%}" if t["decided"] else "0, –, –"


def markdown(path: Path = RESULTS) -> str:
    """The results page: generated from the rows of ``path``, never edited by hand."""
    rows = read_rows(path)
    hosts = collections.Counter(row["host"] for row in rows)
    lines = [
        "# Selecting a wish's check without labels", "",
        generated_by("wish_check_drafts.py", shown(PAGE), shown(path)), "",
        "For each wish of a split of the wish benchmark the judge model drafts `def met(request, reply) -> bool` "
        "with the product's prompt (the first draft greedy, the rest sampled) and writes three replies told to "
        "meet the wish and three told to miss it. Each *rule* keeps at most one draft per wish without the "
        "labels; a cell is *wishes checked, share of the split's items their checks decide, agreement with the "
        "labels there*. `greedy`: the greedy draft; `examples`: right on most meet- and most miss-replies; "
        "`vote`: the draft closest to the drafts' majority verdict on the wish's items (unlabelled); "
        "`examples+vote`: that, among drafts that tell the examples apart; `consensus`: the product's rule "
        "(`clawgym.personal.wish_checks.choose`: `examples+vote`, else the greedy draft); `oracle`: the draft the "
        "labels like best, a bound and never a judge. Items a rule leaves undecided go to the model's Yes/No "
        "question in the product. The dev split chose the rule; test rows only report.", "",
        "Hardware (each row's `host`): " + ("; ".join(f"{h} ({c} row{'s' * (c != 1)})" for h, c in sorted(
            hosts.items())) or "no rows yet") + "; one job at a time.", "",
        "| judge | split | drafts, T | wishes | items | " + " | ".join(RULES) + " | s / wish | commit | ran on |",
        "|---|---|---|---:|---:|" + "---|" * len(RULES) + "---:|---|---|"]
    for row in rows:
        lines.append(f"| {row['judge_model']} | {row['split']} | {row['drafts']}, {row['temperature']} "
                     f"| {row['wishes']} | {row['n']} | "
                     + " | ".join(cell(row["totals"][r], row["n"]) if r in row["totals"] else "–" for r in RULES)
                     + f" | {row['s_per_wish']:.1f} | {row['commit']} | {row['host']} |")
    for row in rows[-2:]:
        lines += ["", f"Per wish, {row['judge_model']} on {row['split']} (commit {row['commit']}): agreement of "
                  "each rule's check with the labels over the wish's items (– : no check).", "",
                  "| wish | items | met | drafts that ran | " + " | ".join(RULES) + " |",
                  "|---|---:|---:|---:|" + "---:|" * len(RULES)]
        for w in row["per_wish"]:
            lines.append(f"| {w['wish_id']} | {w['n']} | {w['met']} | {w['runnable']} | " + " | ".join(
                "–" if not w["rules"].get(r) else f"{w['rules'][r]['agree'] / w['n']:.2f}" for r in RULES) + " |")
    lines += ["", "    .venv/bin/python benchmarks/wish_check_drafts.py                  # 0.5B, dev: drafts cached",
              "    .venv/bin/python benchmarks/wish_check_drafts.py --split test     # report only",
              "    .venv/bin/python benchmarks/wish_check_drafts.py --no-model       # re-score the cache", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=Path, default=ITEMS)
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--judge-model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--drafts", type=int, default=6)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--cache", type=Path, default=None,
                        help=f"the model's answers, one line a wish (default {shown(CACHE_DIR)}/MODEL-SPLIT.jsonl)")
    parser.add_argument("--no-model", action="store_true", help="score only the wishes already in --cache")
    parser.add_argument("--use-drafts", type=int, default=None,
                        help="score only the first N drafts of each wish's cached answers (fewer drafts, no model)")
    parser.add_argument("--max-wishes", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args(argv)
    if write_page(args, markdown):
        return 0
    cache = args.cache or CACHE_DIR / f"{args.judge_model}-{args.split}-d{args.drafts}.jsonl"

    wall = time.perf_counter()
    items = read_items(args.items, args.split)
    by_wish: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_wish.setdefault(item["wish"], []).append(item)
    wishes = list(by_wish)[:args.max_wishes]
    cached = read_cache(cache)
    todo = [w for w in wishes if w not in cached]
    if todo and not args.no_model:
        policy = load_policy(args.judge_model, args.seed)
        cache.parent.mkdir(parents=True, exist_ok=True)
        try:
            for n, wish in enumerate(todo, 1):
                row = draft_wish(policy, wish, by_wish[wish][0]["request"], args.drafts, args.temperature)
                with cache.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                cached[wish] = row
                print(f"  drafted {n}/{len(todo)} ({row['seconds']:.0f} s) {wish[:60]!r}", flush=True)
        finally:
            import asyncio

            asyncio.run(policy.close())
    from clawgym.personal.check_runner import CheckRunner

    runner = CheckRunner()
    use = args.use_drafts or args.drafts
    scored = [score_wish(runner, {**cached[w], "answers": cached[w]["answers"][:use]}, by_wish[w])
              for w in wishes if w in cached]
    row = {"judge_model": args.judge_model, "split": args.split, "drafts": use,
           "temperature": args.temperature, "items_file": shown(args.items), "items_sha": file_digest(args.items),
           "cache": shown(cache), "wishes": len(scored), "n": sum(w["n"] for w in scored),
           "s_per_wish": round(sum(w["seconds"] for w in scored) / max(1, len(scored)), 1),
           "totals": totals(scored), "per_wish": scored, "host": host(), "commit": git_commit(),
           "date": time.strftime("%Y-%m-%d"), "wall_s": round(time.perf_counter() - wall, 1)}
    print("\n" + report(row), flush=True)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"\nappended a row to {args.results}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
