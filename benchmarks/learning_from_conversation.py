"""The method table: does the agent learn a person's preferences from the conversation alone?

One invocation runs one persona x method x seed and appends a line to a JSONL file; the table is
printed from that file (``--table``), so the whole table is built over several runs and a cell
that is missing is shown as missing. Every method is scored the same way: the persona's hidden
checks on the greedy first reply to held-out tasks (the test split; training users bring the train
split), before and after the same budget of train steps.

- ``base``: the model as it is. ``prompting``: the persona's wishes written into the system prompt.
- ``oracle_grpo``: GRPO with the persona score as the reward (the offline env; not available live).
- ``binary`` / ``opd`` / ``hybrid`` / ``opd_topk``: the judge-only signal, through the deployed gateway, session
  tracker, turn log, judge stage and personal trainer (:mod:`clawgym.serve.rehearsal`); the judge is
  ``prob`` (label-token verdicts) and ``probhint`` (the user's correction as the hint).
- ``hindsight``: hindsight GRPO (:mod:`clawgym.personal.hindsight`): each judged turn and 3 sibling replies to
  the same prompt, scored by the rubric judge against the wishes the user's corrections left in the wish
  memory (the person's verdict counts half in their own reply's reward); also judge-only. ``hindsight_hybrid``:
  the same groups, every member also carrying the OPD term of a teacher reading the wishes (the chat launcher's
  method).

``--user-model qwen2.5-coder-1.5b`` lets that model play the person (:class:`RolePlayedUser`: it reads
the persona's description, never its checks, and decides what to thank and correct); such rows are
labelled ``method/user=<model>`` and shown apart. ``--user-voice all`` makes the scripted person list every
unmet wish at once instead of the first (rows ``method/voice=all``). The persona checks stay the metric.

    .venv/bin/python benchmarks/learning_from_conversation.py --persona teacher --method hybrid --seed 0
    .venv/bin/python benchmarks/learning_from_conversation.py --table
    .venv/bin/python benchmarks/learning_from_conversation.py --missing   # the commands of the cells not run yet
    .venv/bin/python benchmarks/learning_from_conversation.py --markdown docs/results/learning_from_conversation.md

``--markdown`` only reads the results file: it writes the generated results page (every model's table, every
row with its checks and the machine it ran on) and runs nothing. A row carries what it ran with (model, method,
overrides, OPD weight, answered siblings, the versions below, host); when the persona checks, the judge-only
recipe or a judge changes, the rows it makes stale leave the results file for the archive:

    .venv/bin/python benchmarks/learning_from_conversation.py --archive persona=ta --archive metrics=4 \
        --why "the TA's checks changed (version 5)"
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawgym.envs.openclaw_chat import people  # noqa: E402

METHODS = ("base", "prompting", "oracle_grpo", "binary", "opd", "hybrid", "opd_topk", "hindsight", "hindsight_hybrid")
UNTRAINED = ("base", "prompting")  # greedy scoring of untrained weights: one seed is the whole cell
SEEDS = (0, 1, 2)  # of every trained cell
PERSONAS = ("student", "teacher", "ta")  # the homework personas: the method table's first columns
PEOPLE = tuple(people.PEOPLE)  # the six people beyond homework: a column each once they have rows
EVERYONE = PERSONAS + PEOPLE
JUDGE_FOR = {"binary": ("grpo", "prob"), "opd": ("opd", "probhint"), "hybrid": ("hybrid", "prob,probhint"),
             "opd_topk": ("opd_topk", "probhint"),  # top-K distillation of the hinted teacher at every position
             "hindsight": ("grpo", "prob"),  # each turn a group of 4 replies scored by the rubric judge on the wishes
             # the same groups, and every member also distils the teacher (the initial weights) reading the wishes
             "hindsight_hybrid": ("hybrid", "prob,probhint")}
HINDSIGHT = ("hindsight", "hindsight_hybrid")
HINDSIGHT_K = 4
JUDGE_ONLY = tuple(JUDGE_FOR)
OPD_METHODS = tuple(m for m, (trainer_method, _) in JUDGE_FOR.items() if trainer_method != "grpo")
# Committed, not under runs/: the table is built over several runs, each possibly on a fresh machine.
RESULTS = Path(__file__).resolve().parent / "results" / "learning_from_conversation.jsonl"
ARCHIVE = RESULTS.parent / "archive" / RESULTS.name  # rows of earlier checks, recipes and judges (see below)
PAGE = Path("docs/results/learning_from_conversation.md")  # the generated results page (``--markdown``)
MAX_TOKENS = 128  # every reply (training conversations and held-out scoring): room for > 80 words, as in the demo
# Versions of what scores and trains a cell, written into every row it makes: the persona checks (the metric),
# the judge-only recipe of the personal trainer, the rubric judge of the hindsight groups and the wish extractor
# (what a role-played person's words become). RESULTS holds only rows the current versions would make as they
# are: a change to one of them bumps its number and moves the rows it makes stale to ARCHIVE (``--archive``),
# where git and the rows' own fields keep their history.
METRICS = 4
RECIPE = 3
RUBRIC = 5
WISHES = 2


def chat_config(overrides: list[str] | tuple[str, ...] = ()):  # noqa: ANN201
    """The chat launcher's config (what ``clawgym serve --config chat`` runs) with ``overrides`` applied."""
    from clawgym import launchers
    from clawgym.rl.launch import load_config

    return load_config(launchers.resolve("chat"), list(overrides))


def default_model() -> str:
    """The chat launcher's policy: what ``clawgym serve --config chat`` trains."""
    return chat_config().policy.model


def config_for(method: str, seed: int, steps: int, out: Path, temperature: float = 1.0,  # noqa: ANN201
               sets: tuple[str, ...] = (), model: str | None = None):
    extra = [f"policy.seed={seed}", f"loop.seed={seed}", f"loop.output_dir={out}", f"loop.steps={steps}",
             "serve.batch_size=8", "judge.model=policy", f"rollout.temperature={temperature}",
             # the method table measures the learning signal; the publish gate is measured by bad_update.py
             "serve.gate.enabled=false",
             *([f"policy.model={model}"] if model else [])]
    if method in JUDGE_FOR:
        trainer_method, judge = JUDGE_FOR[method]
        extra += [f"method={trainer_method}", f"judge.type={judge}"]
        # the chat launcher turns hindsight on; the other judge-only rows are the signal without it
        extra.append(f"serve.hindsight_k={HINDSIGHT_K if method in HINDSIGHT else 0}")
    elif method == "oracle_grpo":
        extra += ["method=grpo", "judge.type=none", "loop.batch_groups=2", "loop.buffer_groups=4",
                 "loop.eval_every=0", "rollout.workers=8", f"rollout.max_tokens={MAX_TOKENS}"]
    return chat_config([*extra, *sets])  # the ablation's overrides last


async def run_one(persona: str, method: str, seed: int, steps: int, eval_tasks: int, max_minutes: float,
                  temperature: float = 1.0, sets: tuple[str, ...] = (), model: str | None = None,
                  user_model: str | None = None, user_voice: str = "first", curve_every: int = 0) -> dict:
    from clawgym.envs.openclaw_chat.env import SYSTEM_PROMPT
    from clawgym.envs.openclaw_chat.people import EVERYONE as P
    from clawgym.serve import rehearsal

    out = run_dir(model or "default", persona, current_label(method, temperature, sets, user_model, user_voice), seed)
    if out.exists():  # a previous run of this cell: the gateway would resume its weights
        shutil.rmtree(out)
    held_out = rehearsal.persona_tasks(persona, "test")[:eval_tasks]
    config = config_for(method, seed, steps, out, temperature, sets, model)
    started = time.perf_counter()
    row = {"model": config.policy.model, "persona": persona, "method": method, "seed": seed,
           "steps_budget": steps, "metrics": METRICS, "eval_tasks": len(held_out), "max_tokens": MAX_TOKENS,
           "dtype": config.policy.dtype, "host": host(), "commit": git_commit()}
    if str(config.policy.device).startswith("cuda"):
        row["hardware"] = gpu_name()
    if temperature != 1.0:
        row["temperature"] = temperature  # training conversations sampled (and trained) at this temperature
    if sets:
        row["sets"] = list(sets)  # an ablation: launcher overrides on top of the method's recipe
    if method in JUDGE_ONLY:
        row.update(recipe=RECIPE, baseline=config.serve.baseline,
                   hint_format=config.trainer.hint_format, wishes=WISHES)
    if method in HINDSIGHT:
        row.update(rubric=RUBRIC, hindsight_answered=config.serve.hindsight_answered)
    if method in OPD_METHODS:
        row["w_opd"] = config.trainer.w_opd
    if method in UNTRAINED:
        from clawgym.inference.hf import HFPolicy

        policy = HFPolicy.from_pretrained(config.policy.model, seed=seed)
        system = SYSTEM_PROMPT if method == "base" else f"{SYSTEM_PROMPT}\nThe user's wishes: {P[persona].description}"
        score, checks = await rehearsal.score_checks(policy, held_out, system_prompt=system, max_tokens=MAX_TOKENS)
        await policy.close()
        row.update(before=score, after=score, steps=0, checks_before=checks, checks_after=checks)
    elif method == "oracle_grpo":
        import dataclasses

        from clawgym.rl.launch import build

        config.env.kwargs = {**config.env.kwargs, "personas": [persona]}
        parts = build(config)
        parts.loop.config = dataclasses.replace(parts.loop.config, eval_before=False, eval_after=False, plot=False,
                                                export_final=False)
        row["before"], row["checks_before"] = await rehearsal.score_checks(
            parts.policy, held_out, max_tokens=MAX_TOKENS)
        result = await parts.loop.run()
        row["after"], row["checks_after"] = await rehearsal.score_checks(parts.policy, held_out, max_tokens=MAX_TOKENS)
        row.update(steps=result.steps, refused={k: v for k, v in result.counters.items() if k.startswith("refused/")})
        await parts.close()
    else:
        # a judge-only run trains only when verdicts disagree or a hint comes: the time cap ends a run
        # whose signal never arrives (binary with every verdict -1 makes no step at all)
        simulator = None
        if user_voice != "first":  # the scripted person lists every unmet wish; its own rows
            from clawgym.envs.openclaw_chat.simulator import ScriptedUser

            simulator = ScriptedUser(user_voice)
            row["user_voice"] = user_voice
        if user_model:  # a language model plays the person (OpenClaw-RL's setup); its own rows
            from clawgym.envs.openclaw_chat.simulator import RolePlayedUser
            from clawgym.inference.hf import HFPolicy

            simulator = RolePlayedUser(HFPolicy.from_pretrained(user_model, seed=seed, name=f"user:{user_model}"))
            row["user_model"] = user_model
        try:
            result = await rehearsal.rehearse(config, persona=persona, steps=steps, eval_tasks=eval_tasks,
                                              max_tokens=MAX_TOKENS, max_minutes=max_minutes, simulator=simulator,
                                              curve_every=curve_every)
        finally:
            if user_model:
                await simulator.policy.close()
        row.update(max_minutes=max_minutes, cap_ends_training=max_minutes is not None,
                   conversations=result.conversations, before=result.before,
                   after=result.after, steps=result.steps, refused=result.refused, turns=result.turns,
                   judged=result.judged, judge_lag_s=result.judge_lag_s,
                   trainer_wait_judge_frac=result.trainer_wait_judge_frac, checks_before=result.checks_before,
                   checks_after=result.checks_after)
        if result.curve:  # the held-out score at earlier steps of the same run (``--curve-every``)
            row["curve"] = result.curve
    row["wall_s"] = time.perf_counter() - started
    return row


def short_of_budget(row: dict) -> str:
    """Why a cell stopped short of its steps: a judge-only run's ``--max-minutes``, or the training cap an
    oracle row was given with ``--set loop.max_minutes=...``. A judge-only row without ``cap_ends_training``
    predates the cap stopping the trainer: its conversations stopped at the cap, the steps already due ran on."""
    caps = [s.split("=", 1)[1] for s in row.get("sets", []) if s.startswith("loop.max_minutes=")]
    cap = row.get("max_minutes") or (caps[-1] if caps else None)
    said = f"within the {cap}-minute cap" if cap is not None else "before the run ended"
    if row.get("max_minutes") and not row.get("cap_ends_training"):
        said = f"by the end of the run (conversations stopped at the {cap}-minute cap, steps due then trained past it)"
    if "conversations" in row:
        said += f", {row['conversations']} conversations"
    return said


def label(row: dict) -> str:
    """A row's name: its method and what it ran with beyond the benchmark's defaults, read off the row itself.
    Another sampling temperature than 1.0, a model playing the person, the scripted person voicing every unmet
    wish and every launcher override (``--set``) make rows of their own, e.g. ``hybrid@T0.6[trainer.w_opd=0.3]``
    or ``opd[trainer.lr=3e-05][trainer.w_opd=0.3]``; the answered siblings and the OPD weight a row trained
    with come last, whether they came from ``--set`` or from the launcher, so a launcher change renames nothing
    and never merges rows that trained differently."""
    name = row["method"] if row.get("temperature", 1.0) == 1.0 else f"{row['method']}@T{row['temperature']:g}"
    if row.get("user_model"):
        name += f"/user={row['user_model']}"
    if row.get("user_voice", "first") != "first":
        name += f"/voice={row['user_voice']}"
    sets = [s for s in row.get("sets", []) if not s.startswith(("serve.hindsight_answered=", "trainer.w_opd="))]
    answered = answered_siblings(row)
    if answered is not None:
        sets.append(f"serve.hindsight_answered={answered}")
    weight = opd_weight(row)
    if weight is not None:
        sets.append(f"trainer.w_opd={weight:g}")
    return name + "".join(f"[{s}]" for s in sets)


def recipe_value(row: dict, key: str, field: str, cast: type) -> float:
    """What a row trained with for launcher key ``key``: its last ``--set`` of it, else what it recorded in
    ``field`` (every row of a method that has the key records it)."""
    for override in reversed(row.get("sets", [])):
        if override.startswith(f"{key}="):
            return cast(override.split("=", 1)[1])
    return cast(row[field])


def opd_weight(row: dict) -> float | None:
    """The weight a row's OPD term was trained at (None: the method has no OPD term)."""
    return recipe_value(row, "trainer.w_opd", "w_opd", float) if row["method"] in OPD_METHODS else None


def answered_siblings(row: dict) -> int | None:
    """The answered siblings of each of a row's hindsight groups (None: the method has no groups)."""
    if row["method"] not in HINDSIGHT:
        return None
    return recipe_value(row, "serve.hindsight_answered", "hindsight_answered", int)


def current_label(method: str, temperature: float, sets: list[str] | tuple[str, ...], user_model: str | None,
                  user_voice: str) -> str:
    """The label of a cell run now: what the chat launcher and ``sets`` give it (the OPD weight, the answered
    siblings)."""
    config = chat_config(sets)
    return label({"method": method, "temperature": temperature, "sets": list(sets), "user_model": user_model,
                  "user_voice": user_voice, "w_opd": config.trainer.w_opd,
                  "hindsight_answered": config.serve.hindsight_answered})


def grid() -> list[str]:
    """The table's first rows: each method as a cell run now with no option runs it (the launcher's recipe)."""
    return [current_label(method, 1.0, [], None, "first") for method in METHODS]


def run_dir(model: str, persona: str, cell: str, seed: int) -> Path:
    """Where a cell's run keeps its turn log and last checkpoint (``runs/`` is not committed)."""
    return Path("runs/lfc") / f"{model}-{persona}-{cell.replace('=', '_').replace('/', '_')}-{seed}"


def all_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def read_rows(path: Path, model: str) -> list[dict]:
    """``model``'s rows: every row of the results file is current (stale ones are moved to the archive)."""
    return [r for r in all_rows(path) if r["model"] == model]


def models_in(path: Path) -> list[str]:
    """The models with rows, the chat launcher's first."""
    found = list(dict.fromkeys(r["model"] for r in all_rows(path)))
    default = default_model()
    return sorted(found, key=lambda m: (m != default, m))


def archive_rows(where: dict[str, str], why: str, results: Path = RESULTS, archive: Path = ARCHIVE) -> int:
    """Move every row of ``results`` whose fields equal ``where`` (as strings: ``{"persona": "ta", "metrics":
    "3"}``) to ``archive``, each with ``"archived": why``; returns how many moved. What a change to the checks,
    the recipe or a judge does to the rows it makes stale."""
    if not where:
        raise ValueError("archive_rows needs at least one field to match")
    rows = all_rows(results)
    moved = [r for r in rows if all(str(r.get(key)) == value for key, value in where.items())]
    if moved:
        archive.parent.mkdir(parents=True, exist_ok=True)
        with archive.open("a") as f:
            f.write("".join(json.dumps({**r, "archived": why}) + "\n" for r in moved))
        results.write_text("".join(json.dumps(r) + "\n" for r in rows if r not in moved))
    return len(moved)


def seed_cell(rows: list[dict]) -> str:
    """One cell of a method table (also benchmarks/agentic_learning.py's), 24 wide: the held-out score
    after training, mean ± std over the rows (its seeds) [their count], and the mean gain after − before."""
    if not rows:
        return f"{'missing':>24}"
    after = [r["after"] for r in rows]
    gain = [r["after"] - r["before"] for r in rows]
    std = statistics.stdev(after) if len(after) > 1 else 0.0
    return (f"{statistics.mean(after):>8.2f} ± {std:.2f} [{len(rows)}] "
            f"{round(statistics.mean(gain), 2) + 0.0:+.2f}")  # + 0.0: never "-0.00"


def host() -> str:
    """The CPU a cell runs on, as its row records it: the same recipe makes more steps in its minutes on a
    faster CPU, so rows that ran on different machines are not the same measurement. (A GPU cell also
    records the GPU, ``hardware``, and says so in its label, ``[policy.device=cuda]``.)"""
    from clawgym.inference.catalog import cpu_has_native_bf16

    bf16 = "native bfloat16" if cpu_has_native_bf16() else "no native bfloat16"
    return f"{platform.machine()} {os.cpu_count()} cores, {bf16}"


def gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cuda (unavailable)"


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parents[1]).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def ran_on(row: dict) -> str:
    """Where a row ran: the GPU it records, else its CPU, else ``not recorded`` (rows from before rows said)."""
    return row.get("hardware") or row.get("host") or "not recorded"


def hosts_line(rows: list[dict]) -> str:
    """Where the table's rows ran, with how many rows each."""
    counts = collections.Counter(ran_on(r) for r in rows)
    return "ran on: " + "; ".join(f"{where} ({n} row{'s' * (n != 1)})" for where, n in sorted(counts.items()))


def curves(path: Path, model: str) -> str:
    """The rows that scored their earlier steps too (``--curve-every``): the held-out score at step 0, at
    each kept step and at the last, and each check's rate at those steps. Does a gain build, hold or fade?"""
    lines = []
    for row in (r for r in read_rows(path, model) if r.get("curve")):
        points = [(0, row["before"], row["checks_before"]),
                  *((int(p["step"]), p["score"], p["checks"]) for p in row["curve"]),
                  (row["steps"], row["after"], row["checks_after"])]
        lines.append(f"{row['persona']} x {label(row)} x seed {row['seed']} ({row.get('host', 'host not recorded')}):")
        lines.append(f"  {'step':<22}" + "".join(f"{step:>7}" for step, _, _ in points))
        lines.append(f"  {'score':<22}" + "".join(f"{score:>7.2f}" for _, score, _ in points))
        for check in row["checks_after"]:
            lines.append(f"  {check:<22}" + "".join(f"{checks[check]:>7.2f}" for _, _, checks in points))
    return "\n".join(lines) or "no row has a curve (run a cell with --curve-every N)"


def table(path: Path, model: str) -> str:
    rows = read_rows(path, model)
    first = grid()
    names = first + sorted({label(r) for r in rows} - set(first))
    width = max(12, *(len(n) + 1 for n in names))
    columns = PERSONAS + tuple(p for p in PEOPLE if any(r["persona"] == p for r in rows))
    lines = [f"{model}:", f"{'method':<{width}}" + "".join(f"{p:>24}" for p in columns)
             + "   (held-out score after, mean ± std over seeds [n], after − before)"]
    for method in names:
        cells = [seed_cell([r for r in rows if label(r) == method and r["persona"] == persona]) for persona in columns]
        lines.append(f"{method:<{width}}" + "".join(cells))
    transcribed = [r for r in rows if r.get("transcribed")]
    if transcribed:
        lines.append(f"({len(transcribed)} rows transcribed from an earlier README: scores rounded to two decimals; "
                     "their raw rows, with step and dropped-turn counts, were not kept)")
    for r in rows:
        if r["method"] not in UNTRAINED and r["steps"] is not None and r["steps"] < r["steps_budget"]:
            lines.append(f"({r['persona']} x {label(r)} x seed {r['seed']}: {r['steps']} of {r['steps_budget']} steps "
                         f"{short_of_budget(r)})")
    dropped = [r for r in rows if r.get("refused")]
    if dropped:
        lines.append("turns not trained (summed over runs): " + json.dumps(
            {k: sum(r["refused"].get(k, 0) for r in dropped)
             for k in sorted({k for r in dropped for k in r["refused"]})}))
    if rows:
        lines.append(hosts_line(rows))
    return "\n".join(lines)


def checks_text(row: dict) -> str:
    """Each hidden check's held-out pass rate, before → after (only the after where it did not move)."""
    before, after = row.get("checks_before") or {}, row.get("checks_after") or {}
    return ", ".join(f"{check} {before[check]:.2f} → {rate:.2f}" if check in before and before[check] != rate
                     else f"{check} {rate:.2f}" for check, rate in after.items())


def rows_table(rows: list[dict]) -> str:
    """Every row of a model, one line each, in the order of the method table."""
    lines = ["| method | persona | seed | before → after | steps | minutes | ran on | checks (held-out pass rate) |",
             "|---|---|---:|---|---:|---:|---|---|"]
    order = {name: i for i, name in enumerate(grid())}
    for r in sorted(rows, key=lambda r: (order.get(label(r), len(order)), label(r), EVERYONE.index(r["persona"]),
                                         r["seed"])):
        steps = "" if r["method"] in UNTRAINED else f"{r['steps']} of {r['steps_budget']}" if r["steps"] is not None \
            else "not kept"
        minutes = f"{r['wall_s'] / 60:.1f}" if r.get("wall_s") else ""
        lines.append(f"| {label(r)} | {r['persona']} | {r['seed']} | {r['before']:.3f} → {r['after']:.3f} | {steps} | "
                     f"{minutes} | {ran_on(r)} | {checks_text(r)} |")
    return "\n".join(lines)


def markdown(path: Path = RESULTS) -> str:
    """docs/results/learning_from_conversation.md: generated from the results file, never edited by hand."""
    launcher = default_model()
    parts = [
        "# Learning from the conversation: the method table", "",
        f"Generated by `benchmarks/learning_from_conversation.py --markdown {PAGE}` from "
        f"`benchmarks/results/{RESULTS.name}`; do not edit by hand. Rows of earlier persona checks, recipes and "
        f"judges are in `benchmarks/results/archive/{ARCHIVE.name}`.", "",
        "A row is one persona x method x seed through the deployed stack (`clawgym/serve/rehearsal.py`): the held-out "
        "score is the share of the persona's hidden checks that the greedy first reply meets on each of the persona's "
        "held-out tasks (the test split; up to 128 tokens a reply), before and after the cell's training (16 steps "
        "of 8 turns, or what its cap let run). The judge-only methods learn from the simulated person's next "
        "messages alone; `oracle_grpo` trains on the hidden checks themselves. A row's name is its method and "
        "what it ran with beyond the benchmark's defaults: `@T0.7` the temperature of the training conversations "
        "(default 1.0), `/voice=all` the scripted person voicing every unmet wish at once, `/user=MODEL` a model "
        "playing the person, `[key=value]` a launcher override (`--set`), then the answered siblings and the OPD "
        "weight it trained with. The first rows are each method as the chat launcher runs it now; a cell not run "
        "shows `missing`. Every row records its CPU (`host`) or GPU (`hardware`); rows from before rows recorded "
        "it say `not recorded`. Compare rows that ran on one kind of machine: a faster one fits more steps in a "
        "cell's cap.", ""]
    for model in models_in(path):
        rows = read_rows(path, model)
        flag = "" if model == launcher else f" --model {model}"
        parts += [f"## {model}" + (" (the chat launcher's policy)" if model == launcher else ""), "",
                  f"Hardware (each row's `host` or `hardware`): {hosts_line(rows).removeprefix('ran on: ')}.", "",
                  "```", table(path, model), "```", "",
                  f"    .venv/bin/python benchmarks/learning_from_conversation.py{flag} --table", "",
                  "### Every row", "", rows_table(rows), ""]
        if any(r.get("curve") for r in rows):
            parts += ["### Curves", "",
                      "The rows that also scored the held-out tasks at earlier steps of the same run "
                      "(`--curve-every`):",
                      "", "```", curves(path, model), "```", ""]
    command = "    .venv/bin/python benchmarks/learning_from_conversation.py"
    parts += ["## Commands", "",
              f"{command} --persona teacher --method hindsight_hybrid --seed 0 --max-minutes 30",
              f"{command} --missing   # the commands of the cells not run",
              f"{command} --markdown {PAGE}", ""]
    return "\n".join(parts)


def done_cells(path: Path, model: str) -> set[tuple[str, str, int]]:
    """(persona, row label, seed) of every cell in ``model``'s table: what a new invocation skips."""
    return {(r["persona"], label(r), r["seed"]) for r in read_rows(path, model)}


def missing(path: Path, model: str) -> list[str]:
    """The commands that would complete the table's first rows (3 seeds of every trained method, one of the
    others), each method as the chat launcher runs it now."""
    have = done_cells(path, model)
    flag = "" if model == default_model() else f" --model {model}"
    # a judge-only cell whose signal never comes stops at the cap
    return [f".venv/bin/python benchmarks/learning_from_conversation.py --persona {p} --method {m} --seed {s}"
            + flag + (" --max-minutes 30" if m in JUDGE_ONLY else "")
            for m, name in zip(METHODS, grid()) for p in PERSONAS for s in (SEEDS[:1] if m in UNTRAINED else SEEDS)
            if (p, name, s) not in have]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persona", choices=EVERYONE)
    parser.add_argument("--method", choices=METHODS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--eval-tasks", type=int, default=None,
                        help="held-out tasks scored before/after (default: all of the persona's test split)")
    parser.add_argument("--max-minutes", type=float, default=60.0,
                        help="judge-only methods: stop conversing after this long, even short of --steps")
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="sampling (and training) temperature of the training conversations; "
                             "held-out scoring stays greedy")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="an ablation: a launcher override on top of the method (repeatable); its own table row")
    parser.add_argument("--model", default=None, help="the policy (a catalog name); default: the chat launcher's. "
                        "Each model has its own table")
    parser.add_argument("--user-model", default=None, help="judge-only methods: this model plays the person "
                        "(RolePlayedUser: the persona's description only) instead of the scripted user; its own row")
    parser.add_argument("--user-voice", choices=("first", "all"), default="first",
                        help="judge-only methods: the scripted person voices the first unmet wish (default) or every "
                        "unmet wish at once; its own row")
    parser.add_argument("--curve-every", type=int, default=0, metavar="N",
                        help="judge-only methods: also score the held-out tasks after every N steps (after the run, "
                        "from weights kept in memory; about one held-out scoring's time each); not a row of its own")
    parser.add_argument("--curves", action="store_true", help="only print the rows' curves (--curve-every)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="only print the table from --results")
    parser.add_argument("--missing", action="store_true", help="only print the commands of the cells not run yet")
    parser.add_argument("--markdown", type=Path, metavar="PATH",
                        help=f"only write the generated results page (every model's table; {PAGE}) from --results")
    parser.add_argument("--archive", dest="archive", action="append", default=[], metavar="FIELD=VALUE",
                        help="move the rows whose fields have these values (repeatable: all must match) from --results "
                        f"to {ARCHIVE.relative_to(RESULTS.parents[1])}; with --why")
    parser.add_argument("--why", default=None, help="--archive: why the rows no longer count, kept in each row")
    args = parser.parse_args()
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(args.results))
        return 0
    if args.archive:
        if not args.why or any("=" not in a for a in args.archive):
            parser.error("--archive FIELD=VALUE ... needs --why TEXT")
        moved = archive_rows(dict(a.split("=", 1) for a in args.archive), args.why, args.results,
                             args.results.parent / "archive" / args.results.name)
        print(f"{moved} rows moved to the archive")
        return 0
    args.model = args.model or default_model()
    if args.curves:
        print(curves(args.results, args.model))
        return 0
    if args.missing:
        todo = missing(args.results, args.model)
        print("\n".join(todo) or "every cell of the table has run")
        print(f"({len(todo)} cells; on 2 quiet cores a judge-only cell takes 10-30 minutes, an oracle_grpo cell 26-94)",
              file=sys.stderr)
        return 0
    if not args.table:
        if not (args.persona and args.method):
            parser.error("give --persona and --method (one cell per invocation), or --table")
        if (args.user_model or args.user_voice != "first") and args.method not in JUDGE_ONLY:
            parser.error("--user-model / --user-voice: only judge-only methods converse with a simulated person")
        if args.curve_every and args.method not in JUDGE_ONLY:
            parser.error("--curve-every: only judge-only methods (a rehearsal) keep their earlier steps")
        if args.user_model and args.user_voice != "first":
            parser.error("--user-voice is the scripted person's; a --user-model person speaks for itself")
        cell = current_label(args.method, args.temperature, args.sets, args.user_model, args.user_voice)
        if (args.persona, cell, args.seed) in done_cells(args.results, args.model):
            print(f"{args.persona} x {cell} x seed {args.seed} is already in {args.results}; skipped")
        else:
            row = asyncio.run(run_one(args.persona, args.method, args.seed, args.steps, args.eval_tasks,
                                      args.max_minutes, args.temperature, tuple(args.sets), args.model,
                                      args.user_model, args.user_voice, args.curve_every))
            args.results.parent.mkdir(parents=True, exist_ok=True)
            with args.results.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row))
    print(table(args.results, args.model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
