"""How often does the rubric judge agree with the hidden persona checks? Per wish, on held-out replies.

The wishes are what the deployed wish memory makes of each persona's corrections (the person's own
words, :func:`clawgym.personal.wishes.wish_from_correction`); the persona checks never reach the judge,
they only label the replies. The replies are the model's own answers to held-out tasks (the test
split): greedy, sampled (temperature 1), and greedy with the persona's description in the system
prompt, so that both labels occur for most wishes. They are generated once and kept in
``--replies`` (JSONL), so the judge can be measured again without generating.

Printed: per persona and wish, how many replies, how many pass the hidden check, the agreement of
the rubric judge as deployed (cues for measurable wishes, names and warmth, the request's facts for
result and by-name wishes, the model for the rest; an unsure check counts as a disagreement), of the model alone (every wish to the model; an empty reply meets no wish either
way), the share decided by the cues (measurable wishes, empty replies) and by the request's facts (result
and by-name wishes),
and the model-alone AUC (does the margin rank replies
that pass above replies that fail?). Then how an unsure band trades wishes decided for agreement.

    .venv/bin/python benchmarks/rubric_judge.py --model qwen2.5-coder-0.5b --tasks 4
    .venv/bin/python benchmarks/rubric_judge.py --split train --tune   # pick a threshold on train-split replies
    .venv/bin/python benchmarks/rubric_judge.py --tasks 3 --judge-model qwen2.5-coder-1.5b   # the 0.5B's replies, a 1.5B judge
    .venv/bin/python benchmarks/rubric_judge.py --markdown docs/results/rubric_judge.md   # the page; runs nothing

Each run appends a row to ``benchmarks/results/rubric_judge.jsonl`` (``--results``): every line it prints
after the misses (per wish, all, the model's prompts and seconds, the solver, the names, the unsure bands, a
tuned threshold), with the models, personas, tasks, split, threshold, style, seed, CPU, commit and wall time;
``--markdown [PAGE]`` writes the generated results page from the rows and runs nothing.
"""  # noqa: E501  (the --help text: kept as written)

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from clawgym.envs.openclaw_chat.env import SYSTEM_PROMPT  # noqa: E402
from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks  # noqa: E402
from clawgym.personal.request_facts import RequestFacts  # noqa: E402
from clawgym.personal.rubric import THRESHOLD, RubricJudge, WishCheck  # noqa: E402
from clawgym.personal.wishes import wish_from_correction  # noqa: E402
from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import add_page_arguments, auc, generated_by, write_page  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "rubric_judge.jsonl"
PAGE = Path("docs/results/rubric_judge.md")
REPLIES = Path(__file__).resolve().parent / "results" / "rubric_replies.jsonl"
VARIANTS = ("greedy", "sampled", "prompted")
MAX_TOKENS = 128  # as the method table


def opening(task, variant: str) -> list[dict]:
    persona = PERSONAS[task.data["persona"]]
    system = SYSTEM_PROMPT if variant != "prompted" else f"{SYSTEM_PROMPT}\nThe user's wishes: {persona.description}"
    return [{"role": "system", "content": system}, {"role": "user", "content": persona.opener(task)}]


def wishes_of(persona: str) -> list[tuple[str, str]]:
    """(check name, wish) for each preference: the wish the memory makes of the persona's correction."""
    pairs = [(p.name, wish_from_correction(p.feedback)) for p in PERSONAS[persona].preferences]
    missing = [name for name, wish in pairs if wish is None]
    if missing:
        raise SystemExit(f"no wish made of the {persona} persona's corrections for {missing}")
    return pairs  # type: ignore[return-value]


def held_out(personas: list[str], split: str, count: int) -> list:
    tasks = []
    for persona in personas:
        tasks += [t for t in bundled_tasks() if t.data["persona"] == persona and t.split == split][:count]
    return tasks


async def generate(policy, tasks: list, model: str, path: Path, seed: int) -> list[dict]:
    """The replies of ``model`` to ``tasks`` (every variant), from ``path`` when already generated."""
    from clawgym.core.policy import SamplingParams

    known = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            known[(row["model"], row["task_id"], row["variant"])] = row
    todo = [(t, v) for t in tasks for v in VARIANTS if (model, t.id, v) not in known]
    if todo:
        print(f"generating {len(todo)} replies with {model} ...", flush=True)
        started = time.perf_counter()

        async def one(task, variant):
            sampling = SamplingParams(temperature=1.0 if variant == "sampled" else 0.0, max_tokens=MAX_TOKENS,
                                      seed=seed if variant == "sampled" else None)
            generation = await policy.generate(opening(task, variant), None, sampling)
            return {"model": model, "task_id": task.id, "variant": variant, "reply": generation.text}

        rows = await asyncio.gather(*(one(t, v) for t, v in todo))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                known[(model, row["task_id"], row["variant"])] = row
        print(f"  {time.perf_counter() - started:.0f} s", flush=True)
    return [known[(model, t.id, v)] for t in tasks for v in VARIANTS]


def best_threshold(margins: list[float], labels: list[bool]) -> tuple[float, float]:
    candidates = sorted({m for m in margins if m != float("-inf")})
    cuts = [candidates[0] - 1] + [(a + b) / 2 for a, b in zip(candidates, candidates[1:])] + [candidates[-1] + 1]
    scored = [(sum((m > c) == y for m, y in zip(margins, labels)) / len(labels), -abs(c), c) for c in cuts]
    accuracy, _, cut = max(scored)
    return cut, accuracy


def measure(args: argparse.Namespace) -> dict:
    """One results row (host, commit and wall time aside): the replies generated or read, judged both ways;
    prints each miss of the deployed judge with ``--show-misses``."""

    import torch

    from clawgym.inference.catalog import default_dtype
    from clawgym.inference.hf import HFPolicy

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    policy = HFPolicy.from_pretrained(args.model, dtype=getattr(torch, default_dtype(args.model)), seed=args.seed)
    tasks = held_out(args.personas, args.split, args.tasks)
    by_id = {t.id: t for t in tasks}
    replies = asyncio.run(generate(policy, tasks, args.model, args.replies, args.seed))
    judge_name = args.judge_model or args.model
    if judge_name != args.model:
        asyncio.run(policy.close())
        policy = HFPolicy.from_pretrained(judge_name, dtype=getattr(torch, default_dtype(judge_name)), seed=args.seed)

    judge = RubricJudge(policy, cues=False, read_facts=False, threshold=args.threshold,
                        few_shot=not args.no_few_shot, style=args.style)
    facts = RequestFacts(policy)
    rows, jobs = [], []
    for row in replies:
        task = by_id[row["task_id"]]
        persona = PERSONAS[task.data["persona"]]
        _, labels = persona.score(row["reply"], task)
        pairs = wishes_of(persona.name)
        jobs.append(([wish for _, wish in pairs], opening(task, "greedy")[1:], row["reply"]))
        rows.append((persona.name, row, [(name, wish, labels[name]) for name, wish in pairs]))
    started = time.perf_counter()
    checks = judge.check_many(jobs)
    seconds = time.perf_counter() - started
    prompts = judge.stats["forward_prompts"]

    # the rubric judge as deployed: the cues (formats, counts, names, warmth), the request's facts, then the model
    deployed = RubricJudge(policy, facts=facts, threshold=args.threshold, few_shot=not args.no_few_shot,
                           style=args.style)
    solving = time.perf_counter()
    deployed_checks = deployed.check_many(jobs)
    solving = time.perf_counter() - solving
    # (hidden label, model-alone verdict, its margin, the deployed check); an empty reply meets no wish (margin -inf)
    by_wish: dict[tuple[str, str], list[tuple[bool, bool, float, WishCheck]]] = {}
    for (persona, row, labelled), row_checks, row_deployed in zip(rows, checks, deployed_checks):
        for (name, wish, label), check, used in zip(labelled, row_checks, row_deployed):
            margin = check.margin if check.margin is not None else float("-inf")
            by_wish.setdefault((persona, name), []).append((label, bool(check.met), margin, used))
    if args.show_misses:
        for (persona, row, labelled), row_deployed in zip(rows, deployed_checks):
            for (name, _, label), used in zip(labelled, row_deployed):
                if used.met != label:
                    print(f"miss {persona}/{name} hidden={label} judge={used.met} ({used.source}) "
                          f"answer={by_id[row['task_id']].answer}: {' '.join(row['reply'].split())[:160]}")
    solutions = {t.id: facts.result(PERSONAS[t.data["persona"]].opener(t)) for t in tasks}  # cached: no new calls
    right = sum(v is not None and abs(v - float(by_id[i].answer)) < 1e-6 for i, v in solutions.items())
    refused = sum(v is None for v in solutions.values())
    facts_stats = dict(facts.stats)  # before the names below are asked

    wishes, totals = [], {"n": 0, "pass": 0, "judge": 0, "model": 0, "cues": 0, "facts": 0}
    all_margins, all_labels = [], []
    for (persona, name), items in by_wish.items():
        entry = {"persona": persona, "check": name, "wish": dict(wishes_of(persona))[name], "n": len(items),
                 "pass": sum(y for y, *_ in items), "judge": sum(used.met == y for y, _, _, used in items),
                 "model": sum(met == y for y, met, *_ in items),
                 "cues": sum(used.source == "cues" for *_, used in items),
                 "facts": sum(used.source == "facts" for *_, used in items),
                 "auc": auc([m for _, _, m, *_ in items], [y for y, *_ in items])}
        wishes.append(entry)
        totals = {key: totals[key] + entry[key] for key in totals}
        all_margins += [m for _, _, m, *_ in items]
        all_labels += [y for y, *_ in items]
    named = {t.id: facts.name(PERSONAS["teacher"].opener(t), wish) for t in tasks if t.data["persona"] == "teacher"
             for name, wish in wishes_of("teacher") if name == "names_student"}
    bands = []
    for band in (0.5, 1.0, 2.0):  # an unsure band: fewer wishes decided, are those more often right?
        decided = [(m > args.threshold) == y for m, y in zip(all_margins, all_labels)
                   if abs(m - args.threshold) >= band]
        bands.append({"band": band, "decided": len(decided), "agree": sum(decided)})
    tuned = None
    if args.tune:
        cut, accuracy = best_threshold(all_margins, all_labels)
        tuned = {"threshold": cut, "accuracy": accuracy}
    return {"model": args.model, "judge_model": judge_name, "personas": args.personas, "tasks": args.tasks,
            "split": args.split, "threshold": args.threshold, "few_shot": not args.no_few_shot, "style": args.style,
            "seed": args.seed, "threads": torch.get_num_threads(), "task_count": len(tasks), "replies": len(replies),
            "variants": len(VARIANTS), "wishes": wishes, "all": {**totals, "auc": auc(all_margins, all_labels)},
            "model_prompts": prompts, "model_s": seconds, "deployed_prompts": deployed.stats["forward_prompts"],
            "facts_stats": facts_stats, "deployed_s": solving,
            "solver": {"requests": len(solutions), "right": right, "refused": refused},
            "names": {"requests": len(named), "named": sum(n == by_id[i].data["student"] for i, n in named.items()),
                      "refused": sum(n is None for n in named.values())} if named else None,
            "bands": bands, "tuned": tuned}


def share(count: int, n: int, width: int = 0) -> str:
    return f"{count / max(n, 1):{width}.0%}"


def wish_line(e: dict) -> str:
    """A line of the printed table: one persona's wish, or the all line (``e`` without a check)."""
    label = f"{e['persona']:8} {e['check']:22}" if "check" in e else f"{'all':31}"
    area = "  -  " if e["auc"] is None else f"{e['auc']:5.2f}"
    line = (f"{label} {e['n']:3d} {e['pass']:5d} {share(e['judge'], e['n'], 6)} {share(e['model'], e['n'], 6)} "
            f"{share(e['cues'], e['n'], 5)} {share(e['facts'], e['n'], 6)} {area}")
    return f"{line}   {e['wish']}" if "check" in e else line


def report(row: dict) -> list[str]:
    """The lines a run prints after its misses: the table and the lines under it."""
    solver, names, n = row["solver"], row["names"], max(row["all"]["n"], 1)
    out = [f"rubric judge on {row['replies']} {row['split']}-split replies of {row['model']} "
           f"({row['task_count']} tasks x {row['variants']} variants), judge {row['judge_model']}, threshold "
           f"{row['threshold']:+.2f}, {row['style']} style{', zero-shot' if not row['few_shot'] else ''}",
           f"{'persona':8} {'wish (check)':22} {'n':>3} {'pass':>5} {'judge':>6} {'model':>6} "
           f"{'cues':>5} {'facts':>6} {'AUC':>5}   wish",
           *(wish_line(e) for e in row["wishes"]), wish_line(row["all"]),
           f"model: {row['model_prompts']} prompts in {row['model_s']:.0f} s "
           f"({row['model_prompts'] / max(row['model_s'], 1e-9):.2f} prompts/s, {row['threads']} threads); as "
           f"deployed: {row['deployed_prompts']} prompts, facts {row['facts_stats']}, {row['deployed_s']:.0f} s",
           f"solver: {solver['requests']} requests, {solver['right']} solved right, "
           f"{solver['requests'] - solver['right'] - solver['refused']} wrong, "
           f"{solver['refused']} refused (left to the model)"]
    if names:
        out.append(f"names: {names['requests']} teacher requests, {names['named']} named the student, "
                   f"{names['refused']} refused")
    out += [f"model alone, unsure within {b['band']:.1f} of the threshold: {b['decided'] / n:.0%} decided, "
            f"{b['agree'] / max(b['decided'], 1):.0%} of those agree" for b in row["bands"]]
    if row["tuned"]:
        out.append(f"tuned threshold on these replies: {row['tuned']['threshold']:+.3f} (model alone "
                   f"{row['tuned']['accuracy']:.0%}); use it only on another split")
    return out


def read_rows(path: Path = RESULTS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def table(rows: list[dict]) -> str:
    """One line per row: its all line, with what it ran with."""
    out = ["| replies of | judge model | split | tasks per persona | threshold, style | wish checks | pass "
           "| as deployed | model alone | by cues | by facts | model-alone AUC | solver: right / wrong / refused "
           "| model (s) | ran on | commit |",
           "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|"]
    for row in rows:
        a, solver = row["all"], row["solver"]
        style = f"{row['threshold']:+.2f}, {row['style']}{', zero-shot' if not row['few_shot'] else ''}"
        out.append(f"| {row['model']} | {row['judge_model']} | {row['split']} | {row['tasks']} | {style} | {a['n']} "
                   f"| {a['pass']} | {share(a['judge'], a['n'])} | {share(a['model'], a['n'])} "
                   f"| {share(a['cues'], a['n'])} | {share(a['facts'], a['n'])} "
                   f"| {'–' if a['auc'] is None else format(a['auc'], '.2f')} "
                   f"| {solver['right']} / {solver['requests'] - solver['right'] - solver['refused']} / "
                   f"{solver['refused']} | {row['model_s']:.0f} | {row['host']} | {row['commit']} |")
    return "\n".join(out)


def markdown(path: Path = RESULTS) -> str:
    """docs/results/rubric_judge.md: generated from the results file, never edited by hand."""
    rows = read_rows(path)
    page = [
        "# The rubric judge against the personas' hidden checks", "",
        generated_by("rubric_judge.py", PAGE, f"benchmarks/results/{RESULTS.name}"), "",
        "Each wish is what the wish memory makes of a persona's correction; the hidden checks only label the "
        "replies, the model's own held-out replies (greedy, sampled at temperature 1, and greedy with the "
        "persona's description in the system prompt; kept in `benchmarks/results/rubric_replies.jsonl`). "
        "`as deployed`: the rubric judge as deployed agrees with the hidden check (an unsure check counted as a "
        "disagreement); `model alone`: every wish to the model; `by cues` / `by facts`: the share decided by the "
        "cues and by the request's facts; `pass`: replies that pass the hidden check.", "",
        f"Hardware (each row's `host`): {'; '.join(sorted({row['host'] for row in rows})) or 'no rows yet'}.", "",
        "    .venv/bin/python benchmarks/rubric_judge.py --model qwen2.5-coder-0.5b --tasks 6 --show-misses", "",
        table(rows), ""]
    for row in rows:
        page += [f"The row of {row['model']}'s replies, judge {row['judge_model']}, commit {row['commit']} "
                 f"({row['host']}), as printed:", "", "```", *report(row), "```", ""]
    return "\n".join(page)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b",
                        help="the judge model, and the model whose replies are judged")
    parser.add_argument("--judge-model", default=None,
                        help="the judge model (default: --model, whose replies are judged)")
    parser.add_argument("--personas", nargs="+", default=list(PERSONAS))
    parser.add_argument("--tasks", type=int, default=4, help="tasks per persona")
    parser.add_argument("--split", default="test", choices=("test", "train"))
    parser.add_argument("--replies", type=Path, default=REPLIES)
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    parser.add_argument("--no-few-shot", action="store_true")
    parser.add_argument("--style", default="wish", choices=("question", "wish"))
    parser.add_argument("--show-misses", action="store_true", help="print each reply the deployed judge gets wrong")
    parser.add_argument("--tune", action="store_true", help="print the model-alone threshold that agrees best here")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args()
    if write_page(args, markdown):
        return 0
    started = time.perf_counter()
    row = measure(args)
    row.update(host=host(), commit=git_commit(), wall_s=round(time.perf_counter() - started, 1))
    print("\n" + "\n".join(report(row)))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as out:
        out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
