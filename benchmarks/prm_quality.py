"""Does the model as PRM say anything a GRPO trainer can use on BFCL-v0? Votes against the outcome, per group.

The agentic table's ``outcome_prm`` cells on BFCL-v0 use the policy itself as a process reward model: one
vote (``judge.votes=1``, 256 tokens, temperature 0.6) on each call, added to the outcome as r = R + 0.5 x
vote and normalised within the group. This plays the same kind of groups the small budget trains on
(``--tasks`` train-split tasks, ``--group`` calls each, sampled at temperature 1.0), judges every call as
the cell does, and prints:

- how many votes are valid under the strict reading (a ``\\boxed{}`` vote only) and under the PRM's reading
  (:func:`clawgym.rl.judge.parse_verdict`: also a bare ``1`` or the prompt's ``(a)``/``(b)``/``(c)`` label);
- how the votes split on right and wrong calls, and how often a nonzero vote agrees with the outcome;
- the groups whose outcomes are all equal (GRPO learns nothing from them) and how many of those the PRM
  separates: the only place it could add to the outcome, and only usefully when its votes follow quality.

    .venv/bin/python benchmarks/prm_quality.py                     # 16 tasks x 4 calls, qwen2.5-coder-0.5b
    .venv/bin/python benchmarks/prm_quality.py --judge-model qwen2.5-coder-1.5b   # a bigger PRM, same calls
    .venv/bin/python benchmarks/prm_quality.py --markdown docs/results/prm_quality.md   # the page; runs nothing

Each run appends a row to ``benchmarks/results/prm_quality.jsonl`` with what it ran with (models, tasks, group,
seed, guide, how the judge was shown the call, the CPU); ``--table`` prints the table of the rows and
``--markdown PATH`` writes the generated results page from them, reading the file only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentic_learning import BFCL_CATEGORIES, bfcl_split, interleave  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "prm_quality.jsonl"
PAGE = Path("docs/results/prm_quality.md")
# How the judge sees the call (``call_shown`` in a row): "tool_calls", the call as the env read it, a tool_calls
# entry, as the rollout runner records it; rows of "text" showed the message's text as the model wrote it.
CALL_SHOWN = "tool_calls"


def train_tasks(count: int) -> list[str]:
    """The first ``count`` train-split BFCL-v0 tasks, round-robin over the categories (a fixed list)."""
    from clawgym.envs.toolcall.bfcl_data import bfcl_tasks

    by_category: dict[str, list[str]] = {}
    for task in bfcl_tasks(list(BFCL_CATEGORIES)):
        if bfcl_split(task.id) == "train":
            by_category.setdefault(task.data["category"], []).append(task.id)
    return interleave([by_category.get(c, []) for c in BFCL_CATEGORIES])[:count]


async def play(policy, task_id: str, seed: int, sampling) -> tuple:  # noqa: ANN001
    """One sampled call on ``task_id``: (the Turn the judge reads, the outcome reward)."""
    import gymnasium as gym

    from clawgym.core.env import recorded_action
    from clawgym.rl.types import Turn

    env = gym.make("clawgym/BFCL-v0", category=list(BFCL_CATEGORIES))
    try:
        observation, info = env.reset(seed=seed, options={"task_id": task_id})
        generation = await policy.generate([dict(m) for m in observation], env.unwrapped.tools, sampling)
        action = generation.message or generation.text
        message = recorded_action(action, info)
        next_state, reward, terminated, truncated, step_info = env.step(action)
    finally:
        env.close()
    turn = Turn(episode_id=f"{task_id}/{seed}", turn_index=0, context=list(observation), action=message,
                next_state=list(next_state), env_id="clawgym/BFCL-v0", task_id=task_id, env_reward=reward,
                terminated=terminated, truncated=truncated, info=step_info)
    return turn, float(reward)


def summarise(reading: str, groups: list[list[tuple[float, int | None]]]) -> dict:
    """Counts for one reading of the votes; ``groups``: per task, (outcome, vote) of each call."""
    calls = [call for group in groups for call in group]
    valid = [(r, v) for r, v in calls if v is not None]
    nonzero = [(r, v) for r, v in valid if v != 0]
    agree = sum((v > 0) == (r > 0) for r, v in nonzero)
    tied = [g for g in groups if len({r for r, _ in g}) == 1]
    separated = [g for g in tied if len({v or 0 for _, v in g}) > 1]
    return {
        "reading": reading, "calls": len(calls), "valid": len(valid),
        "right": {str(v): sum(1 for r, x in valid if r > 0 and x == v) for v in (1, 0, -1)},
        "wrong": {str(v): sum(1 for r, x in valid if r <= 0 and x == v) for v in (1, 0, -1)},
        "agree": agree, "nonzero": len(nonzero), "groups": len(groups), "tied_groups": len(tied),
        "tied_separated": len(separated),
    }


def yes_no_prompt(turn) -> list[dict]:  # noqa: ANN001
    """The call, its request and the functions on offer, asked as one Yes/No question (scored, not sampled)."""
    from clawgym.rl.judge import clip, render_message

    system = next((m.get("content") or "" for m in turn.context if m.get("role") == "system"), "")
    request = next((m.get("content") or "" for m in turn.context if m.get("role") == "user"), "")
    return [{"role": "system", "content": "You check one function call against a request."},
            {"role": "user", "content": f"Instructions and functions:\n{clip(system, 3000)}\n\nRequest:\n"
                                        f"{clip(request, 1500)}\n\nThe call:\n{render_message(turn.action, 1500)}\n\n"
                                        "Is this call right for the request (the right function, the right values, "
                                        "and a call was needed at all)? Answer Yes or No."}]


def scored_summary(groups: list[list[tuple[float, float]]]) -> dict:
    """How well a margin (log p(Yes) - log p(No)) ranks right calls above wrong ones: over all calls, and
    within the groups that hold both (the pairs GRPO compares)."""
    def pairs(calls: list[tuple[float, float]]) -> list[float]:  # right above wrong: 1, a tie 0.5
        return [(a > b) + 0.5 * (a == b) for ra, a in calls if ra > 0 for rb, b in calls if rb <= 0]

    overall = pairs([call for group in groups for call in group])
    within = [p for group in groups for p in pairs(group)]
    return {"auc": sum(overall) / max(len(overall), 1), "within_group_auc": sum(within) / max(len(within), 1),
            "within_pairs": len(within)}


def templates_with_guide(guide: Path | None):  # noqa: ANN201
    """The shipped judge prompts, with ``guide`` as the tool-call setting's guide when given."""
    import shutil
    import tempfile

    from clawgym.rl.judge import PROMPT_DIR, PromptTemplates

    if guide is None:
        return PromptTemplates()
    directory = Path(tempfile.mkdtemp(prefix="prm-prompts-"))
    shutil.copytree(PROMPT_DIR, directory, dirs_exist_ok=True)
    shutil.copy(guide, directory / "guide.toolcall.txt")
    return PromptTemplates(directory)


async def measure(model: str, judge_model: str, tasks: int, group: int, seed: int,
                  guide: Path | None = None) -> tuple[list[dict], dict]:
    import torch

    from clawgym.core.policy import SamplingParams
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.scoring import label_margins
    from clawgym.rl.judge import PRMJudge, parse_boxed, parse_verdict

    torch.manual_seed(seed)
    policy = HFPolicy.from_pretrained(model)
    ids = train_tasks(tasks)
    sampling = SamplingParams(temperature=1.0, max_tokens=256)
    started = time.perf_counter()
    played = await asyncio.gather(*(play(policy, task_id, seed * 1000 + k, sampling)
                                    for task_id in ids for k in range(group)))
    rollout_s = time.perf_counter() - started
    judge_policy = policy if judge_model == model else HFPolicy.from_pretrained(judge_model)
    judge = PRMJudge(judge_policy, m=1, setting="toolcall", max_retries=0, templates=templates_with_guide(guide),
                     sampling=SamplingParams(temperature=0.6, max_tokens=256, seed=seed))
    started = time.perf_counter()
    results = await asyncio.gather(*(judge.judge(turn) for turn, _ in played))
    judge_s = time.perf_counter() - started
    raws = [result.raw[0] for result in results]
    rows = []
    for reading, parse in (("boxed only", parse_boxed), ("parse_verdict", parse_verdict)):
        votes = [parse(raw) for raw in raws]
        groups = [[(played[i][1], votes[i]) for i in range(t * group, (t + 1) * group)] for t in range(len(ids))]
        rows.append(summarise(reading, groups))
    margins = await asyncio.to_thread(label_margins, judge_policy, [yes_no_prompt(turn) for turn, _ in played],
                                      ("Yes", "No"))
    scored = scored_summary([[(played[i][1], margins[i]) for i in range(t * group, (t + 1) * group)]
                             for t in range(len(ids))])
    timing = {"rollout_s": round(rollout_s, 1), "judge_s": round(judge_s, 1), "scored": scored,
              "examples": [{"task": played[i][0].task_id, "reward": played[i][1], "raw": raws[i][:160]}
                           for i in range(0, len(played), max(1, len(played) // 6))]}
    return rows, timing


def read_rows(path: Path = RESULTS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def prm_name(row: dict) -> str:
    name = row["judge_model"] + (" (the policy itself)" if row["judge_model"] == row["model"] else "")
    return name + (f", guide `{row['guide']}`" if row.get("guide") else "")


def table(rows: list[dict]) -> str:
    """One line per row: valid votes under each reading, the votes on right and wrong calls, the tied groups
    separated, and the scored Yes/No question's AUC (over all calls; within the groups holding both)."""
    lines = ["| PRM | policy | calls | valid votes: box only → read | right calls +1 / 0 / −1 "
             "| wrong calls +1 / 0 / −1 | equal-outcome groups separated | scored Yes/No: AUC, within groups "
             "| the call shown as | votes (s) | ran on |", "|---|---|---:|---|---|---|---|---|---|---:|---|"]
    for row in rows:
        boxed, read = (next(r for r in row["rows"] if r["reading"] == name) for name in ("boxed only", "parse_verdict"))
        votes = [" / ".join(str(read[side][v]) for v in ("1", "0", "-1")) for side in ("right", "wrong")]
        scored = row.get("scored")
        auc = (f"{scored['auc']:.2f}, {scored['within_group_auc']:.2f} ({scored['within_pairs']} pairs)"
               if scored else "–")
        lines.append(f"| {prm_name(row)} | {row['model']} | {read['calls']} ({row['tasks']} tasks x {row['group']}) | "
                     f"{boxed['valid']} → {read['valid']} | {votes[0]} | {votes[1]} | "
                     f"{read['tied_separated']} of {read['tied_groups']} | {auc} | {row['call_shown']} | "
                     f"{row['judge_s']:.0f} | {row.get('host', 'not recorded')} |")
    return "\n".join(lines)


def markdown(path: Path = RESULTS) -> str:
    """docs/results/prm_quality.md: generated from the results file, never edited by hand."""
    rows = read_rows(path)
    hosts = sorted({row.get("host", "not recorded") for row in rows})
    return "\n".join([
        "# The model as PRM on BFCL-v0", "",
        f"Generated by `benchmarks/prm_quality.py --markdown {PAGE}` from `benchmarks/results/{RESULTS.name}`; do not "
        "edit by hand.", "",
        "The calls: the policy samples `group` calls (temperature 1.0, 256 tokens) on each of `tasks` BFCL-v0 train "
        "tasks; the PRM casts one vote on each (temperature 0.6, 256 tokens), as the `outcome_prm` cells of the "
        "agentic table do. `box only`: votes in a `\\boxed{}`; `read`: the PRM's reading (`parse_verdict`: also a "
        "bare `1` or the prompt's class label). Equal-outcome groups are the groups GRPO learns nothing from; a PRM "
        "can only add where it separates them. The scored question asks the PRM model once, `log p(Yes) − log p(No)` "
        "on \"is this call right?\" (no sampling). `the call shown as`: `text`, the message's text as the model wrote "
        "it; `tool_calls`, the call as the env read it.", "",
        f"Hardware (each row's `host`): {'; '.join(hosts)}; one job at a time.", "",
        table(rows), "",
        "    .venv/bin/python benchmarks/prm_quality.py                                        # the cells' PRM",
        "    .venv/bin/python benchmarks/prm_quality.py --judge-model qwen2.5-coder-1.5b",
        "    .venv/bin/python benchmarks/prm_quality.py --judge-model qwen2.5-coder-1.5b --guide "
        "benchmarks/prompts/prm_guide_bfcl.txt", ""])


def host() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="the policy and its PRM (the small budget's)")
    parser.add_argument("--judge-model", default=None, help="the PRM (default: the policy, as the cells use)")
    parser.add_argument("--guide", type=Path, default=None,
                        help="a file to use as the tool-call guide of the PRM prompt (default: the shipped one)")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table", action="store_true", help="only print the table of the results file's rows")
    parser.add_argument("--markdown", type=Path, metavar="PATH", help=f"only write the results page ({PAGE})")
    args = parser.parse_args()
    if args.table:
        print(table(read_rows()))
        return 0
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown())
        return 0
    judge_model = args.judge_model or args.model
    rows, timing = asyncio.run(measure(args.model, judge_model, args.tasks, args.group, args.seed, args.guide))
    print(f"PRM votes on BFCL-v0 train calls: {args.model} as policy, {judge_model} as PRM"
          f"{f' (guide {args.guide})' if args.guide else ''}, {args.tasks} tasks x {args.group} calls (T 1.0), "
          f"one vote each (T 0.6, 256 tokens); rollouts {timing['rollout_s']} s, votes {timing['judge_s']} s")
    print(f"{'reading':<14} {'valid':>9} {'right:+1/0/-1':>14} {'wrong:+1/0/-1':>14} {'agrees':>9} "
          f"{'tied groups':>11} {'separated':>9}")
    for r in rows:
        right = "/".join(str(r["right"][v]) for v in ("1", "0", "-1"))
        wrong = "/".join(str(r["wrong"][v]) for v in ("1", "0", "-1"))
        print(f"{r['reading']:<14} {r['valid']:>4}/{r['calls']:<4} {right:>14} {wrong:>14} "
              f"{r['agree']:>4}/{r['nonzero']:<4} {r['tied_groups']:>5}/{r['groups']:<5} {r['tied_separated']:>9}")
    scored = timing["scored"]
    print(f"scored Yes/No (log p(Yes) - log p(No), no sampling): AUC right over wrong {scored['auc']:.2f}; "
          f"within the groups holding both, {scored['within_group_auc']:.2f} over {scored['within_pairs']} pairs")
    for example in timing["examples"]:
        print(f"  reward {example['reward']:.0f}  {example['task']:<24} {json.dumps(example['raw'])}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as out:
        out.write(json.dumps({"model": args.model, "judge_model": judge_model, "tasks": args.tasks,
                              "group": args.group, "seed": args.seed, "guide": str(args.guide or ""),
                              "call_shown": CALL_SHOWN, "host": host(), "rows": rows, **timing}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
