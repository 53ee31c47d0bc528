"""Does the rubric judge's model tell a reply that answers the request from one that does not?

With ``serve.hindsight_answers_request`` a reply that does not answer the person's task meets no wish, so that a
policy cannot earn the wishes about form alone ("no code blocks", "keep it short") by collapsing to one-word
replies, as the code reviewer's did (docs/training.md). A false "does not answer" costs a good reply its whole
reward, so the signal is worth having only where it is rarely wrong that way. Two ways of reading the judge
model are measured (``--by``):

- ``pmi`` (what the rubric uses, :func:`clawgym.personal.rubric.request_information`): how much likelier the
  reply is after the request than after a neutral one, in nats;
- ``question``: the rubric's Yes/No question with the wish "answer what the user asked".

Items are built from the wish benchmark's replies (``benchmarks/results/wish_bench_replies.jsonl``: the default
model's sampled replies to 46 requests of 12 kinds of person, some with a wish in the prompt):

- *answers*: a reply to its own request (the model's attempt, good or poor, at what was asked);
- *fragment*: the reply's first word, or its first three words ("Dear Priya,", "Sure! Here"): the shape of a
  collapsed policy's replies;
- *off-topic*: a reply to a request of another kind of person.

Labels are the construction's: a fragment or another request's reply does not answer; the model's own reply
does. **Split**: by a stable hash of the request (dev / test, 50 / 50); the threshold is chosen on dev (the
highest with at most ``--max-false-no`` of the answers said not to answer), the test split only reports.

    .venv/bin/python benchmarks/answer_check.py --by pmi              # dev, then test at dev's threshold
    .venv/bin/python benchmarks/answer_check.py --by question
    .venv/bin/python benchmarks/answer_check.py --markdown            # the page; runs nothing

One JSON row per run in ``benchmarks/results/answer_check.jsonl`` (model, how, host, commit, counts, AUC, the
chosen threshold and the rates at it and at 0, per kind of item, wall time); ``--dump`` keeps every item's margin.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import add_page_arguments, auc, generated_by, write_page  # noqa: E402

REPLIES = Path(__file__).resolve().parent / "results" / "wish_bench_replies.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "answer_check.jsonl"
PAGE = Path("docs/results/answer_check.md")
QUESTION_WISH = "answer what the user asked"  # --by question: asked as the rubric asks of any wish
BY = {"question": f"the rubric's Yes/No question with the wish \"{QUESTION_WISH}\"",
      "pmi": "request information: log p(reply | request) - log p(reply | neutral request)"}


def split_of(request: str) -> str:
    return "dev" if hashlib.sha256(request.encode()).digest()[0] % 2 == 0 else "test"


def build_items(rows: Sequence[dict[str, Any]], per_request: int, seed: int = 0) -> list[dict[str, Any]]:
    """Per request: up to ``per_request`` of its replies (answers), as many fragments of them, and as many
    replies to requests of other kinds (off-topic)."""
    rng = random.Random(seed)
    by_request: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["reply"].strip():
            by_request.setdefault(row["request"], []).append(row)
    items = []
    for request, own in sorted(by_request.items()):
        chosen = rng.sample(own, min(per_request, len(own)))
        others = [r for r in rows if r["kind"] != own[0]["kind"] and r["reply"].strip()]
        for i, row in enumerate(chosen):
            words = row["reply"].split()
            fragment = " ".join(words[: 1 if i % 2 == 0 else 3])
            items += [{"request": request, "reply": row["reply"], "kind": "answers", "answers": True},
                      {"request": request, "reply": fragment, "kind": "fragment", "answers": False},
                      {"request": request, "reply": rng.choice(others)["reply"], "kind": "off-topic",
                       "answers": False}]
    for item in items:
        item["split"] = split_of(item["request"])
    return items


def pmi_of(policy: Any, items: Sequence[dict[str, Any]]) -> list[float]:
    """What ``answers_request`` reads: :func:`clawgym.personal.rubric.request_information` of each item."""
    from clawgym.personal.rubric import request_information

    return request_information(policy, [(it["request"], it["reply"]) for it in items])


def margins_of(policy: Any, items: Sequence[dict[str, Any]], batch: int = 16) -> list[float]:
    """The rubric judge's own question for a wish, :data:`QUESTION_WISH`: log p(Yes) - log p(No)."""
    from clawgym.personal.rubric import RubricJudge

    judge = RubricJudge(policy, cues=False, read_facts=False)
    margins: list[float] = []
    for start in range(0, len(items), batch):
        jobs = [([QUESTION_WISH], [{"role": "user", "content": it["request"]}], it["reply"])
                for it in items[start:start + batch]]
        margins += [checks[0].margin for checks in judge.check_many(jobs)]
    return margins


def rates(items: Sequence[dict[str, Any]], margins: Sequence[float], threshold: float) -> dict[str, Any]:
    """At ``threshold``: the share of each kind the judge says answers, and the agreement with the labels."""
    out: dict[str, Any] = {}
    for kind in ("answers", "fragment", "off-topic"):
        ms = [m for it, m in zip(items, margins) if it["kind"] == kind]
        out[f"{kind}_yes"] = round(sum(m > threshold for m in ms) / len(ms), 3) if ms else None
    right = sum((m > threshold) == it["answers"] for it, m in zip(items, margins))
    out["agreement"] = round(right / len(items), 3)
    return out


def choose_threshold(items: Sequence[dict[str, Any]], margins: Sequence[float], max_false_no: float) -> float:
    """The highest threshold that refuses at most ``max_false_no`` of the answers (dev only)."""
    answered = sorted(m for it, m in zip(items, margins) if it["answers"])
    k = int(max_false_no * len(answered))
    return round(answered[k] - 1e-3, 3) if answered else 0.0


def read_rows(path: Path = RESULTS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| judge model | how | split | items | AUC | threshold | answers said to answer | fragments | off-topic "
             "| agreement | s / item | host | commit |", "|" + "---|" * 13]
    for row in rows:
        for split in ("dev", "test"):
            at = row[split]["at_threshold"]
            lines.append(f"| {row['model']} | {row.get('by', 'question')} | {split} | {row[split]['items']} "
                         f"| {row[split]['auc']:.3f} | {row['threshold']:+.2f} | {at['answers_yes']:.0%} "
                         f"| {at['fragment_yes']:.0%} | {at['off-topic_yes']:.0%} | {at['agreement']:.0%} "
                         f"| {row['seconds_per_item']:.2f} | {row['host']} | {row['commit']} |")
    return "\n".join(lines)


def markdown(results: Path) -> str:
    rows = read_rows(results)
    return "\n\n".join([
        "# Does the reply answer the request? (`serve.hindsight_answers_request`)",
        generated_by("answer_check.py", PAGE, str(results.relative_to(results.parents[2]))),
        "Items: the default model's replies to the wish benchmark's 46 requests (12 kinds of person), each against "
        "its own request (it answers), cut to its first one or three words (a fragment) and against a request of "
        "another kind (off-topic). Split by a hash of the request; each row's threshold is the one chosen on its dev "
        "split (at most 5 % of the answers said not to answer) and the test split only reports. How: "
        + "; ".join(f"`{k}`: {v}" for k, v in BY.items()) + ".",
        table(rows),
        "Command: `.venv/bin/python benchmarks/answer_check.py --by pmi` (or `--by question`).",
        f"Hardware (each row's `host`): {'; '.join(sorted({row['host'] for row in rows}))}.",
    ]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--per-request", type=int, default=4)
    parser.add_argument("--max-false-no", type=float, default=0.05)
    parser.add_argument("--by", choices=("question", "pmi"), default="pmi",
                        help="the judge model's Yes/No question, or the request's pointwise mutual information with "
                             "the reply (nats)")
    add_page_arguments(parser, RESULTS, PAGE)
    parser.add_argument("--dump", type=Path, help="write every item with its margin here (JSONL), to read")
    args = parser.parse_args(argv)
    if write_page(args, markdown):
        return 0

    import torch

    from clawgym.inference.catalog import default_dtype
    from clawgym.inference.hf import HFPolicy
    from clawgym.personal.rubric import NEUTRAL_REQUEST

    torch.manual_seed(0)
    rows = [json.loads(line) for line in REPLIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = build_items(rows, args.per_request)
    policy = HFPolicy.from_pretrained(args.model, dtype=getattr(torch, default_dtype(args.model)), seed=0)
    started = time.perf_counter()
    margins = margins_of(policy, items) if args.by == "question" else pmi_of(policy, items)
    seconds = time.perf_counter() - started
    row: dict[str, Any] = {"model": args.model, "by": args.by, "neutral": NEUTRAL_REQUEST if args.by == "pmi" else None,
                           "host": host(), "commit": git_commit(), "items": len(items),
                           "per_request": args.per_request, "max_false_no": args.max_false_no,
                           "seconds_per_item": round(seconds / len(items), 3), "wall_s": round(seconds, 1)}
    dev = [(it, m) for it, m in zip(items, margins) if it["split"] == "dev"]
    threshold = choose_threshold([it for it, _ in dev], [m for _, m in dev], args.max_false_no)
    row["threshold"] = threshold
    for split in ("dev", "test"):
        part = [(it, m) for it, m in zip(items, margins) if it["split"] == split]
        its, ms = [it for it, _ in part], [m for _, m in part]
        row[split] = {"items": len(its), "auc": round(auc(ms, [it["answers"] for it in its]) or 0.0, 3),
                      "at_0": rates(its, ms, 0.0), "at_threshold": rates(its, ms, threshold)}
    if args.dump:
        args.dump.write_text("".join(json.dumps({**it, "margin": round(m, 3)}) + "\n" for it, m in zip(items, margins)),
                             encoding="utf-8")
    with args.results.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
