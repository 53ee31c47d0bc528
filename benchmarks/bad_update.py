"""A bad update against the publish gate and the alarms: does the person keep the weights that served them well?

One invocation runs one arm x seed through the deployed gateway (:func:`clawgym.serve.rehearsal.rehearse`:
simulated people talk to the served policy; the chat launcher's recipe, ``hindsight_hybrid``, the scripted
person naming every unmet wish, the publish gate on, ``serve.gate.enabled=true``) and appends one JSON row to
``benchmarks/results/bad_update.jsonl``:

- ``shipped``: the chat launcher's trainer as shipped;
- ``harmful``: the same with ``trainer.lr`` 100x the shipped one, a deliberately harmful update.

The row holds, per train step: whether it published, the gate's two scores (the new weights' and the serving
weights' on the people's held-back requests), the alarms that fired, the step's and the gate's wall time; and
for the run: the persona's hidden checks on held-out tasks (greedy) before and after (the weights that serve
at the end), the version serving at the end, whether training ended paused and why. ``--markdown`` writes the
generated page (docs/results/bad_update.md) from the rows and runs nothing.

    .venv/bin/python benchmarks/bad_update.py --arm harmful --seed 0
    .venv/bin/python benchmarks/bad_update.py --arm shipped --seed 0
    .venv/bin/python benchmarks/bad_update.py --arm shipped --seed 0 --set serve.gate.draft=false  # decode every token
    .venv/bin/python benchmarks/bad_update.py --markdown docs/results/bad_update.md
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_from_conversation import MAX_TOKENS, chat_config, config_for, git_commit, host  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bad_update.jsonl"
PAGE = Path("docs/results/bad_update.md")
ARMS = ("shipped", "harmful")
HARMFUL_LR_FACTOR = 100.0
METHOD = "hindsight_hybrid"  # the chat launcher's method


def arm_sets(arm: str, extra: tuple[str, ...] = ()) -> list[str]:
    sets = ["serve.gate.enabled=true"]
    if arm == "harmful":
        sets.append(f"trainer.lr={chat_config().trainer.lr * HARMFUL_LR_FACTOR:g}")
    return sets + list(extra)


def step_view(record: dict) -> dict:
    gate = record.get("gate") or {}
    return {"step": record["step"], "published": record.get("published", True),
            "candidate": gate.get("candidate"), "serving": gate.get("serving"), "reason": gate.get("reason"),
            "alarms": [a["signal"] for a in record.get("alarms", [])], "signals": record.get("signals", {}),
            "seconds": record.get("seconds"), "gate_seconds": gate.get("seconds"),
            "gate_decode_seconds": gate.get("decode_seconds"), "drafted": gate.get("drafted"),
            "policy_version": record.get("policy_version")}


async def run(arm: str, seed: int, persona: str, steps: int, eval_tasks: int, max_minutes: float,
              extra: tuple[str, ...] = ()) -> dict:
    from clawgym.envs.openclaw_chat.simulator import ScriptedUser
    from clawgym.serve import rehearsal

    out = Path("runs/bad_update") / f"{persona}-{arm}-{seed}"
    if out.exists():
        shutil.rmtree(out)
    sets = tuple(arm_sets(arm, extra))
    config = config_for(METHOD, seed, steps, out, temperature=0.7, sets=sets)
    started = time.perf_counter()
    result = await rehearsal.rehearse(config, persona=persona, steps=steps, eval_tasks=eval_tasks,
                                      max_tokens=MAX_TOKENS, max_minutes=max_minutes, simulator=ScriptedUser("all"))
    records = [json.loads(line) for line in (out / "train_steps.jsonl").read_text().splitlines() if line.strip()]
    state = json.loads((out / "training_state.json").read_text()) if (out / "training_state.json").exists() else {}
    views = [step_view(r) for r in records]
    gate_s = [v["gate_seconds"] for v in views if v["gate_seconds"]]
    step_s = [v["seconds"] for v in views if v["seconds"]]
    fired = collections.Counter(signal for v in views for signal in v["alarms"])
    return {"arm": arm, "seed": seed, "persona": persona, "method": METHOD, "sets": list(sets),
            "lr": config.trainer.lr, "model": config.policy.model, "steps_budget": steps, "steps": len(records),
            "published": sum(v["published"] for v in views), "refused": sum(not v["published"] for v in views),
            "alarms": dict(fired), "paused": bool(state.get("paused")), "paused_because": state.get("reason", ""),
            "served_version_end": views[-1]["policy_version"] if views else 0,
            "before": result.before, "after": result.after, "checks_before": result.checks_before,
            "checks_after": result.checks_after, "eval_tasks": eval_tasks,
            "gate_s_mean": round(sum(gate_s) / len(gate_s), 2) if gate_s else None,
            "step_s_mean": round(sum(step_s) / len(step_s), 2) if step_s else None,
            "gate_share": round(sum(gate_s) / sum(step_s), 3) if gate_s and step_s else None,
            "gate_draft": config.serve.gate.draft,
            "drafted_mean": _mean([v["drafted"] for v in views if v["drafted"] is not None]),
            "step_records": views, "conversations": result.conversations, "turns": result.turns,
            "wall_s": round(time.perf_counter() - started, 1), "host": host(), "commit": git_commit()}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def markdown(path: Path = RESULTS) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    lines = ["# A bad update against the publish gate", "",
             "Generated by `benchmarks/bad_update.py --markdown docs/results/bad_update.md` from",
             "`benchmarks/results/bad_update.jsonl`; do not edit by hand. Each row: the chat launcher's recipe",
             f"({METHOD}, the scripted person naming every unmet wish, the publish gate on) through the deployed",
             f"gateway; `harmful` trains at {HARMFUL_LR_FACTOR:g}x the shipped learning rate. *before* / *after*: the",
             "persona's hidden checks on held-out tasks, greedy, on the weights serving at the start and the end.",
             "*gate*: the gate's wall time as a share of the steps' wall time; *drafted*: the share of the new "
             "weights' replayed reply tokens taken from the serving weights' replies without a decoding step "
             "(`serve.gate.draft`, clawgym/inference/draft_replay.py; `off`: every token decoded).", "",
             "    .venv/bin/python benchmarks/bad_update.py --arm harmful --seed 0", "",
             "| arm | persona | seed | lr | steps | published | refused | alarms | paused at the end "
             "| serving at the end | before → after | gate s / step s (share) | drafted | wall | CPU | commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        alarms = ", ".join(f"{k} x{v}" for k, v in sorted(r["alarms"].items())) or "none"
        share = (f"{r['gate_s_mean']} / {r['step_s_mean']} ({r['gate_share']:.0%})"
                 if r.get("gate_share") is not None else "n/a")
        lines.append(f"| {r['arm']} | {r['persona']} | {r['seed']} | {r['lr']:g} | {r['steps']}/{r['steps_budget']} "
                     f"| {r['published']} | {r['refused']} | {alarms} | {'yes' if r['paused'] else 'no'} "
                     f"| v{r['served_version_end']} | {r['before']:.2f} → {r['after']:.2f} | {share} "
                     f"| {drafted(r)} "
                     f"| {r['wall_s'] / 60:.0f} min | {r['host']} | {r['commit']} |")
    lines += ["", "Each step of each row (the gate's scores: new weights / serving weights):", ""]
    for r in rows:
        steps = "; ".join(
            f"{v['step']}: {'published' if v['published'] else 'kept back'}"
            + (f" {v['candidate']:.2f}/{v['serving']:.2f}" if v["candidate"] is not None else f" ({v['reason']})")
            + (f" alarm {'+'.join(v['alarms'])}" if v["alarms"] else "") for v in r["step_records"])
        paused = f". Paused: {r['paused_because']}" if r["paused"] else ""
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(f"- {r['arm']} seed {r['seed']}: {steps}{paused}{note}")
    return "\n".join(lines) + "\n"


def drafted(row: dict) -> str:
    """The drafted share, ``off`` when every token was decoded (also the rows from before the gate drafted)."""
    return f"{row['drafted_mean']:.0%}" if row.get("gate_draft") and row.get("drafted_mean") is not None else "off"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arm", choices=ARMS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--persona", default="student")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--eval-tasks", type=int, default=8)
    parser.add_argument("--max-minutes", type=float, default=30.0)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override on top of the arm's (repeatable), e.g. serve.gate.draft=false")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--markdown", type=Path, help="write the generated results page and stop")
    args = parser.parse_args()
    if args.markdown:
        args.markdown.write_text(markdown(args.results))
        return 0
    if not args.arm:
        parser.error("--arm is needed (or --markdown)")
    row = asyncio.run(run(args.arm, args.seed, args.persona, args.steps, args.eval_tasks, args.max_minutes,
                          tuple(args.sets)))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k != "step_records"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
