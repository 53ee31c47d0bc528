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
"""  # noqa: E501  (the --help text: kept as written)

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawgym.envs.openclaw_chat.env import SYSTEM_PROMPT  # noqa: E402
from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks  # noqa: E402
from clawgym.personal.request_facts import RequestFacts  # noqa: E402
from clawgym.personal.rubric import THRESHOLD, RubricJudge, WishCheck  # noqa: E402
from clawgym.personal.wishes import wish_from_correction  # noqa: E402

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


def auc(margins: list[float], labels: list[bool]) -> float | None:
    positives = [m for m, y in zip(margins, labels) if y]
    negatives = [m for m, y in zip(margins, labels) if not y]
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def best_threshold(margins: list[float], labels: list[bool]) -> tuple[float, float]:
    candidates = sorted({m for m in margins if m != float("-inf")})
    cuts = [candidates[0] - 1] + [(a + b) / 2 for a, b in zip(candidates, candidates[1:])] + [candidates[-1] + 1]
    scored = [(sum((m > c) == y for m, y in zip(margins, labels)) / len(labels), -abs(c), c) for c in cuts]
    accuracy, _, cut = max(scored)
    return cut, accuracy


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
    args = parser.parse_args()

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
    table: dict[tuple[str, str], list[tuple[bool, bool, float, WishCheck]]] = {}
    for (persona, row, labelled), row_checks, row_deployed in zip(rows, checks, deployed_checks):
        for (name, wish, label), check, used in zip(labelled, row_checks, row_deployed):
            margin = check.margin if check.margin is not None else float("-inf")
            table.setdefault((persona, name), []).append((label, bool(check.met), margin, used))
    if args.show_misses:
        for (persona, row, labelled), row_deployed in zip(rows, deployed_checks):
            for (name, _, label), used in zip(labelled, row_deployed):
                if used.met != label:
                    print(f"miss {persona}/{name} hidden={label} judge={used.met} ({used.source}) "
                          f"answer={by_id[row['task_id']].answer}: {' '.join(row['reply'].split())[:160]}")
    solutions = {t.id: facts.result(PERSONAS[t.data["persona"]].opener(t)) for t in tasks}  # cached: no new calls
    right = sum(v is not None and abs(v - float(by_id[i].answer)) < 1e-6 for i, v in solutions.items())
    refused = sum(v is None for v in solutions.values())

    print(f"\nrubric judge on {len(replies)} {args.split}-split replies of {args.model} "
          f"({len(tasks)} tasks x {len(VARIANTS)} variants), judge {judge_name}, threshold {args.threshold:+.2f}"
          f", {args.style} style{', zero-shot' if args.no_few_shot else ''}")
    print(f"{'persona':8} {'wish (check)':22} {'n':>3} {'pass':>5} {'judge':>6} {'model':>6} "
          f"{'cues':>5} {'facts':>6} {'AUC':>5}   wish")
    totals = {"n": 0, "judge": 0, "model": 0, "cues": 0, "facts": 0}
    all_margins, all_labels = [], []
    for (persona, name), items in table.items():
        wish = dict(wishes_of(persona))[name]
        n = len(items)
        model_ok = sum(met == y for y, met, *_ in items)
        judge_ok = sum(used.met == y for y, _, _, used in items)
        cued = sum(used.source == "cues" for *_, used in items)
        solved = sum(used.source == "facts" for *_, used in items)
        area = auc([m for _, _, m, *_ in items], [y for y, *_ in items])
        print(f"{persona:8} {name:22} {n:3d} {sum(y for y, *_ in items):5d} {judge_ok / n:6.0%} {model_ok / n:6.0%} "
              f"{cued / n:5.0%} {solved / n:6.0%} {'  -  ' if area is None else f'{area:5.2f}'}   {wish}")
        totals["n"] += n
        totals["judge"] += judge_ok
        totals["model"] += model_ok
        totals["cues"] += cued
        totals["facts"] += solved
        all_margins += [m for _, _, m, *_ in items]
        all_labels += [y for y, *_ in items]
    n = max(totals["n"], 1)
    area = auc(all_margins, all_labels)
    print(f"{'all':31} {totals['n']:3d} {sum(all_labels):5d} {totals['judge'] / n:6.0%} {totals['model'] / n:6.0%} "
          f"{totals['cues'] / n:5.0%} {totals['facts'] / n:6.0%} {'  -  ' if area is None else f'{area:5.2f}'}")
    print(f"model: {prompts} prompts in {seconds:.0f} s ({prompts / max(seconds, 1e-9):.2f} prompts/s, "
          f"{torch.get_num_threads()} threads); as deployed: {deployed.stats['forward_prompts']} prompts, "
          f"facts {dict(facts.stats)}, {solving:.0f} s")
    print(f"solver: {len(solutions)} requests, {right} solved right, {len(solutions) - right - refused} wrong, "
          f"{refused} refused (left to the model)")
    named = {t.id: facts.name(PERSONAS["teacher"].opener(t), wish) for t in tasks if t.data["persona"] == "teacher"
             for name, wish in wishes_of("teacher") if name == "names_student"}
    if named:
        print(f"names: {len(named)} teacher requests, {sum(n == by_id[i].data['student'] for i, n in named.items())} "
              f"named the student, {sum(n is None for n in named.values())} refused")
    for band in (0.5, 1.0, 2.0):  # an unsure band: fewer wishes decided, are those more often right?
        decided = [(m > args.threshold) == y for m, y in zip(all_margins, all_labels)
                   if abs(m - args.threshold) >= band]
        print(f"model alone, unsure within {band:.1f} of the threshold: {len(decided) / n:.0%} decided, "
              f"{sum(decided) / max(len(decided), 1):.0%} of those agree")
    if args.tune:
        cut, accuracy = best_threshold(all_margins, all_labels)
        print(f"tuned threshold on these replies: {cut:+.3f} (model alone {accuracy:.0%}); "
              "use it only on another split")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
