"""How good is the OPD teacher? The hinted model's own replies, per hint form, side by side.

OPD moves the student toward what the teacher — the model with the hint in its prompt — would say, so
the teacher's quality bounds what OPD can teach. For each persona: the greedy first reply to its first
train tasks without a hint (the student), then, for each hint form, the greedy reply to the same
prompt with that task's hint (the persona's correction of the student's reply, as the judge would
give it). Printed: mean persona score and the gain over the student. Tasks the student already
satisfies keep their unhinted prompt (no correction, no hint).

The ``wishes`` forms give the teacher what the wish memory (:mod:`clawgym.personal.wish_memory`) would hold
after these corrections, on every task (``serve.teacher_wishes``: the teacher reads all of a person's
wishes, not only the last correction). ``--teacher-model`` answers the hinted prompts with another model
(a bigger one of the same tokenizer, e.g. qwen2.5-coder-1.5b for the 0.5B student) while the student
and its corrections stay the ``--model``'s.

    .venv/bin/python benchmarks/hint_teacher.py --personas teacher student ta --tasks 12
    .venv/bin/python benchmarks/hint_teacher.py --model qwen2.5-coder-0.5b --teacher-model qwen2.5-coder-1.5b
    .venv/bin/python benchmarks/hint_teacher.py --markdown docs/results/hint_teacher.md   # the page; runs nothing

Each run appends a row to ``benchmarks/results/hint_teacher.jsonl`` (``--results``): the mean persona score of
every hint form for every persona (the printed table), with the student and teacher models, personas, tasks, max
tokens, forms asked for, CPU, commit and wall time; ``--markdown [PAGE]`` writes the generated results page from
the rows and runs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_from_conversation import git_commit, host  # noqa: E402
from results_page import add_page_arguments, generated_by, write_page  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "hint_teacher.jsonl"
PAGE = Path("docs/results/hint_teacher.md")

WRAPPED = 'The user asked for a change: "{}" Do exactly what they ask in this answer.'  # the previous hint text


def forms(wishes: list[str] | None = None) -> dict:
    """hint form -> (hint text from the correction, messages with the hint placed); ``wishes`` adds the
    wish-memory forms, whose hint holds every remembered wish (their correction may be None: a task the
    student already satisfied)."""
    from clawgym.personal.teacher_hint import hint_with_wishes
    from clawgym.rl.judge.prob import hint_from_reply
    from clawgym.rl.trainer.samples import hinted_messages

    def system(messages, hint):
        out = copy.deepcopy(messages)
        out[0]["content"] += f"\nThe user's wishes: {hint}"
        return out

    return {
        "bare, inline (default)": (hint_from_reply, lambda m, h: hinted_messages(m, h, "inline")),
        "bare, header": (hint_from_reply, lambda m, h: hinted_messages(m, h, "header")),
        "bare, system prompt": (hint_from_reply, system),
        "wrapped, inline": (lambda c: WRAPPED.format(c), lambda m, h: hinted_messages(m, h, "inline")),
        "wrapped, header (OpenClaw-RL)": (lambda c: WRAPPED.format(c), lambda m, h: hinted_messages(m, h, "header")),
        **({
            "wishes, inline": (lambda c: hint_with_wishes(None, wishes), lambda m, h: hinted_messages(m, h, "inline")),
            "wishes, system prompt": (lambda c: hint_with_wishes(None, wishes), system),
            "wishes + correction, inline": (lambda c: hint_with_wishes(hint_from_reply(c) if c else None, wishes),
                                            lambda m, h: hinted_messages(m, h, "inline")),
        } if wishes else {}),
    }


def remembered(corrections: list[str]) -> list[str]:
    """What the wish memory holds after these corrections (extraction, dedup, a later wish replacing one it
    contradicts)."""
    from clawgym.personal.wish_memory import WishMemory

    memory = WishMemory()
    for i, correction in enumerate(corrections):
        memory.add("user", correction, turn_id=f"t{i}", source="reply")
    return memory.texts("user")


async def measure(personas: list[str], n_tasks: int, max_tokens: int, model: str,
                  teacher_model: str | None = None, only: list[str] | None = None) -> dict[str, dict[str, float]]:
    from clawgym.core.policy import SamplingParams
    from clawgym.envs.openclaw_chat.personas import PERSONAS
    from clawgym.inference.hf import HFPolicy
    from clawgym.serve import rehearsal

    policy = HFPolicy.from_pretrained(model, seed=0)
    teacher = HFPolicy.from_pretrained(teacher_model, seed=0) if teacher_model and teacher_model != model else policy
    greedy = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    results: dict[str, dict[str, float]] = {}
    try:
        for name in personas:
            persona = PERSONAS[name]
            tasks = rehearsal.persona_tasks(name, "train")[:n_tasks]
            openings = [rehearsal.opening(persona, t) for t in tasks]
            student = await asyncio.gather(*(policy.generate(m, None, greedy) for m in openings))
            feedback = [persona.feedback(g.text, t) for g, t in zip(student, tasks)]
            row = {"no hint (student)": sum(persona.score(g.text, t)[0] for g, t in zip(student, tasks)) / len(tasks)}
            if teacher is not policy:  # how much of a bigger teacher's gain is the bigger model, not the hint
                plain = await asyncio.gather(*(teacher.generate(m, None, greedy) for m in openings))
                row["no hint (teacher model)"] = sum(persona.score(g.text, t)[0] for g, t in zip(plain, tasks)) / len(
                    tasks)
                print(f"{name} no hint (teacher model): {row['no hint (teacher model)']:.3f}", flush=True)
            wishes = remembered([c for c, satisfied in feedback if not satisfied])
            print(f"{name}: remembered wishes {wishes}", flush=True)
            for form, (hint_of, place) in forms(wishes).items():
                if only and not any(form.startswith(o) for o in only):
                    continue
                every_task = form.startswith("wishes")  # the memory's wishes reach the teacher on every turn
                prompts = [place(m, hint_of(None if satisfied else correction)) if every_task
                           else m if satisfied else place(m, hint_of(correction))
                           for m, (correction, satisfied) in zip(openings, feedback)]
                replies = await asyncio.gather(*(teacher.generate(p, None, greedy) for p in prompts))
                row[form] = sum(persona.score(g.text, t)[0] for g, t in zip(replies, tasks)) / len(tasks)
                print(f"{name} {form}: {row[form]:.3f}", flush=True)
            results[name] = row
    finally:
        await policy.close()
        if teacher is not policy:
            await teacher.close()
    return results


def cell(row: dict, persona: str, form: str) -> str:
    """A persona's mean score under a hint form, with its gain over the student (the student's own: no gain)."""
    scores = row["scores"][persona]
    if form not in scores:
        return "–"
    gain = scores[form] - scores["no hint (student)"]
    return f"{scores[form]:.2f}" if form == "no hint (student)" else f"{scores[form]:.2f} ({gain:+.2f})"


def read_rows(path: Path = RESULTS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def table(rows: list[dict]) -> str:
    """One line per hint form of each row, a column per persona (of any row), as the printed table."""
    personas = list(dict.fromkeys(p for row in rows for p in row["personas"]))
    lines = ["| student model | teacher model | hint form | " + " | ".join(personas)
             + " | tasks each | max tokens | ran on | commit |",
             "|---|---|---|" + "---:|" * len(personas) + "---:|---:|---|---|"]
    for row in rows:
        for form in next(iter(row["scores"].values())):
            cells = " | ".join(cell(row, p, form) if p in row["scores"] else "–" for p in personas)
            lines.append(f"| {row['model']} | {row['teacher_model']} | {form} | {cells} | {row['tasks']} "
                         f"| {row['max_tokens']} | {row['host']} | {row['commit']} |")
    return "\n".join(lines)


def markdown(path: Path = RESULTS) -> str:
    """docs/results/hint_teacher.md: generated from the results file, never edited by hand."""
    rows = read_rows(path)
    return "\n".join([
        "# The hinted teacher, the ceiling of OPD", "",
        generated_by("hint_teacher.py", PAGE, f"benchmarks/results/{RESULTS.name}"), "",
        "The teacher's own greedy replies to each persona's first train tasks, the mean persona score, with the "
        "gain over the student's unhinted replies in brackets. A hint is the persona's correction of the "
        "student's reply (`bare`: as the judge gives it; `wrapped`: in the previous wording), inline, under "
        "OpenClaw-RL's header or in the system prompt; the `wishes` forms hold what the wish memory makes of the "
        "corrections, on every task. Tasks the student already satisfies keep their unhinted prompt.", "",
        f"Hardware (each row's `host`): {'; '.join(sorted({row['host'] for row in rows})) or 'no rows yet'}.", "",
        "    .venv/bin/python benchmarks/hint_teacher.py --model qwen2.5-coder-0.5b --personas teacher ta --tasks 8 "
        "--forms bare wishes [--teacher-model qwen2.5-coder-1.5b]", "",
        table(rows), ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--personas", nargs="+", default=["teacher", "student", "ta"])
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--teacher-model", default=None, help="answers the hinted prompts (default: --model)")
    parser.add_argument("--forms", nargs="+", default=None, help="only the hint forms starting with these words")
    add_page_arguments(parser, RESULTS, PAGE)
    args = parser.parse_args()
    if write_page(args, markdown):
        return 0
    started = time.perf_counter()
    results = asyncio.run(measure(args.personas, args.tasks, args.max_tokens, args.model,
                                  args.teacher_model, args.forms))
    print(f"student {args.model}, teacher {args.teacher_model or args.model}")
    names = list(next(iter(results.values())))
    print(f"\n{'hint form':<32}"
          + "".join(f"{p:>18}" for p in results) + f"   (mean persona score, {args.tasks} tasks each; gain vs no hint)")
    for form in names:
        cells = []
        for row in results.values():
            gain = row[form] - row["no hint (student)"]
            cells.append(f"{row[form]:>10.2f} ({gain:+.2f})" if form != names[0] else f"{row[form]:>18.2f}")
        print(f"{form:<32}" + "".join(cells))
    record = {"model": args.model, "teacher_model": args.teacher_model or args.model, "personas": args.personas,
              "tasks": args.tasks, "max_tokens": args.max_tokens, "forms": args.forms, "scores": results,
              "host": host(), "commit": git_commit(), "wall_s": round(time.perf_counter() - started, 1)}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
