"""How often does the rubric judge, as the product builds it, agree with the wish benchmark's hand-written labels?

Reads the wish benchmark's items (:mod:`benchmarks.wish_bench`, written by ``benchmarks/wish_bench/generate.py``:
a model's reply to a request, one wish of the person and the hand check's label ``met``) and scores every item
of one split with :class:`clawgym.personal.rubric.RubricJudge` built as the chat launcher builds it
(:func:`clawgym.personal.learner._rubric`: the cues for measurable wishes, names and warmth, the request's
facts for result and by-name wishes, the judge model for the rest; ``refusals_fail`` as the chat launcher
sets it). The judge sees what the product would: the chat context ``[{"role": "user", "content": request}]``,
the reply and the one wish of the item (one wish per job); the labels and their checks never reach it.
``--no-cues`` measures the model alone (no cues, no facts; an empty reply still meets no wish).

**Splits.** ``--split dev`` (the default) is for looking at misses and tuning anything (prompts, cues,
thresholds); ``--split test`` is for reporting a judge's figures only: nothing is ever tuned on it.

Printed and kept: overall agreement with the labels (an unsure or uncheckable verdict counts as a
disagreement; the share left undecided is shown apart), agreement by how each wish was decided (cues / facts /
model / unsure / uncheckable), agreement per wish, the AUC of the model's margin over the items the model
decided (does ``log p(Yes) - log p(No)`` rank met replies above unmet ones?), the base rate of met, and the
judging time per decision. Each run appends one JSON row to ``--results`` (benchmarks/results/wish_judge.jsonl)
with the judge model, split, options, counts, host, commit and wall time; ``--markdown [PAGE]`` writes the
generated page (docs/results/wish_judge.md) from the rows and runs nothing.

    .venv/bin/python benchmarks/wish_judge.py                                             # 0.5B judge, dev
    .venv/bin/python benchmarks/wish_judge.py --judge-model qwen2.5-coder-1.5b            # 1.5B judge, dev
    .venv/bin/python benchmarks/wish_judge.py --no-cues                                   # the model alone
    .venv/bin/python benchmarks/wish_judge.py --split test                                # report only
    .venv/bin/python benchmarks/wish_judge.py --limit 200                                 # a quick look
    .venv/bin/python benchmarks/wish_judge.py --markdown                                  # the page; runs nothing
    .venv/bin/python benchmarks/wish_judge.py --wish-checks --limit 60                    # compiled checks (dev)

``--wish-checks`` compiles each distinct wish of the items once, as ``serve.wish_checks`` does
(:class:`clawgym.personal.wish_checks.WishCompiler` on the judge model: drafts tested on replies the model wrote to
meet and to miss the wish and on the person's replies, here the wish's items without their labels), then judges
the items twice, with and without the compiled checks, and prints how many wishes compiled, the seconds per
compile and the agreement of both on the items each decided (the row keeps both, ``wish_checks`` holding the
compile's figures). ``--drafts-cache`` replays the model's answers that ``benchmarks/wish_check_drafts.py`` kept
for the same prompts instead of asking the model again. The rule (``--accept``) is chosen on dev; a test-split
row reports the chosen one.

    .venv/bin/python benchmarks/wish_judge.py --wish-checks --no-cues --drafts 6 \
        --drafts-cache benchmarks/results/wish_check_drafts/qwen2.5-coder-0.5b-dev-d6.jsonl
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import auc  # noqa: E402

ITEMS = ROOT / "benchmarks" / "results" / "wish_bench_items.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "wish_judge.jsonl"
PAGE_NAME = "docs/results/wish_judge.md"
PAGE = ROOT / PAGE_NAME
DEFAULT_JUDGE = "qwen2.5-coder-0.5b"
SOURCES = ("cues", "facts", "model", "unsure", "uncheckable")  # how a verdict was decided, in table order
UNDECIDED = ("unsure", "uncheckable")


# ------------------------------------------------------------------ the items
def read_items(path: Path, split: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The items of ``split`` in file order; with ``limit``, that many spread evenly over them (every kind in
    a file written kind by kind keeps its share), the same ones on every run."""
    if not path.exists():
        raise SystemExit(f"no items file {path}: write it with benchmarks/wish_bench/generate.py")
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = [item for item in items if item["split"] == split]
    if limit is not None and 0 <= limit < len(items):
        items = [items[i * len(items) // limit] for i in range(limit)]
    return items


def few_wishes(items: list[dict[str, Any]], wishes: int, limit: int | None) -> list[dict[str, Any]]:
    """The items of ``wishes`` wishes spread over the split's (in order of first appearance), then ``limit`` of
    them spread evenly, as :func:`read_items` does."""
    ids = list(dict.fromkeys(item["wish_id"] for item in items))
    keep = {ids[i * len(ids) // wishes] for i in range(min(wishes, len(ids)))}
    items = [item for item in items if item["wish_id"] in keep]
    if limit is not None and 0 <= limit < len(items):
        items = [items[i * len(items) // limit] for i in range(limit)]
    return items


def file_digest(path: Path) -> str:
    """A short hash of the items file: rows measured on different items files are told apart."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def shown(path: Path) -> str:
    """``path`` as a row records it: relative to the repository when inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def job_of(item: dict[str, Any]) -> tuple[list[str], list[dict[str, str]], str]:
    """The judge's job for one item: its one wish, the chat context the product would pass, the reply."""
    return [item["wish"]], [{"role": "user", "content": item["request"]}], item["reply"]


# ------------------------------------------------------------------ judging
def make_judge(policy: Any, cues: bool = True) -> Any:
    """The rubric judge as the chat launcher builds it (cues, facts, ``refusals_fail`` as configured), or with
    ``cues=False`` the model alone (no cues, no facts)."""
    from clawgym.personal.rubric import RubricJudge

    refusals_fail = chat_refusals_fail()
    if cues:
        return RubricJudge(policy, refusals_fail=refusals_fail)
    return RubricJudge(policy, cues=False, read_facts=False, refusals_fail=refusals_fail)


def chat_refusals_fail() -> bool:
    """``serve.hindsight_refusals_fail`` of the chat launcher (what ``clawgym serve --config chat`` runs)."""
    from learning_from_conversation import chat_config

    return bool(chat_config().serve.hindsight_refusals_fail)


def judge_items(judge: Any, items: Sequence[dict[str, Any]], batch: int = 32,
                progress: Callable[[str], None] | None = print) -> tuple[list[Any], float]:
    """One :class:`WishCheck` per item, ``batch`` items per ``check_many`` call; and the seconds spent judging.
    With compiled checks (``judge.checks_of``) each item is its own "user", keyed by its wish."""
    checks: list[Any] = []
    started = time.perf_counter()
    compiled = getattr(judge, "checks_of", None) is not None
    for start in range(0, len(items), batch):
        chunk = items[start:start + batch]
        users = [item["wish"] for item in chunk] if compiled else None
        checks += [row[0] for row in judge.check_many([job_of(item) for item in chunk], users=users)]
        if progress is not None:
            elapsed = time.perf_counter() - started
            left = elapsed / len(checks) * (len(items) - len(checks))
            progress(f"  {len(checks)}/{len(items)} items judged, {elapsed:.0f} s, about {left:.0f} s left")
    return checks, time.perf_counter() - started


def compile_wishes(policy: Any, wishes: Sequence[tuple[str, str, list[tuple[str, str]]]], drafts: int = 3,
                   progress: Callable[[str], None] | None = print, accept: str = "consensus",
                   answers: dict[str, dict[str, Any]] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    """Each ``(wish, request, replies)`` compiled once, as ``serve.wish_checks`` does with the request the wish
    corrected (here the first of its items' requests) and the person's replies (the wish's items', unlabelled):
    the kept checks by wish text, and the figures. ``answers``: the model's answers by wish, kept by
    ``benchmarks/wish_check_drafts.py`` for the same prompts (then the model is not asked again)."""
    from clawgym.personal.wish_checks import WishCompiler

    compiler = WishCompiler(policy, drafts=drafts, accept=accept)
    kept: dict[str, str] = {}
    outcomes = []
    for n, (wish, request, replies) in enumerate(wishes, 1):
        started = time.perf_counter()
        cached = (answers or {}).get(wish)
        if cached is not None:
            outcome = compiler.from_answers(wish, cached["answers"][:drafts], cached["request"], cached["meet"],
                                            cached["miss"], replies)
            seconds = float(cached["seconds"]) + time.perf_counter() - started  # the model's time, when it wrote them
        else:
            outcome = compiler.compile(wish, request, replies)
            seconds = time.perf_counter() - started
        if outcome.code:
            kept[wish] = outcome.code
        outcomes.append({"wish": wish, "compiled": bool(outcome.code), "note": outcome.note,
                         "seconds": round(seconds, 1), "code": outcome.code or "", "cached": cached is not None,
                         "drafts": [{"meet_hits": d.meet_hits, "miss_hits": d.miss_hits, "error": d.error[:200],
                                     "code": d.code} for d in outcome.drafts]})
        if progress is not None:
            progress(f"  compiled {n}/{len(wishes)} ({seconds:.0f} s): {'kept' if outcome.code else 'refused'} "
                     f"{wish[:50]!r}: {outcome.note[:100]}")
    seconds = [o["seconds"] for o in outcomes]
    return kept, {"wishes": len(wishes), "compiled": len(kept), "drafts": drafts, "accept": accept,
                  "s_per_compile": round(sum(seconds) / len(seconds), 1) if seconds else 0.0,
                  "runner_starts": compiler.runner.starts, "outcomes": outcomes}


def decided_agreement(items: Sequence[dict[str, Any]], checks: Sequence[Any]) -> dict[str, int]:
    """How many items the judge decided, and on how many of those it agrees with the label."""
    decided = [(i, c) for i, c in zip(items, checks) if c.met is not None]
    return {"decided": len(decided), "agree": sum(c.met == bool(i["met"]) for i, c in decided)}


# ------------------------------------------------------------------ the figures
def summarise(items: Sequence[dict[str, Any]], checks: Sequence[Any]) -> dict[str, Any]:
    """The counts of a run. An item agrees when the judge decided it and its verdict is the label; an unsure
    or uncheckable verdict never agrees."""
    if len(items) != len(checks):
        raise ValueError(f"{len(items)} items but {len(checks)} checks")
    by_source: dict[str, dict[str, int]] = {}
    per_wish: dict[str, dict[str, Any]] = {}
    margins, labels = [], []
    for item, check in zip(items, checks):
        label, agrees = bool(item["met"]), check.met is not None and check.met == bool(item["met"])
        source = by_source.setdefault(check.source, {"n": 0, "met": 0, "agree": 0})
        wish = per_wish.setdefault(item["wish_id"], {"wish": item["wish"], "n": 0, "met": 0, "agree": 0,
                                                     "sources": {}})
        for counts in (source, wish):
            counts["n"] += 1
            counts["met"] += label
            counts["agree"] += agrees
        wish["sources"][check.source] = wish["sources"].get(check.source, 0) + 1
        if check.source == "model" and check.margin is not None:
            margins.append(check.margin)
            labels.append(label)
    n = len(items)
    area = auc(margins, labels)
    return {"n": n, "met": sum(bool(i["met"]) for i in items), "agree": sum(s["agree"] for s in by_source.values()),
            "undecided": sum(by_source.get(s, {}).get("n", 0) for s in UNDECIDED),
            "by_source": {s: by_source[s] for s in SOURCES if s in by_source}
            | {s: v for s, v in by_source.items() if s not in SOURCES},
            "model_auc": None if area is None else round(area, 4), "model_auc_n": len(margins),
            "per_wish": dict(sorted(per_wish.items()))}


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def report(row: dict[str, Any]) -> str:
    """The printed table of one row."""
    n = row["n"]
    lines = [f"wish judge {row['judge_model']} ({'cues and facts, as the product' if row['cues'] else 'model alone'})"
             f" on {n} {row['split']}-split items (replies of {', '.join(row['reply_models']) or '-'}, "
             f"{row['items_file']} {row['items_sha']})",
             f"agreement {share(row['agree'], n)} ({row['agree']}/{n}); undecided (unsure or uncheckable, counted as "
             f"disagreeing) {share(row['undecided'], n)}; base rate met {share(row['met'], n)}; "
             f"model AUC {'–' if row['model_auc'] is None else format(row['model_auc'], '.3f')} over "
             f"{row['model_auc_n']} model-decided items",
             f"judging {row['judge_s']:.1f} s, {row['s_per_decision']:.3f} s per decision, "
             f"{row['forward_prompts']} model prompts; wall {row['wall_s']:.0f} s",
             "", f"{'decided by':<12} {'n':>6} {'share':>7} {'met':>6} {'agree':>7}"]
    for source, counts in row["by_source"].items():
        lines.append(f"{source:<12} {counts['n']:>6} {share(counts['n'], n):>7} {share(counts['met'], counts['n']):>6} "
                     f"{share(counts['agree'], counts['n']):>7}")
    lines += ["", f"{'wish':<34} {'n':>5} {'met':>6} {'agree':>7}  {'decided by':<24} the wish"]
    for wish_id, counts in row["per_wish"].items():
        sources = ", ".join(f"{s} {c}" for s, c in sorted(counts["sources"].items()))
        lines.append(f"{wish_id:<34} {counts['n']:>5} {share(counts['met'], counts['n']):>6} "
                     f"{share(counts['agree'], counts['n']):>7}  {sources:<24} {counts['wish'][:60]}")
    if row["split"] == "test":
        lines += ["", "test split: these figures are for reporting; tune nothing on them"]
    return "\n".join(lines)


# ------------------------------------------------------------------ the page
def read_rows(path: Path = RESULTS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def judged_by(row: dict[str, Any]) -> str:
    checks = row.get("wish_checks")
    rest = "cues and facts" if row["cues"] else "model"
    if not checks:
        return rest if row["cues"] else "model alone"
    return f"compiled checks ({checks.get('accept', 'majority')}, {checks['drafts']} drafts), {rest}"


def table_line(row: dict[str, Any]) -> str:
    """One row of the page's table."""
    n = row["n"]
    sources = row["by_source"]

    def decided(source: str) -> str:
        counts = sources.get(source)
        return f"{share(counts['n'], n)}, {share(counts['agree'], counts['n'])}" if counts else "–"

    area = "–" if row["model_auc"] is None else f"{row['model_auc']:.2f} ({row['model_auc_n']})"
    limit = f" (limit {row['limit']})" if row.get("limit") is not None else ""
    return (f"| {row['judge_model']} | {judged_by(row)} | {row['split']} "
            f"| {n}{limit} | {share(row['met'], n)} | {share(row['agree'], n)} | {share(row['undecided'], n)} "
            f"| {decided('compiled')} | {decided('cues')} | {decided('facts')} | {decided('model')} | {area} "
            f"| {row['s_per_decision']:.3f} | {', '.join(row['reply_models'])} ({row['items_sha']}) "
            f"| {row.get('commit') or '–'} | {row.get('host', 'not recorded')} |")


def markdown(path: Path = RESULTS) -> str:
    """The results page: generated from the rows of ``path``, never edited by hand."""
    rows = read_rows(path)
    hosts = collections.Counter(row.get("host", "not recorded") for row in rows)
    return "\n".join([
        "# The rubric judge on the wish benchmark", "",
        f"Generated by `benchmarks/wish_judge.py --markdown {PAGE_NAME}` from `{shown(path)}`; "
        "do not edit by hand.", "",
        "Each row scores the wish benchmark's items of one split (`benchmarks/wish_bench`: a model's reply to a "
        "request and one wish of the person, labelled by a hand-written check) with the rubric judge: `cues and "
        "facts` as the chat launcher builds it (cues for measurable wishes, names and warmth; the request's facts "
        "for result and by-name wishes; the judge model for the rest), `model alone` with the model deciding "
        "every wish, `compiled checks` with each wish's check that the judge model wrote and "
        "`clawgym.personal.wish_checks.choose` kept (the rule and the drafts in brackets) deciding first, "
        "written and chosen without the labels. *agree*: the judge's verdict is the label; an unsure or "
        "uncheckable verdict counts as a disagreement, and *undecided* is their share. *compiled*, *cues*, "
        "*facts*, *model*: the share of items each decided, "
        "and how often it agrees there. *AUC*: the model's margin `log p(Yes) − log p(No)` over the items the "
        "model decided (how many in brackets). *s / decision*: judging seconds per item. *replies*: the model "
        "that wrote the replies and the items file's hash. The dev split is for tuning; test-split rows only "
        "report.", "",
        "Hardware (each row's `host`): " + ("; ".join(f"{h} ({c} row{'s' * (c != 1)})" for h, c in sorted(
            hosts.items())) or "no rows yet") + "; one job at a time.", "",
        "| judge | judged by | split | items | met | agree | undecided | compiled: share, agree "
        "| cues: share, agree | facts: share, agree | model: share, agree | model AUC | s / decision | replies "
        "| commit | ran on |",
        "|---|---|---|---:|---:|---:|---:|---|---|---|---|---|---:|---|---|---|",
        *(table_line(row) for row in rows), "",
        "    .venv/bin/python benchmarks/wish_judge.py                                     # 0.5B judge, dev",
        "    .venv/bin/python benchmarks/wish_judge.py --judge-model qwen2.5-coder-1.5b",
        "    .venv/bin/python benchmarks/wish_judge.py --split test                        # report only",
        "    .venv/bin/python benchmarks/wish_judge.py --judge-model qwen2.5-coder-1.5b --split test",
        "    .venv/bin/python benchmarks/wish_check_drafts.py --split SPLIT                # drafts, cached",
        "    .venv/bin/python benchmarks/wish_judge.py --wish-checks --no-cues --drafts 6 --split SPLIT \\",
        "        --drafts-cache benchmarks/results/wish_check_drafts/qwen2.5-coder-0.5b-SPLIT-d6.jsonl", ""])


# ------------------------------------------------------------------ the run
def load_policy(name: str, seed: int) -> Any:
    import torch

    from clawgym.inference.catalog import default_dtype
    from clawgym.inference.hf import HFPolicy

    torch.manual_seed(seed)
    return HFPolicy.from_pretrained(name, dtype=getattr(torch, default_dtype(name)), seed=seed)


def main(argv: Sequence[str] | None = None, policy: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=Path, default=ITEMS, help="the wish benchmark's items (JSONL)")
    parser.add_argument("--split", default="dev", choices=("dev", "test"),
                        help="dev (default; tune on it) or test (report only, tune nothing on it)")
    parser.add_argument("--judge-model", default=DEFAULT_JUDGE,
                        help="the judge model (qwen2.5-coder-0.5b, as the chat launcher; or qwen2.5-coder-1.5b)")
    parser.add_argument("--no-cues", action="store_true", help="the model alone: no cues, no facts")
    parser.add_argument("--limit", type=int, default=None, help="judge this many items, spread over the split")
    parser.add_argument("--batch", type=int, default=32, help="items per check_many call")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSONL file a row is appended to")
    parser.add_argument("--markdown", type=Path, nargs="?", const=PAGE, default=None, metavar="PAGE",
                        help=f"only write the results page from --results (default {PAGE_NAME}); runs nothing")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wish-checks", action="store_true",
                        help="compile each wish into a tested check first and judge with and without them")
    parser.add_argument("--drafts", type=int, default=6, help="--wish-checks: drafts of each check to test")
    parser.add_argument("--drafts-cache", type=Path, default=None,
                        help="--wish-checks: the model's answers kept by benchmarks/wish_check_drafts.py")
    parser.add_argument("--accept", default="consensus", choices=("majority", "separates", "consensus"),
                        help="--wish-checks: the rule that keeps a draft (clawgym.personal.wish_checks.choose)")
    parser.add_argument("--max-wishes", type=int, default=None,
                        help="keep only the items of this many wishes, spread over the split's (before --limit)")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(args.results))
        print(f"wrote {args.markdown} from {len(read_rows(args.results))} rows of {args.results}")
        return 0
    if args.batch < 1:
        parser.error("--batch must be at least 1")

    wall = time.perf_counter()
    items = read_items(args.items, args.split, None if args.max_wishes else args.limit)
    if args.max_wishes:
        items = few_wishes(items, args.max_wishes, args.limit)
    if not items:
        raise SystemExit(f"no {args.split}-split items in {args.items}")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    owned = policy is None
    if owned:
        policy = load_policy(args.judge_model, args.seed)
    judge = make_judge(policy, cues=not args.no_cues)
    print(f"judging {len(items)} {args.split}-split items of {args.items} with {args.judge_model}"
          f"{' (model alone)' if args.no_cues else ''}, {args.batch} per call", flush=True)
    compiled: dict[str, Any] = {}
    try:
        if args.wish_checks:
            first = {item["wish"]: item["request"] for item in reversed(items)}
            wishes = [(wish, first[wish], [(i["request"], i["reply"]) for i in items if i["wish"] == wish])
                      for wish in list(first)[::-1]]
            answers = None
            if args.drafts_cache is not None:
                answers = {json.loads(line)["wish"]: json.loads(line)
                           for line in args.drafts_cache.read_text(encoding="utf-8").splitlines() if line.strip()}
            print(f"compiling {len(wishes)} wishes with {args.judge_model}, {args.drafts} drafts each", flush=True)
            kept, compiled = compile_wishes(policy, wishes, args.drafts, lambda line: print(line, flush=True),
                                            args.accept, answers)
            if args.drafts_cache is not None:
                compiled["drafts_cache"] = shown(args.drafts_cache)
            without, _ = judge_items(judge, items, args.batch, lambda line: print(line, flush=True))
            judge = make_judge(policy, cues=not args.no_cues)
            judge.checks_of = lambda wish: {wish: kept[wish]} if wish in kept else {}
            compiled["without"] = decided_agreement(items, without)
        checks, judge_s = judge_items(judge, items, args.batch, lambda line: print(line, flush=True))
        if args.wish_checks:
            compiled["with"] = decided_agreement(items, checks)
            compiled["by_compiled"] = int(judge.stats["by_compiled"])
            compiled["compiled_errors"] = int(judge.stats["compiled_errors"])
    finally:
        if owned:
            import asyncio

            asyncio.run(policy.close())
    row = {"judge_model": args.judge_model, "split": args.split, "cues": not args.no_cues,
           "read_facts": judge.facts is not None, "refusals_fail": judge.refusals_fail,
           "threshold": judge.threshold, "band": judge.band, "few_shot": judge.few_shot, "style": judge.style,
           "limit": args.limit, "max_wishes": args.max_wishes, "batch": args.batch, "seed": args.seed,
           "threads": torch.get_num_threads(),
           "items_file": shown(args.items),
           "items_sha": file_digest(args.items), "reply_models": sorted({i.get("model", "?") for i in items}),
           **summarise(items, checks),
           "judge_s": round(judge_s, 2), "s_per_decision": round(judge_s / len(items), 4),
           "forward_prompts": judge.stats["forward_prompts"],
           "facts_stats": dict(judge.facts.stats) if judge.facts is not None else {},
           "host": host(), "commit": git_commit(), "date": time.strftime("%Y-%m-%d"),
           "wall_s": round(time.perf_counter() - wall, 1)}
    if compiled:
        row["wish_checks"] = compiled
    print("\n" + report(row), flush=True)
    if compiled:
        w, wo = compiled["with"], compiled["without"]
        print(f"\ncompiled checks: {compiled['compiled']}/{compiled['wishes']} wishes kept, "
              f"{compiled['s_per_compile']:.1f} s per compile; {compiled['by_compiled']} items decided by them "
              f"({compiled['compiled_errors']} check errors); agreement on decided items: with "
              f"{share(w['agree'], w['decided'])} ({w['agree']}/{w['decided']}), without "
              f"{share(wo['agree'], wo['decided'])} ({wo['agree']}/{wo['decided']})", flush=True)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"\nappended a row to {args.results}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
