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
- ``hindsight``: hindsight GRPO (:mod:`clawgym.serve.hindsight`): each judged turn and 3 sibling replies to
  the same prompt, scored by the rubric judge against the wishes the user's corrections left in the wish
  memory (the person's verdict counts half in their own reply's reward); also judge-only.

``--user-model qwen2.5-coder-1.5b`` lets that model play the person (:class:`RolePlayedUser`: it reads
the persona's description, never its checks, and decides what to thank and correct); such rows are
labelled ``method/user=<model>`` and shown apart. ``--user-voice all`` makes the scripted person list every
unmet wish at once instead of the first (rows ``method/voice=all``). The persona checks stay the metric.

    .venv/bin/python benchmarks/learning_from_conversation.py --persona teacher --method hybrid --seed 0
    .venv/bin/python benchmarks/learning_from_conversation.py --table
    .venv/bin/python benchmarks/learning_from_conversation.py --missing   # the commands of the cells not run yet
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
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

METHODS = ("base", "prompting", "oracle_grpo", "binary", "opd", "hybrid", "opd_topk", "hindsight", "hindsight_hybrid")
UNTRAINED = ("base", "prompting")  # greedy scoring of untrained weights: one seed is the whole cell
SEEDS = (0, 1, 2)  # of every trained cell
PERSONAS = ("student", "teacher", "ta")
JUDGE_FOR = {"binary": ("grpo", "prob"), "opd": ("opd", "probhint"), "hybrid": ("hybrid", "prob,probhint"),
             "opd_topk": ("opd_topk", "probhint"),  # top-K distillation of the hinted teacher at every position
             "hindsight": ("grpo", "prob"),  # each turn a group of 4 replies scored by the rubric judge on the wishes
             # the same groups, and every member also distils the teacher (the initial weights) reading the wishes
             "hindsight_hybrid": ("hybrid", "prob,probhint")}
HINDSIGHT = ("hindsight", "hindsight_hybrid")
HINDSIGHT_K = 4
# Committed, not under runs/: the table is built over several runs, each possibly on a fresh machine.
RESULTS = Path(__file__).resolve().parent / "results" / "learning_from_conversation.jsonl"
MAX_TOKENS = 128  # every reply (training conversations and held-out scoring): room for > 80 words, as in the demo
# The hidden persona checks (the metric), and whose checks each version changed: 2 the honest checks (a stated
# correct result, a short check that can fail at 128 tokens, the hash split); 3 the TA's score check takes a
# grade on the scale only ("7/10", "6 out of 10"; not "58/10", the student's answer written over the scale); 4 the
# no-lists check of the student and the TA reads one line opening with a number other than 1 ("58. The answer is
# correct.") as a sentence, not a list item. A row whose persona a later version touched was scored with the old
# checks: void, left out of the table (``benchmarks/rescore_cell.py`` carries a row over when nothing changed).
METRICS = 4
METRICS_CHANGED = {2: PERSONAS, 3: ("ta",), 4: ("student", "ta")}
# The judge-only recipe of this version (rows of earlier recipes are shown apart, see SUPERSEDED):
# 3: verdicts minus the batch's mean verdict (serve.baseline: batch), the user's correction appended to
# their request as the OPD hint (trainer.hint_format: inline), and every personal-trainer step on a full
# batch of fresh turns (stale turns are dropped before a batch is taken).
RECIPE = 3
SUPERSEDED = {1: "A = r without a baseline, hint wrapped under a header",
              2: "a step could train the fresh remainder (1-7 turns) of a batch whose other turns were stale"}
JUDGE_ONLY = tuple(JUDGE_FOR)
OPD_METHODS = tuple(m for m, (trainer_method, _) in JUDGE_FOR.items() if trainer_method != "grpo")
# The weight of the OPD term (trainer.w_opd) in the rows that did not record it: the chat launcher's when rows
# began to record it. A row trained at another weight is a row of its own (``...[trainer.w_opd=0.3]``), whether
# the weight came from ``--set`` or from the launcher, so changing the launcher never renames or merges rows.
LEGACY_W_OPD = 1.0
# Likewise the answered siblings of each hindsight group (serve.hindsight_answered): the rows that did not record
# them had none, and a row with some is named by their count (``...[serve.hindsight_answered=1]``) wherever it
# came from.
LEGACY_ANSWERED = 0
# The rubric judge of the hindsight rows, and whose wishes each version changed: 2 decides name wishes by
# the names (rubric_cues.name_check); 3 also decides result wishes by solving the request, by-name wishes
# by the name the judge reads off it (request_facts) and warmth by words of encouragement; 4 also decides a
# score on a named scale ("give a score out of 10") by the cues, a wish only the TA persona has; 5 misses a
# result wish when the reply calls another number correct (request_facts.called_right) and a scale wish
# when the number is off the scale ("58 out of 10"). A row whose
# persona a later version touched is a row of its own (``hindsight/rubric1``, ...).
RUBRIC = 5
RUBRIC_CHANGED = {2: PERSONAS, 3: PERSONAS, 4: ("ta",), 5: PERSONAS}
# The wish extractor, for a person who is a model (``--user-model``): 2 drops sentences in the assistant's
# voice (offers of help: "don't hesitate to ask", "I'm here to help"), which a role-played person says and
# the scripted one never does. A role-played row of an earlier version is a row of its own
# (``.../user=MODEL/wishes1``).
WISHES = 2
LEGACY_MODEL = "smollm2-135m"  # the model of the rows that name none


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
    from clawgym.envs.openclaw_chat.personas import PERSONAS as P
    from clawgym.serve import rehearsal

    out = run_dir(model or "default", persona, current_label(method, temperature, sets, user_model, user_voice), seed)
    if out.exists():  # a previous run of this cell (an earlier recipe): the gateway would resume its weights
        shutil.rmtree(out)
    held_out = rehearsal.persona_tasks(persona, "test")[:eval_tasks]
    config = config_for(method, seed, steps, out, temperature, sets, model)
    started = time.perf_counter()
    row = {"model": config.policy.model, "persona": persona, "method": method, "seed": seed,
           "steps_budget": steps, "metrics": METRICS, "eval_tasks": len(held_out), "max_tokens": MAX_TOKENS,
           "dtype": config.policy.dtype,  # rows without it computed in bfloat16 (CPUs with native bfloat16)
           "host": host()}  # rows without it: the docs say where they ran
    if temperature != 1.0:
        row["temperature"] = temperature  # training conversations sampled (and trained) at this temperature
    if sets:
        row["sets"] = list(sets)  # an ablation: launcher overrides on top of the method's recipe
    if method in JUDGE_ONLY:
        row.update(recipe=RECIPE, baseline=config.serve.get("baseline", "batch"),
                   hint_format=config.trainer.hint_format, wishes=WISHES)
    if method in HINDSIGHT:
        row.update(rubric=RUBRIC, hindsight_answered=config.serve.get("hindsight_answered", 0))
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
    """A row's method name: runs at another sampling temperature than 1.0, or with launcher overrides
    (``--set``), are rows of their own, e.g. ``hybrid@T0.6`` or ``opd[trainer.lr=3e-05]``."""
    name = row["method"] if row.get("temperature", 1.0) == 1.0 else f"{row['method']}@T{row['temperature']:g}"
    if row.get("user_model"):
        name += f"/user={row['user_model']}"
        if row.get("wishes", 1) < WISHES:
            name += f"/wishes{row.get('wishes', 1)}"
    if row.get("user_voice", "first") != "first":
        name += f"/voice={row['user_voice']}"
    if row["method"] in HINDSIGHT and not rubric_current(row):
        name += f"/rubric{row.get('rubric', 1)}"
    # the answered siblings, then the OPD weight, come last: the launcher's value reads as a --set of it would
    sets = list(row.get("sets", []))
    answered = answered_siblings(row)
    if answered is not None:
        sets = [s for s in sets if not s.startswith("serve.hindsight_answered=")]
        sets += [f"serve.hindsight_answered={answered}"] if answered != LEGACY_ANSWERED else []
    weight = opd_weight(row)
    if weight is not None:
        sets = [s for s in sets if not s.startswith("trainer.w_opd=")]
        sets += [f"trainer.w_opd={weight:g}"] if weight != LEGACY_W_OPD else []
    return name + "".join(f"[{s}]" for s in sets)


def recipe_value(row: dict, key: str, field: str, legacy: float, cast: type) -> float:
    """What a row trained with for launcher key ``key``: its ``--set``, else what it recorded in ``field``, else
    ``legacy`` (the launcher's value before rows recorded it)."""
    for override in row.get("sets", []):
        if override.startswith(f"{key}="):
            return cast(override.split("=", 1)[1])
    return row.get(field, legacy)


def opd_weight(row: dict) -> float | None:
    """The weight a row's OPD term was trained at (None: the method has no OPD term)."""
    return recipe_value(row, "trainer.w_opd", "w_opd", LEGACY_W_OPD, float) if row["method"] in OPD_METHODS else None


def answered_siblings(row: dict) -> int | None:
    """The answered siblings of each of a row's hindsight groups (None: the method has no groups)."""
    if row["method"] not in HINDSIGHT:
        return None
    return recipe_value(row, "serve.hindsight_answered", "hindsight_answered", LEGACY_ANSWERED, int)


def current_label(method: str, temperature: float, sets: list[str] | tuple[str, ...], user_model: str | None,
                  user_voice: str) -> str:
    """The label of a cell run now (the current rubric judge, wish extractor, OPD weight and answered siblings)."""
    config = chat_config(sets)
    return label({"method": method, "temperature": temperature, "sets": list(sets), "user_model": user_model,
                  "user_voice": user_voice, "rubric": RUBRIC, "wishes": WISHES, "w_opd": config.trainer.w_opd,
                  "hindsight_answered": config.serve.get("hindsight_answered", 0)})


def changed_since(row: dict, version: int, changes: dict[int, tuple[str, ...]]) -> bool:
    """A version after ``version`` changed something for the row's persona (``changes``: version -> personas)."""
    return any(row.get("persona") in who for later, who in changes.items() if later > version)


def rubric_current(row: dict) -> bool:
    """No rubric version after the row's changed how its persona's wishes are judged."""
    return not changed_since(row, row.get("rubric", 1), RUBRIC_CHANGED)


def metrics_current(row: dict) -> bool:
    """No checks version after the row's changed how its persona is scored."""
    return not changed_since(row, row.get("metrics", 1), METRICS_CHANGED)


def model_of(row: dict) -> str:
    return row.get("model", LEGACY_MODEL)


def run_dir(model: str, persona: str, cell: str, seed: int) -> Path:
    """Where a cell's run keeps its turn log and last checkpoint (``runs/`` is not committed)."""
    return Path("runs/lfc") / f"{model}-{persona}-{cell.replace('=', '_').replace('/', '_')}-{seed}"


def read_rows(path: Path, model: str) -> tuple[list[dict], int, list[dict]]:
    """``model``'s rows scored with the current metrics, how many older rows were left out, and the
    judge-only rows trained with an earlier recipe (shown apart)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    rows = [r for r in rows if model_of(r) == model]
    scored = [r for r in rows if metrics_current(r)]
    superseded = [r for r in scored if r["method"] in JUDGE_ONLY and r.get("recipe", 1) != RECIPE]
    current = [r for r in scored if r not in superseded]
    return current, len(rows) - len(scored), superseded


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
    faster CPU, so rows that ran on different machines are not the same measurement. (A GPU cell says so in
    its label, ``[policy.device=cuda]``.)"""
    from clawgym.inference.catalog import cpu_has_native_bf16

    bf16 = "native bfloat16" if cpu_has_native_bf16() else "no native bfloat16"
    return f"{platform.machine()} {os.cpu_count()} cores, {bf16}"


def hosts_line(rows: list[dict]) -> str:
    """Where the table's rows ran, with how many rows each (rows before rows recorded it: not recorded)."""
    counts = collections.Counter(r.get("host", "not recorded") for r in rows)
    return "ran on: " + "; ".join(f"{where} ({n} row{'s' * (n != 1)})" for where, n in sorted(counts.items()))


def curves(path: Path, model: str) -> str:
    """The rows that scored their earlier steps too (``--curve-every``): the held-out score at step 0, at
    each kept step and at the last, and each check's rate at those steps. Does a gain build, hold or fade?"""
    rows, _, _ = read_rows(path, model)
    lines = []
    for row in (r for r in rows if r.get("curve")):
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
    rows, void, superseded = read_rows(path, model)
    names = [m for m in METHODS] + sorted({label(r) for r in rows} - set(METHODS))
    width = max(12, *(len(n) + 1 for n in names))
    lines = [f"{model}:", f"{'method':<{width}}" + "".join(f"{p:>24}" for p in PERSONAS)
             + "   (held-out score after, mean ± std over seeds [n], after − before)"]
    for method in names:
        cells = [seed_cell([r for r in rows if label(r) == method and r["persona"] == persona]) for persona in PERSONAS]
        lines.append(f"{method:<{width}}" + "".join(cells))
    for r in superseded:
        recipe = r.get("recipe", 1)
        lines.append(f"(superseded recipe {recipe}: {r['persona']} x {label(r)} "
                     f"x seed {r['seed']}: {r['before']:.2f} -> {r['after']:.2f}, {r['steps']} steps; "
                     f"{SUPERSEDED[recipe]})")
    if void:
        lines.append(f"({void} rows scored with persona checks since changed (METRICS_CHANGED) are void and left out)")
    transcribed = [r for r in rows + superseded if r.get("transcribed")]
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


def done_cells(path: Path, model: str) -> set[tuple[str, str, int]]:
    """(persona, row label, seed) of every cell in ``model``'s table: what a new invocation skips."""
    rows, _, _ = read_rows(path, model)
    return {(r["persona"], label(r), r["seed"]) for r in rows}


def table_sets(method: str, config) -> list[str]:  # noqa: ANN001
    """The overrides that make a cell run now one of the table's own rows: the OPD weight and answered siblings
    those rows trained with, where the chat launcher (``config``) has since changed them."""
    sets = []
    if method in OPD_METHODS and config.trainer.w_opd != LEGACY_W_OPD:
        sets.append(f"trainer.w_opd={LEGACY_W_OPD:g}")
    if method in HINDSIGHT and config.serve.get("hindsight_answered", 0) != LEGACY_ANSWERED:
        sets.append(f"serve.hindsight_answered={LEGACY_ANSWERED}")
    return sets


def missing(path: Path, model: str) -> list[str]:
    """The commands that would complete the table (3 seeds of every trained method, one of the others)."""
    have = done_cells(path, model)
    launcher = chat_config()
    flag = "" if model == launcher.policy.model else f" --model {model}"
    pins = {m: "".join(f" --set {o}" for o in table_sets(m, launcher)) for m in METHODS}
    # a judge-only cell whose signal never comes stops at the cap (cell times: docs/training.md)
    return [f".venv/bin/python benchmarks/learning_from_conversation.py --persona {p} --method {m} --seed {s}"
            + flag + (" --max-minutes 30" if m in JUDGE_ONLY else "") + pins[m]
            for m in METHODS for p in PERSONAS for s in (SEEDS[:1] if m in UNTRAINED else SEEDS)
            if (p, m, s) not in have]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--persona", choices=PERSONAS)
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
    args = parser.parse_args()
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
