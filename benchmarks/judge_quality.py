"""How right and how fast is the judge on the user's next message? Prints agreement, confusion, hints, speed.

The evaluation set below is labelled by hand: every scripted persona's feedback and thanks, plus
paraphrases written for this benchmark (wrong units, wrong language, "that's not what I asked",
"perfect, thanks", a terse "ok", ...). It is kept apart from everything used to tune the judge (the
few-shot examples and threshold in ``clawgym/rl/judge/prob.py`` were chosen without it).

    .venv/bin/python benchmarks/judge_quality.py                       # cues, prob, prob+cues on qwen2.5-coder-0.5b
    .venv/bin/python benchmarks/judge_quality.py --model qwen2.5-coder-1.5b   # another judge model
    .venv/bin/python benchmarks/judge_quality.py --tune --model M      # fit M's threshold on the tuning set
    .venv/bin/python benchmarks/judge_quality.py --judges prm --limit 12   # the generated-vote PRM (slow)
    .venv/bin/python benchmarks/judge_quality.py --markdown docs/results/judge_quality.md   # the page; runs nothing

The model's verdict is its margin ``log p(Yes) - log p(No)`` against the judge model's threshold
(``clawgym.rl.judge.prob.THRESHOLDS``, fitted by ``--tune``); ``AUC`` says how well the margins alone rank
corrections above acceptances, whatever the threshold.

A correction's hint counts as naming the failed preference when it contains the item's keyword.

Each run on the evaluation set appends a row to ``benchmarks/results/judge_quality.jsonl`` (``--results``): the
printed table and the model-alone line, with the model, judges, threshold, item counts, CPU, commit and wall time;
``--markdown [PATH]`` writes the generated results page from the rows and runs nothing (``--tune`` records nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from clawgym.envs.openclaw_chat.personas import PERSONAS  # noqa: E402
from clawgym.rl.types import Turn  # noqa: E402
from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import add_page_arguments, generated_by, write_page  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "judge_quality.jsonl"
PAGE = Path("docs/results/judge_quality.md")
JUDGE_NAMES = {"cues": "`cues` (lexicon only)", "prob": "`prob` without cues (model alone)",
               "prob+cues": "`prob` + cues", "prm": "`prm` (generated votes, 3 per turn)"}

# (user's next message, label: -1 correction / +1 acceptance, keyword the hint must contain for a correction)
PARAPHRASES: list[tuple[str, int, str | None]] = [
    ("That's not what I asked. I wanted the total in kilometres, not miles.", -1, "kilometres"),
    ("Wrong units, give it in grams please.", -1, "grams"),
    ("Can you answer in French? I don't read English well.", -1, "french"),
    ("Reply in German please.", -1, "german"),
    ("This is way too long, two sentences max.", -1, "two sentences"),
    ("You didn't include the final answer.", -1, "final answer"),
    ("Hmm, the number is wrong. 12 times 4 is 48.", -1, "48"),
    ("Drop the bullet points and write it as a paragraph.", -1, "paragraph"),
    ("Less formal please, it's for a kid.", -1, "formal"),
    ("Use his name, Liam, in the comment.", -1, "liam"),
    ("No headings. Just text.", -1, "headings"),
    ("I asked for a score out of 10 and you didn't give one.", -1, "score"),
    ("Why is there LaTeX in this? Plain text only.", -1, "plain text"),
    ("Could you be a bit warmer? It sounds harsh.", -1, "warmer"),
    ("Explain why, at least a couple of sentences.", -1, "sentences"),
    ("Nope, still a numbered list. Sentences only.", -1, "sentences"),
    ("That's not the question I asked about.", -1, "question"),
    ("Shorter, please.", -1, "shorter"),
    ("Remove the bold.", -1, "bold"),
    ("It needs the correct result in it so she can check hers.", -1, "correct result"),
    ("Perfect, thanks!", 1, None),
    ("ok", 1, None),
    ("Thanks, that works.", 1, None),
    ("Great, exactly what I needed.", 1, None),
    ("Looks good to me.", 1, None),
    ("Brilliant, cheers.", 1, None),
    ("That's spot on, thank you so much.", 1, None),
    ("Yes, that's right.", 1, None),
    ("Awesome. I'll hand that in.", 1, None),
    ("Nice one, that's clear.", 1, None),
    ("Okay, got it, thanks.", 1, None),
    ("Fine, that'll do.", 1, None),
    ("This is great, I'll use it as is.", 1, None),
    ("Wonderful, my student will love this.", 1, None),
    ("That's exactly the tone I wanted.", 1, None),
]
# The tuning set: the only items the cue lexicon and the threshold were looked at against (--tune).
TUNING: list[tuple[str, int, str | None]] = [
    ("Put it in metres, not feet.", -1, "metres"),
    ("In Italian, per favore.", -1, "italian"),
    ("Too wordy. Cut it down.", -1, "cut it down"),
    ("You left out the student's name.", -1, "name"),
    ("That's incorrect, the sum is 17.", -1, "17"),
    ("Skip the markdown, plain sentences only.", -1, "markdown"),
    ("Be more encouraging.", -1, "encouraging"),
    ("Where's the grade?", -1, "grade"),
    ("I need more detail than that.", -1, "detail"),
    ("Lose the list formatting.", -1, "list"),
    ("Hmm, it should say 9/10 somewhere.", -1, "9/10"),
    ("Not quite, I wanted it casual.", -1, "casual"),
    ("Cheers, that's it.", 1, None),
    ("ok thanks", 1, None),
    ("Super, works for me.", 1, None),
    ("Good, that's what I was after.", 1, None),
    ("Love it.", 1, None),
    ("Right, all set now.", 1, None),
    ("Alright, that's fine.", 1, None),
    ("Thank you!", 1, None),
    ("Excellent, nothing to change.", 1, None),
    ("Yep, done.", 1, None),
]
KEYWORDS = {  # the scripted feedback's keyword per preference
    "gives_answer": "final number", "no_bold_or_headings": "bold", "no_lists": "lists", "no_latex": "latex",
    "names_student": "name", "friendly": "friendlier", "mentions_result": "correct result", "short": "80 words",
    "score_out_of_10": "score out of 10", "explains": "two sentences",
}


def evaluation_set() -> list[tuple[str, int, str | None]]:
    items: list[tuple[str, int, str | None]] = []
    for persona in PERSONAS.values():
        for pref in persona.preferences:
            items.append((pref.feedback, -1, KEYWORDS[pref.name]))
        items.append((f"{persona.thanks} {persona.done_token}", 1, None))
    seen: set[str] = set()
    unique = [i for i in items + PARAPHRASES if not (i[0] in seen or seen.add(i[0]))]
    return unique


def turn_for(reply: str) -> Turn:
    return Turn(episode_id="bench", turn_index=0, env_id="clawgym/OpenClawChat-v0",
                context=[{"role": "user", "content": "Help me with my homework."}],
                action={"role": "assistant", "content": "Here is my answer."},
                next_state=[{"role": "user", "content": reply}], info={"setting": "chat"})


def build_judge(kind: str, policy, threshold: float | None = None, scorer=None):  # noqa: ANN001
    """``scorer``: a shared ``ProbScorer``, so the model judges and the AUC line score each message once."""
    from clawgym.core.policy import SamplingParams
    from clawgym.rl.judge import PRMJudge, ProbJudge

    if kind == "cues":
        return ProbJudge(None, hints=True, cues=True)
    if kind == "prob":
        return ProbJudge(policy, hints=True, cues=False, threshold=threshold, scorer=scorer)
    if kind == "prob+cues":
        return ProbJudge(policy, hints=True, cues=True, threshold=threshold, scorer=scorer)
    if kind == "prm":
        return PRMJudge(policy, m=3, setting="chat", sampling=SamplingParams(temperature=0.6, max_tokens=256))
    raise SystemExit(f"unknown judge {kind!r}: use cues, prob, prob+cues or prm")


def auc(margins: list[float], labels: list[int]) -> float:
    """The chance that a correction's margin is above an acceptance's (ties count half)."""
    corrections = [m for m, label in zip(margins, labels) if label < 0]
    acceptances = [m for m, label in zip(margins, labels) if label > 0]
    pairs = [(c > a) + 0.5 * (c == a) for c in corrections for a in acceptances]
    return sum(pairs) / max(len(pairs), 1)


async def model_margins(scorer, texts: list[str]) -> list[float]:  # noqa: ANN001
    from clawgym.rl.judge.prob import prompt_for

    return list(await asyncio.gather(*(scorer.margin(prompt_for(text)) for text in texts)))


def fitted_threshold(margins: list[float], labels: list[int]) -> tuple[float, int]:
    """The threshold between two neighbouring margins that classifies the most items right (a correction
    above it), the widest such gap on ties; and how many it gets right."""
    values = sorted(set(margins))
    cuts = [(low + high) / 2 for low, high in zip(values, values[1:])] or [values[0]]
    gaps = {cut: high - low for cut, low, high in zip(cuts, values, values[1:])}

    def right(cut: float) -> int:
        return sum((m > cut) == (label < 0) for m, label in zip(margins, labels))

    best = max(cuts, key=lambda cut: (right(cut), gaps.get(cut, 0.0)))
    return best, right(best)


async def run(kind: str, policy, items, threshold: float | None = None, scorer=None) -> dict:  # noqa: ANN001
    judge = build_judge(kind, policy, threshold, scorer)
    started = time.perf_counter()
    results = await asyncio.gather(*(judge.judge(turn_for(text)) for text, _, _ in items))
    wall = time.perf_counter() - started
    confusion = {(label, pred): 0 for label in (-1, 1) for pred in (-1, 0, 1)}
    named = corrections = 0
    for (text, label, keyword), result in zip(items, results):
        pred = int(result.score) if result is not None else 0
        confusion[(label, pred)] += 1
        if label < 0:
            corrections += 1
            hint = " ".join(result.hints).lower() if result is not None else ""
            named += bool(keyword and keyword in hint)
    right = confusion[(-1, -1)] + confusion[(1, 1)]
    return {"judge": kind, "n": len(items), "agree": right / len(items),
            "corrections": [confusion[(-1, pred)] for pred in (-1, 0, 1)],  # -> -1 / 0 / +1
            "acceptances": [confusion[(1, pred)] for pred in (1, 0, -1)],  # -> +1 / 0 / -1
            "hint_named": named / max(corrections, 1), "turns_per_s": len(items) / wall,
            "threshold": getattr(judge, "threshold", None) if kind != "cues" else None}


def tune(model: str) -> int:
    """Margins of the model alone on the tuning set, the cue verdicts, and the threshold that fits best."""
    from clawgym.inference.hf import HFPolicy
    from clawgym.rl.judge import ProbScorer, cue_verdict

    policy = HFPolicy.from_pretrained(model)
    values = asyncio.run(model_margins(ProbScorer(policy), [text for text, _, _ in TUNING]))
    labels = [label for _, label, _ in TUNING]
    for (text, label, _), margin in zip(TUNING, values):
        print(f"{label:+d} cue={cue_verdict(text)} margin={margin:+.3f}  {text}")
    best, right = fitted_threshold(values, labels)
    print(f"best threshold {best:+.3f}: {right}/{len(TUNING)} on the tuning set (model alone), "
          f"AUC {auc(values, labels):.2f}")
    return 0


def measure(model: str, kinds: list[str], items, threshold: float | None = None) -> dict:  # noqa: ANN001
    """One results row: each judge on ``items`` and, when a model judges, the model's margins alone."""
    started = time.perf_counter()
    policy = scorer = None
    if any(k != "cues" for k in kinds):
        from clawgym.inference.hf import HFPolicy
        from clawgym.rl.judge import ProbScorer

        policy = HFPolicy.from_pretrained(model)
        scorer = ProbScorer(policy)
    rows = [asyncio.run(run(kind, policy, items, threshold, scorer)) for kind in kinds]
    n_corr = sum(1 for i in items if i[1] < 0)
    alone = None
    if policy is not None:
        from clawgym.rl.judge import cue_verdict

        margins = asyncio.run(model_margins(scorer, [text for text, _, _ in items]))
        labels = [label for _, label, _ in items]
        cut = rows[0]["threshold"] if rows[0]["threshold"] is not None else rows[-1]["threshold"]
        open_items = [(m, label) for (text, label, _), m in zip(items, margins) if cue_verdict(text) is None]
        alone = {"auc": auc(margins, labels), "open": len(open_items), "threshold": cut,
                 "right": sum((m > cut) == (label < 0) for m, label in open_items)}
    return {"model": model, "judges": kinds, "threshold_option": threshold, "items": len(items),
            "corrections": n_corr, "acceptances": len(items) - n_corr, "rows": rows, "model_alone": alone,
            "host": host(), "commit": git_commit(), "wall_s": round(time.perf_counter() - started, 1)}


def report(row: dict) -> None:
    """The printed table of one row."""
    print(f"judge quality on {row['items']} labelled next states ({row['corrections']} corrections, "
          f"{row['acceptances']} acceptances), "
          f"model {row['model']}")
    print(f"{'judge':<10} {'agree':>6} {'corr->-1':>8} {'corr->0':>7} {'corr->+1':>8} {'acc->+1':>7} {'acc->0':>6} "
          f"{'acc->-1':>7} {'hint names pref':>15} {'turns/s':>8} {'threshold':>9}")
    for r in row["rows"]:
        c, a = r["corrections"], r["acceptances"]
        threshold = f"{r['threshold']:+.3f}" if r["threshold"] is not None else "-"
        print(f"{r['judge']:<10} {r['agree']:>6.1%} {c[0]:>8} {c[1]:>7} {c[2]:>8} {a[0]:>7} "
              f"{a[1]:>6} {a[2]:>7} {r['hint_named']:>15.0%} {r['turns_per_s']:>8.2f} {threshold:>9}")
    alone = row["model_alone"]
    if alone is not None:
        print(f"model alone: AUC {alone['auc']:.2f} over all {row['items']}; on the {alone['open']} the cues "
              f"leave open, right on {alone['right']} at threshold {alone['threshold']:+.3f}")


def read_rows(path: Path = RESULTS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def table(rows: list[dict]) -> str:
    """One line per judge of each row, as the printed table; the model-alone AUC on a row's first model line."""
    lines = ["| judge model | judge | items | agreement | corrections → −1 / 0 / +1 | acceptances → +1 / 0 / −1 "
             "| hint names the failed preference | turns/s | threshold | model alone: AUC (right on the items the "
             "cues leave open) | ran on | commit |", "|---|---|---:|---:|---|---|---:|---:|---:|---|---|---|"]
    for row in rows:
        alone = row["model_alone"]
        first_model = next((r for r in row["rows"] if r["judge"] != "cues"), None)
        for r in row["rows"]:
            cell = f"{alone['auc']:.2f} ({alone['right']} of {alone['open']})" if alone and r is first_model else ""
            threshold = f"{r['threshold']:+.3f}" if r["threshold"] is not None else "–"
            lines.append(
                f"| {row['model'] if r['judge'] != 'cues' else '(none)'} | {JUDGE_NAMES.get(r['judge'], r['judge'])} "
                f"| {r['n']} | {r['agree'] * 100:.1f} % | {' / '.join(map(str, r['corrections']))} "
                f"| {' / '.join(map(str, r['acceptances']))} | {r['hint_named']:.0%} | {r['turns_per_s']:.2f} "
                f"| {threshold} | {cell} | {row['host']} | {row['commit']} |")
    return "\n".join(lines)


def markdown(path: Path = RESULTS) -> str:
    """docs/results/judge_quality.md: generated from the results file, never edited by hand."""
    rows = read_rows(path)
    return "\n".join([
        "# The judge of the next message", "",
        generated_by("judge_quality.py", PAGE, f"benchmarks/results/{RESULTS.name}"), "",
        "Each judge's verdicts on the hand-labelled evaluation set (every scripted persona's feedback and thanks, "
        "and paraphrases written for the benchmark; the lexicon, the few-shot examples and each model's threshold "
        "were fitted on a separate tuning set, `--tune`). `threshold`: the model's verdict threshold on its margin "
        "`log p(Yes) − log p(No)`; `model alone: AUC`: how well the margins alone rank corrections above "
        "acceptances, and how many of the items the cues leave open the model alone gets right. Speeds are of the "
        "row's CPU, shared or not.", "",
        f"Hardware (each row's `host`): {'; '.join(sorted({row['host'] for row in rows})) or 'no rows yet'}.", "",
        "    .venv/bin/python benchmarks/judge_quality.py --model qwen2.5-coder-0.5b   # one row: cues, prob, "
        "prob+cues", "",
        table(rows), ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judges", default="cues,prob,prob+cues")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="the judge model (the chat launcher's)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="the model's verdict threshold (default: its fitted one, prob.THRESHOLDS)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N items (0: all)")
    parser.add_argument("--tune", action="store_true",
                        help="the tuning set instead: per-item margins and the best threshold "
                             "(never the evaluation set)")
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args()
    if write_page(args, markdown):
        return 0
    if args.tune:
        return tune(args.model)
    items = evaluation_set()
    if args.limit:
        items = items[: args.limit]
    row = measure(args.model, [k.strip() for k in args.judges.split(",") if k.strip()], items, args.threshold)
    row["limit"] = args.limit
    report(row)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as out:
        out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
