"""How good is the OPD teacher? The hinted model's own replies, per hint form, side by side.

OPD moves the student toward what the teacher — the model with the hint in its prompt — would say, so
the teacher's quality bounds what OPD can teach. For each persona: the greedy first reply to its first
train tasks without a hint (the student), then, for each hint form, the greedy reply to the same
prompt with that task's hint (the persona's correction of the student's reply, as the judge would
give it). Printed: mean persona score and the gain over the student. Tasks the student already
satisfies keep their unhinted prompt (no correction, no hint).

    .venv/bin/python benchmarks/hint_teacher.py --personas teacher student ta --tasks 12
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WRAPPED = 'The user asked for a change: "{}" Do exactly what they ask in this answer.'  # the previous hint text


def forms() -> dict:
    """hint form -> (hint text from the correction, messages with the hint placed)."""
    from clawgym.rl.judge.probe import hint_from_reply
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
    }


async def measure(personas: list[str], n_tasks: int, max_tokens: int, model: str) -> dict[str, dict[str, float]]:
    from clawgym.core.policy import SamplingParams
    from clawgym.envs.openclaw_chat.personas import PERSONAS
    from clawgym.rl.policy.hf import HFPolicy
    from clawgym.serve import rehearsal

    policy = HFPolicy.from_pretrained(model, seed=0)
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
            for form, (hint_of, place) in forms().items():
                prompts = [m if satisfied else place(m, hint_of(correction))
                           for m, (correction, satisfied) in zip(openings, feedback)]
                replies = await asyncio.gather(*(policy.generate(p, None, greedy) for p in prompts))
                row[form] = sum(persona.score(g.text, t)[0] for g, t in zip(replies, tasks)) / len(tasks)
                print(f"{name} {form}: {row[form]:.3f}", flush=True)
            results[name] = row
    finally:
        await policy.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--personas", nargs="+", default=["teacher", "student", "ta"])
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--model", default="smollm2-135m")
    args = parser.parse_args()
    results = asyncio.run(measure(args.personas, args.tasks, args.max_tokens, args.model))
    names = list(next(iter(results.values())))
    print(f"\n{'hint form':<32}" + "".join(f"{p:>18}" for p in results) + f"   (mean persona score, {args.tasks} tasks each; gain vs no hint)")
    for form in names:
        cells = []
        for row in results.values():
            gain = row[form] - row["no hint (student)"]
            cells.append(f"{row[form]:>10.2f} ({gain:+.2f})" if form != names[0] else f"{row[form]:>18.2f}")
        print(f"{form:<32}" + "".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
