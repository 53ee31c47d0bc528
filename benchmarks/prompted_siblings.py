"""What a hindsight group's prompted siblings are worth: sampled replies with and without the wishes.

Hindsight GRPO (:mod:`clawgym.personal.hindsight`) learns only what some member of a group does; a wish the
model never meets on its own gives no group variance. ``serve.hindsight_prompted`` samples some siblings
from the teacher's prompt instead (the person's remembered wishes placed as the OPD hint) and may take
them from a bigger model of the same tokenizer (``serve.hindsight_prompted_model``). This measures, per
persona, the replies such siblings would be: ``--samples`` replies at the training temperature to each of
the first ``--tasks`` train tasks, from the policy's own prompt and from the wish-reading prompt of each
``--sampler``, and from the conversation continued by the person's answer to the policy's first reply
(``serve.hindsight_answered``: what the policy writes once told), all scored as replies to the opening
by the persona's hidden checks and by the rubric judge (the reward they would get).

The remembered wishes are what the wish memory makes of the scripted person's reply to the policy's
first sample of each task, every unmet wish voiced (``--user-voice all`` of the method table).

    .venv/bin/python benchmarks/prompted_siblings.py --personas teacher ta   # samplers: the 0.5B and the 1.5B
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def remembered(feedback: list[str]) -> list[str]:
    """What the wish memory holds after the person's replies (extraction, dedup, later wishes win)."""
    from clawgym.personal.wish_memory import WishMemory

    memory = WishMemory()
    for i, said in enumerate(feedback):
        memory.add("user", said, turn_id=f"t{i}", source="reply")
    return memory.texts("user")


def summary(persona, tasks, openings, replies, wishes, rubric, samples: int) -> dict:
    """Mean persona score, each check's pass rate, and the mean rubric reward of the decided replies."""
    from clawgym.core.chat_protocol import conversation
    from clawgym.personal.rubric import reward_of

    scored = [persona.score(g.text, tasks[i // samples]) for i, g in enumerate(replies)]
    checks = {name: statistics.mean(c[name] for _, c in scored) for name in scored[0][1]}
    rewards = [reward_of(c) for c in rubric.check_many(
        [(wishes, conversation(openings[i // samples]), g.text) for i, g in enumerate(replies)])]
    decided = [r for r in rewards if r is not None]
    return {"persona": statistics.mean(s for s, _ in scored), "checks": checks,
            "rubric": statistics.mean(decided) if decided else float("nan"), "example": replies[0].text}


async def measure(name: str, policy, samplers: dict, n_tasks: int, samples: int, temperature: float,
                  max_tokens: int, hint_format: str) -> dict[str, dict]:
    from clawgym.core.policy import SamplingParams
    from clawgym.envs.openclaw_chat.personas import PERSONAS
    from clawgym.personal.rubric import RubricJudge
    from clawgym.personal.teacher_hint import hint_with_wishes
    from clawgym.rl.trainer.samples import hinted_messages
    from clawgym.serve import rehearsal

    persona = PERSONAS[name]
    tasks = rehearsal.persona_tasks(name, "train")[:n_tasks]
    openings = [rehearsal.opening(persona, t) for t in tasks]
    sampling = SamplingParams(temperature=temperature, max_tokens=max_tokens)
    own = await asyncio.gather(*(policy.generate(m, None, sampling) for m in openings for _ in range(samples)))
    said = [persona.feedback(g.text, t, voice="all")[0] for g, t in zip(own[::samples], tasks)]
    wishes = remembered(said)
    print(f"{name}: remembered wishes {wishes}", flush=True)
    rubric = RubricJudge(policy)  # the policy judges, as in the method table's rows
    rows = {"own prompt (policy)": summary(persona, tasks, openings, own, wishes, rubric, samples)}
    hint = hint_with_wishes(None, wishes)
    prompts = [hinted_messages(m, hint, hint_format) for m in openings]
    for label, sampler in samplers.items():
        replies = await asyncio.gather(*(sampler.generate(p, None, sampling) for p in prompts for _ in range(samples)))
        rows[f"wishes {hint_format} ({label})"] = summary(persona, tasks, openings, replies, wishes, rubric, samples)
    answered = [m + [{"role": "assistant", "content": g.text}, {"role": "user", "content": s}]
                for m, g, s in zip(openings, own[::samples], said)]
    replies = await asyncio.gather(*(policy.generate(p, None, sampling) for p in answered for _ in range(samples)))
    rows["answered (policy)"] = summary(persona, tasks, openings, replies, wishes, rubric, samples)
    return rows


async def run(args) -> dict[str, dict[str, dict]]:
    from clawgym.inference.hf import HFPolicy

    policy = HFPolicy.from_pretrained(args.model, seed=0)
    samplers = {name: policy if name == args.model else HFPolicy.from_pretrained(name, seed=0)
                for name in args.samplers}
    try:
        return {name: await measure(name, policy, samplers, args.tasks, args.samples, args.temperature,
                                    args.max_tokens, args.hint_format) for name in args.personas}
    finally:
        for sampler in {id(s): s for s in [policy, *samplers.values()]}.values():
            await sampler.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--personas", nargs="+", default=["teacher", "ta"])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="the policy (and the rubric judge)")
    parser.add_argument("--samplers", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"],
                        help="who writes the prompted siblings (models of the policy's tokenizer)")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4, help="replies per task and prompt")
    parser.add_argument("--temperature", type=float, default=0.7, help="the chat launcher's training temperature")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--hint-format", default="inline", help="where the wishes go (trainer.hint_format)")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print(f"\npolicy {args.model}; {args.tasks} train tasks x {args.samples} replies at T = {args.temperature:g}, "
          f"max {args.max_tokens} tokens; persona: mean of the hidden checks; rubric: mean reward against the wishes")
    for name, rows in results.items():
        print(f"\n{name:<42}{'persona':>8}{'rubric':>8}   checks")
        for label, row in rows.items():
            checks = ", ".join(f"{k} {v:.2f}" for k, v in row["checks"].items())
            print(f"{label:<42}{row['persona']:>8.2f}{row['rubric']:>8.2f}   {checks}")
        for label, row in rows.items():
            print(f"  e.g. {label}: {row['example'][:200]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
