"""Carry a void method-table row over to the current persona checks when nothing they decided changed.

A change to the persona checks voids every row of the personas it touches (they leave the results file for
``benchmarks/results/archive/learning_from_conversation.jsonl``, ``learning_from_conversation.py --archive``),
for two reasons: the held-out replies were scored with the old checks, and the scripted person voiced the old
checks' verdicts while the cell trained. Where the cell's run directory is still on disk, both can be settled
without training again:

1. replay: every served training reply goes through the current checks, and what the scripted person would
   say now is compared with what they said (``turns.jsonl``); one difference and the row stays void (run the
   cell again), since the training itself would have been another;
2. rescore: the held-out tasks are scored again with the current checks, before (the initial weights) and
   after (the run's last checkpoint, which must be the row's last step).

The row is appended to the results file with ``metrics`` set to the current version and ``rescored`` saying
what was replayed; the old row stays in the archive. Judge-only rows with the scripted person only: an oracle
row trained on the checks themselves, and a role-played person's words cannot be replayed.

    .venv/bin/python benchmarks/rescore_cell.py \\
        "runs/lfc/qwen2.5-coder-0.5b-student-hindsight_hybrid@T0.7_voice_all[policy.dtype_float32]...-0"
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

import learning_from_conversation as lfc  # noqa: E402


class NotCarried(Exception):
    """The row cannot be carried over: why, in words for the person running it."""


def void_row_of(archive: Path, run: Path) -> dict:
    """The latest archived row whose run directory is ``run``, scored with checks older than the current ones."""
    mine = [r for r in lfc.all_rows(archive)
            if lfc.run_dir(r["model"], r["persona"], lfc.label(r), r["seed"]).resolve() == run.resolve()]
    if not mine:
        raise NotCarried(f"no row of {archive} was run in {run}")
    row = mine[-1]
    if row.get("metrics", 1) >= lfc.METRICS:
        raise NotCarried(f"the last row run in {run} is already scored with the current checks")
    if row["method"] not in lfc.JUDGE_ONLY or row.get("user_model"):
        raise NotCarried("only judge-only rows with the scripted person can be replayed; run the cell again")
    return row


def replay(turns: Path, persona: str, voice: str) -> tuple[int, list[str]]:
    """What the scripted person said after each served reply against what they would say with the current checks.
    Returns the number of next states replayed and a line for each that differs."""
    from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks

    person = PERSONAS[persona]
    task_of = {person.opener(t): t for t in bundled_tasks() if t.data["persona"] == persona}
    served, said = {}, {}
    for line in turns.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "turn":
            served[event["id"].removeprefix("turn:")] = event["turn"]
        elif event["event"] == "next_state":
            said[event["turn_id"]] = event["messages"][-1]["content"]
    differs = []
    for turn_id, message in said.items():
        turn = served.get(turn_id)
        opener = next((m["content"] for m in turn["context"] if m["role"] == "user"), None) if turn else None
        if opener not in task_of:
            differs.append(f"turn {turn_id}: not a conversation of the {persona} persona's tasks in this log")
            continue
        reply = turn["action"]["content"] or ""
        now = person.feedback(reply, task_of[opener], voice)[0]
        if now != message:
            differs.append(f"turn {turn_id}: said {message!r}, would now say {now!r}, to {reply[:80]!r}")
    return len(said), differs


def held_out_scores(row: dict, checkpoint: Path) -> dict:
    """The held-out scores and check rates with the current checks, before and after (the run's checkpoint)."""
    from clawgym.rl.launch.build import build_stack
    from clawgym.serve import rehearsal

    tasks = rehearsal.persona_tasks(row["persona"], "test")[:row.get("eval_tasks")]

    async def before_and_after(stack) -> dict:  # noqa: ANN001
        try:
            before, checks_before = await rehearsal.score_checks(stack.policy, tasks, max_tokens=lfc.MAX_TOKENS)
            stack.trainer.load_checkpoint(checkpoint)
            if stack.trainer.step != row["steps"]:
                raise NotCarried(f"the checkpoint is step {stack.trainer.step}, the row's last step {row['steps']}")
            await stack.policy.update_weights(stack.trainer.export_weights())
            after, checks_after = await rehearsal.score_checks(stack.policy, tasks, max_tokens=lfc.MAX_TOKENS)
        finally:
            await stack.policy.close()
        return {"before": before, "checks_before": checks_before, "after": after, "checks_after": checks_after}

    with tempfile.TemporaryDirectory() as out:
        config = lfc.config_for(row["method"], row["seed"], row["steps_budget"], Path(out),
                                row.get("temperature", 1.0), tuple(row.get("sets", ())), row["model"])
        return asyncio.run(before_and_after(build_stack(config)))


def carry_over(run: Path, results: Path = lfc.RESULTS, archive: Path | None = None) -> dict:
    """Replay, rescore and append the row (from ``archive``, by default the results file's) to ``results`` with
    the current checks; raises :class:`NotCarried` and appends nothing when the training would have differed."""
    row = void_row_of(archive or results.parent / "archive" / results.name, run)
    replayed, differs = replay(run / "turns.jsonl", row["persona"], row.get("user_voice", "first"))
    if differs:
        raise NotCarried(f"{len(differs)} of {replayed} next states differ with the current checks; run the cell "
                         "again:\n" + "\n".join(differs[:5]))
    # earlier steps' weights are gone: no curve to rescore; the archive's reason is not the carried row's
    carried = {k: v for k, v in row.items() if k not in ("curve", "archived")}
    carried.update(held_out_scores(row, run / "checkpoint"), metrics=lfc.METRICS,
                   rescored={"from_metrics": row.get("metrics", 1), "next_states_replayed": replayed,
                             "curve_dropped": "curve" in row, "host": lfc.host()})
    with results.open("a") as f:
        f.write(json.dumps(carried) + "\n")
    return carried


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the cell's run directory (runs/lfc/<model>-<persona>-<cell>-<seed>)")
    parser.add_argument("--results", type=Path, default=lfc.RESULTS, help="where the carried row is appended")
    parser.add_argument("--archive", type=Path, default=None,
                        help="where the void row is read (default: the results file's archive, archive/NAME)")
    args = parser.parse_args()
    try:
        row = carry_over(args.run, args.results, args.archive)
    except NotCarried as why:
        print(f"not carried over: {why}", file=sys.stderr)
        return 1
    print(json.dumps(row))
    print(f"{row['persona']} x {lfc.label(row)} x seed {row['seed']}: {row['before']:.3f} -> {row['after']:.3f} "
          f"with the checks' version {lfc.METRICS} ({row['rescored']['next_states_replayed']} next states replayed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
