"""What a learning_from_conversation cell's person would read: the held-out greedy replies before and after.

The method table reports scores; this prints the replies behind them. It rebuilds the cell's model with
the same recipe (``config_for``), scores every held-out task of the persona with the base weights,
loads the cell's checkpoint (``runs/lfc/<cell>/checkpoint``), and scores them again; the scores match
the cell's row when the checkpoint is its last step. One JSON line per (task, before/after) to stdout:

    .venv/bin/python benchmarks/cell_replies.py --method hindsight_hybrid --persona teacher --seed 0 \\
        --checkpoint runs/lfc/qwen2.5-coder-0.5b-teacher-hindsight_hybrid_voice_all-0/checkpoint

A cell run with ``--set`` overrides takes the same ``--set``s here (``policy.dtype=float32`` above all).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_from_conversation import EVERYONE, MAX_TOKENS, METHODS, METRICS, config_for  # noqa: E402


async def replies(policy, persona: str, tag: str) -> list[dict]:
    from clawgym.core.policy import SamplingParams
    from clawgym.envs.openclaw_chat.people import EVERYONE as P
    from clawgym.serve import rehearsal

    tasks = rehearsal.persona_tasks(persona, "test")
    sampling = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS)
    outs = await asyncio.gather(*(policy.generate(rehearsal.opening(P[persona], t), None, sampling) for t in tasks))
    rows = []
    for task, generation in zip(tasks, outs):
        score, checks = P[persona].score(generation.text, task)
        rows.append({"weights": tag, "task_id": task.id, "score": score, "checks": checks, "reply": generation.text})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", choices=METHODS, required=True)
    parser.add_argument("--persona", choices=EVERYONE, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="the cell's launcher overrides (repeatable), e.g. policy.dtype=float32: the "
                             "replies are only the cell's when its model computes as it did")
    args = parser.parse_args()

    from clawgym.rl.launch.build import build_stack

    with tempfile.TemporaryDirectory() as out:
        stack = build_stack(config_for(args.method, args.seed, 16, Path(out), sets=tuple(args.sets)))
        before = asyncio.run(replies(stack.policy, args.persona, "before"))
        stack.trainer.load_checkpoint(args.checkpoint)
        asyncio.run(stack.policy.update_weights(stack.trainer.export_weights()))
        after = asyncio.run(replies(stack.policy, args.persona, "after"))
    sets = {"sets": args.sets} if args.sets else {}
    for row in [r for pair in zip(before, after) for r in pair]:
        # "metrics": the persona checks' version the scores and checks were taken with (lines without it: 2)
        print(json.dumps({"method": args.method, "persona": args.persona, "seed": args.seed, **sets,
                          "metrics": METRICS, **row}))
    mean = [sum(r["score"] for r in rows) / len(rows) for rows in (before, after)]
    print(f"held-out score {mean[0]:.3f} -> {mean[1]:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
