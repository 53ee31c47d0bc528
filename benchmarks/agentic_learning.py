"""Agentic learning: does GRPO make the agent better at tool calls, the shell and the browser?

One invocation runs one env x method x seed cell and appends one JSON row to
``benchmarks/results/agentic_learning.jsonl`` (committed: the table is built over several runs, each
possibly on another machine); ``--table`` prints the table from that file, ``--missing`` the commands of
the cells not run yet, and a cell already in the file is skipped. Every cell is built exactly as
``clawgym train LAUNCHER --set ...`` builds a run (:func:`clawgym.rl.launch.load_config` on the env's
bundled launcher plus this script's overrides, :func:`clawgym.rl.launch.build`, ``loop.run()``), and
scored by the loop's own held-out eval (:meth:`AsyncRLLoop.evaluate`: greedy, fixed seeds, the first
``loop.eval_episodes`` held-out episodes) before, every ``loop.eval_every`` steps and after training.

Envs (launcher; train / held-out):

- ``toolcall``: ToolCall-v0 (``toolcall``; its ``train`` / ``test`` splits, 250 / 75 tasks; held-out tasks
  interleaved over the 25 families, :func:`toolcall_eval_ids`).
- ``bfcl``: BFCL-v0 (``toolcall`` launcher, env swapped; :data:`BFCL_CATEGORIES`, single-turn): a fixed
  split by a hash of the task id (:func:`bfcl_split`, the one place it is defined), held-out tasks
  interleaved over the categories so the first N held-out episodes cover every category.
- ``terminal``: Terminal-v0 (``terminal``; its bundled ``train`` / ``test`` splits, 65 / 16 tasks).
- ``miniwob``: MiniWoB-v0 (``gui`` launcher, env swapped, local executor): the :data:`MINIWOB_TASKS`
  subset; training plays page seeds ``seed * 1000003 + k`` (the loop's episode seeds), the held-out
  eval plays the same tasks on page seeds from ``EVAL_SEED`` = 12345 on (the loop's ``eval_seed``), a
  range the training seeds of these budgets never reach (checked).

Methods (the same budget of RL steps for every RL one):

- ``base``: the untrained model (greedy held-out eval; one seed is the whole cell).
- ``sft``: the warm start alone (:mod:`clawgym.rl.warm_start`; ``method: sft``): SFT on the setting's oracle
  played through the env on the training tasks (:data:`WARM_START`), no RL step.
- ``sft_outcome`` / ``sft_outcome_prm``: the warm start, then ``outcome`` / ``outcome_prm``; the held-out eval
  runs before, after the warm start (``warm``) and after RL, so RL's gain is reported apart from the warm start's.
- ``outcome``: GRPO on the env's verifiable reward alone (``judge.type=none``, ``loop.reward=outcome``).
- ``outcome_prm``: outcome + step-wise process reward (``loop.reward=step_wise``: r_k = R + prm_coef x
  verdict_k, normalised within (group, turn k), :func:`clawgym.rl.groups.build_group`), the shared judge
  reading each turn's next state. Which judge (:data:`PRM_JUDGE`): the rule judges (tool errors,
  non-zero exit codes, test output, the answer check; free) where they have something to say before
  the end of an episode (ToolCall-v0's python errors, Terminal-v0's exit codes, MiniWoB's ``Error:``
  tool results), the LLM PRM (``prm``: the model votes ``\\boxed{1|0|-1}`` on each call) for BFCL-v0,
  whose single-turn episodes give the rules nothing but the outcome again (the answer check at the only
  turn). On the GPU budget Terminal-v0 and MiniWoB-v0 get the launchers' own LLM PRM (``rules+prm``,
  ``prm``, 3 votes of a frozen copy of the model). The ``prob`` judge is not used: it reads the *user's*
  next message (chat), and these settings' next states are tool results and pages, so it would have no
  opinion on any turn.

Budgets (:data:`BUDGETS`; ``--set KEY=VALUE`` overrides go on top and make a row of their own):

- ``small``: 2 CPU cores, qwen2.5-coder-0.5b, a cell within ~45 minutes: 8 steps x 2 groups x 4 rollouts,
  LoRA r16 on the top 4 layers (the backward pass stops there), 16 held-out episodes before / at step 4 /
  after, training capped at ``loop.max_minutes`` 20 (a cell that reaches the cap records fewer ``steps``
  than ``steps_budget``).
- ``full``: one GPU (``policy.device=cuda``, the in-process hf policy and torch trainer; the launchers'
  own trainer settings): 100 steps x 4 groups x 8 rollouts, 64 held-out episodes (Terminal-v0: its 16)
  every 10 steps.
- ``test``: the tiny random model, 1 step, 2 held-out episodes (tests/test_agentic_learning.py).

    .venv/bin/python benchmarks/agentic_learning.py --env toolcall --method outcome_prm --seed 0 --budget small
    .venv/bin/python benchmarks/agentic_learning.py --env bfcl --method outcome --seed 1 --budget full
    .venv/bin/python benchmarks/agentic_learning.py --table --budget small
    .venv/bin/python benchmarks/agentic_learning.py --missing --budget small   # the commands of the cells not run yet
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_from_conversation import git_commit, seed_cell  # noqa: E402  (the method table's cell)

ENVS = ("toolcall", "bfcl", "terminal", "miniwob")
METHODS = ("base", "outcome", "outcome_prm", "sft", "sft_outcome", "sft_outcome_prm")
WARM_STARTED = ("sft", "sft_outcome", "sft_outcome_prm")
UNTRAINED = ("base",)  # greedy eval of the untrained weights: one seed is the whole cell
SEEDS = (0, 1, 2)  # of every trained cell
RESULTS = Path(__file__).resolve().parent / "results" / "agentic_learning.jsonl"
RUNS = Path("runs/agentic_learning")
EVAL_SEED = 12345  # LoopConfig.eval_seed: held-out episode k plays seed EVAL_SEED + k

# BFCL-v0: the single-turn categories with a python AST check (and irrelevance), as benchmarks/base_scores.py
BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple")
BFCL_HELD_OUT_PERCENT = 20
# MiniWoB-v0: short tasks a small model can finish in a few actions (click, focus, type)
MINIWOB_TASKS = ("click-test", "click-test-2", "click-button", "click-link", "click-dialog", "focus-text",
                 "enter-text", "click-option")
MINIWOB_MAX_TURNS = 10

# env -> (launcher, env overrides); None keeps the launcher's env section
ENV_SETUP: dict[str, tuple[str, dict[str, Any] | None]] = {
    "toolcall": ("toolcall", None),
    "bfcl": ("toolcall", {"id": "clawgym/BFCL-v0", "kwargs": {"category": list(BFCL_CATEGORIES)}, "eval_kwargs": {}}),
    "terminal": ("terminal", None),
    "miniwob": ("gui", {"id": "clawgym/MiniWoB-v0",
                        "kwargs": {"tasks": list(MINIWOB_TASKS), "max_turns": MINIWOB_MAX_TURNS}, "eval_kwargs": {}}),
}
# outcome_prm's judge per env and budget (see the module docstring)
PRM_JUDGE = {
    "small": {"toolcall": "rules", "bfcl": "prm", "terminal": "rules", "miniwob": "rules"},
    "full": {"toolcall": "rules", "bfcl": "prm", "terminal": "rules+prm", "miniwob": "prm"},
    "test": {"toolcall": "rules", "bfcl": "rules", "terminal": "rules", "miniwob": "rules"},
}

COMMON = {  # every budget: fresh runs, no per-step checkpoints or final export (a cell is rerun whole)
    "loop.eval_before": True, "loop.eval_after": True, "loop.resume": False, "loop.checkpoint_every": 0,
    "loop.tensorboard": False, "loop.plot": False, "rollout.executor": "local",
}
BUDGETS: dict[str, dict[str, Any]] = {
    # 2 CPU cores, qwen2.5-coder-0.5b (~15 tok/s alone, ~85 tok/s at 8 concurrent): 2 groups of 4 in flight
    "small": {"loop.steps": 8, "rollout.group_size": 4, "rollout.workers": 8, "loop.batch_groups": 2,
              "loop.buffer_groups": 4, "loop.max_staleness": 2, "loop.eval_episodes": 16, "loop.eval_every": 4,
              "loop.max_minutes": 20, "loop.torch_threads": 1, "trainer.lora.enabled": True, "trainer.lora.r": 16,
              "trainer.lora.alpha": 32, "trainer.lora.top_layers": 4, "trainer.lr": 1.0e-4,
              "trainer.micro_batch_size": 2, "trainer.grad_accum": 1, "judge.votes": 1, "judge.max_tokens": 256,
              "judge.model": "policy"},
    # one GPU: the launchers' trainer (ToolCall/BFCL/Terminal full weights, MiniWoB LoRA r32), a frozen PRM copy
    "full": {"loop.steps": 100, "rollout.group_size": 8, "rollout.workers": 16, "loop.batch_groups": 4,
             "loop.buffer_groups": 8, "loop.max_staleness": 2, "loop.eval_episodes": 64, "loop.eval_every": 10,
             "loop.max_minutes": 180, "policy.device": "cuda", "judge.votes": 3, "judge.max_tokens": 512},
    # the tests: tiny random model, one step that trains even when every reward is equal
    "test": {"loop.steps": 1, "rollout.group_size": 2, "rollout.workers": 2, "loop.batch_groups": 1,
             "loop.buffer_groups": 1, "loop.eval_episodes": 2, "loop.eval_every": 1, "loop.max_minutes": 3,
             "loop.drop_zero_advantage": False, "rollout.max_tokens": 16, "rollout.episode_timeout_s": 60,
             "trainer.micro_batch_size": 2, "trainer.grad_accum": 1},
}
# the warm start of the sft* methods per budget (warm_start.* keys): oracle episodes on the training tasks
WARM_START: dict[str, dict[str, Any]] = {
    # the SFT steps at lr 5e-4 (RL keeps the budget's 1e-4): at 1e-4 two epochs of 64 episodes move the top-4
    # LoRA too little to take the first step, and RL at 5e-4 after the warm start undid it (the row with
    # [trainer.lr=5e-4])
    "small": {"warm_start.enabled": True, "warm_start.episodes": 64, "warm_start.epochs": 2,
              "warm_start.batch_size": 8, "warm_start.workers": 2, "warm_start.max_minutes": 15,
              "warm_start.lr": 5.0e-4},
    "full": {"warm_start.enabled": True, "warm_start.episodes": 512, "warm_start.epochs": 3,
             "warm_start.batch_size": 16, "warm_start.workers": 8},
    "test": {"warm_start.enabled": True, "warm_start.episodes": 2, "warm_start.epochs": 1,
             "warm_start.batch_size": 2, "warm_start.workers": 1},
}
TEST_ENV_KWARGS = {"toolcall": {"max_turns": 2}, "terminal": {"max_turns": 2}, "miniwob": {"max_turns": 2}, "bfcl": {}}


# ---------------------------------------------------------------------------------------- splits
def bfcl_split(task_id: str) -> str:
    """``train`` or ``test`` for a BFCL task id: a fixed hash, so every machine and run draws the same split."""
    bucket = int(hashlib.sha256(f"clawgym-agentic-bfcl:{task_id}".encode()).hexdigest()[:8], 16) % 100
    return "test" if bucket < BFCL_HELD_OUT_PERCENT else "train"


def split_ids(ids_by_category: dict[str, Sequence[str]]) -> tuple[list[str], list[str]]:
    """(train ids, held-out ids) by :func:`bfcl_split`; held-out ids interleaved over the categories."""
    train: list[str] = []
    held: dict[str, list[str]] = {}
    for category, ids in ids_by_category.items():
        for task_id in ids:
            (held.setdefault(category, []) if bfcl_split(task_id) == "test" else train).append(task_id)
    return train, interleave(list(held.values()))


def interleave(columns: Sequence[Sequence[str]]) -> list[str]:
    """The first id of every column, then the second, ...: the first N ids cover N columns."""
    rounds = max((len(column) for column in columns), default=0)
    return [column[i] for i in range(rounds) for column in columns if i < len(column)]


def bfcl_ids(categories: Sequence[str] = BFCL_CATEGORIES) -> tuple[list[str], list[str]]:
    """BFCL-v0's (train ids, held-out ids) over ``categories``, from bfcl-eval's data."""
    from clawgym.envs.toolcall.bfcl_data import bfcl_tasks

    by_category: dict[str, list[str]] = {}
    for task in bfcl_tasks(list(categories)):
        by_category.setdefault(task.data["category"], []).append(task.id)
    return split_ids(by_category)


def toolcall_eval_ids() -> list[str]:
    """ToolCall-v0's held-out ids (its ``test`` split, 3 tasks of each of 25 families) interleaved over the
    families. The split lists them family by family, so its first 16 were six families (the word problems
    and the primes, which the 0.5B model solves none of); interleaved, 16 episodes cover 16 families."""
    from clawgym.envs.toolcall.env import ToolCallEnv

    by_family: dict[str, list[str]] = {}
    for task in ToolCallEnv.bundled_tasks().split("test"):
        by_family.setdefault(str(task.data.get("family", "")), []).append(task.id)
    return interleave(list(by_family.values()))


def miniwob_eval_ids(episodes: int) -> list[str]:
    """The held-out MiniWoB episodes: the subset round-robin (episode k plays page seed EVAL_SEED + k)."""
    return [MINIWOB_TASKS[k % len(MINIWOB_TASKS)] for k in range(episodes)]


# ---------------------------------------------------------------------------------------- config
def default_model() -> str:
    """The launchers' policy (qwen2.5-coder-0.5b): what ``clawgym train toolcall`` trains."""
    from clawgym import launchers
    from clawgym.rl.launch import load_config

    return load_config(launchers.resolve("toolcall")).policy.model


def _yaml(value: Any) -> str:
    return json.dumps(value)  # JSON is YAML: --set parses it back to the same value


def overrides_for(env: str, method: str, seed: int, budget: str, model: str, out: Path,
                  sets: Sequence[str] = ()) -> list[str]:
    """The ``--set`` list of one cell (what ``clawgym train LAUNCHER`` would be given), ablations last."""
    _, env_section = ENV_SETUP[env]
    knobs = {**COMMON, **BUDGETS[budget]}
    if budget == "full" and knobs.get("judge.model") is None:
        knobs["judge.model"] = model  # a frozen copy of the starting weights judges (the launchers' choice)
    extra = [f"policy.model={model}", f"policy.seed={seed}", f"loop.seed={seed}", f"loop.output_dir={out}"]
    if env_section is not None:
        extra += [f"env.{key}={_yaml(value)}" for key, value in env_section.items()]
    if budget == "test":
        extra += [f"env.kwargs.{key}={_yaml(value)}" for key, value in TEST_ENV_KWARGS[env].items()]
    if env == "terminal" and budget == "small":
        # 12 turns x 256 tokens x 16 held-out episodes is ~10 min an eval on 2 cores
        extra.append("env.kwargs.max_turns=8")
    if method in WARM_STARTED:
        knobs.update(WARM_START[budget])
    else:
        knobs["warm_start.enabled"] = False  # GRPO from the base weights, as the launchers ran before the warm start
    if method == "sft":
        extra.append("method=sft")
    if method.endswith("outcome_prm"):
        extra += [f"judge.type={PRM_JUDGE[budget][env]}", "loop.reward=step_wise"]
    else:
        extra += ["judge.type=none", "loop.reward=outcome"]
    return [f"{key}={_yaml(value) if not isinstance(value, str) else value}"
            for key, value in knobs.items()] + extra + list(sets)


def config_for(env: str, method: str, seed: int, budget: str, model: str, out: Path, sets: Sequence[str] = ()) -> Any:
    from clawgym import launchers
    from clawgym.rl.launch import load_config

    launcher, _ = ENV_SETUP[env]
    return load_config(launchers.resolve(launcher), overrides_for(env, method, seed, budget, model, out, sets))


def label(row: dict) -> str:
    """A row's method name; runs with ``--set`` overrides are rows of their own, e.g. ``outcome[trainer.lr=1e-05]``."""
    return row["method"] + "".join(f"[{s}]" for s in row.get("sets", []))


# ---------------------------------------------------------------------------------------- one cell
def cpu_kind() -> str:
    """The CPU's kind for comparing rows: ``avx512+amx`` (native bfloat16) or ``avx2``; rows of different kinds
    are not compared."""
    import torch

    caps = torch.cpu.get_capabilities()
    if caps.get("amx_bf16"):
        return "avx512+amx"
    return "avx512" if caps.get("avx512_f") else "avx2" if caps.get("avx2") else "other"


def device_name(config: Any) -> str:
    if str(config.policy.device).startswith("cuda"):
        import torch

        return f"cuda: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "cuda (unavailable)"
    return "cpu"


def eval_curve(out: Path, steps: int) -> list[dict[str, Any]]:
    """The held-out evals of a run from its metrics.jsonl: ``{"step", "success", "reward", "episodes"}``.

    A mid-run eval is logged when it ends (several steps later), so its step is read from its label
    (``before`` -> 0, ``step N`` -> N, ``after`` -> the steps trained)."""
    path = out / "metrics.jsonl"
    points = []
    for line in path.read_text().splitlines() if path.exists() else []:
        record = json.loads(line)
        if record.get("kind") != "eval":
            continue
        name = str(record.get("label", ""))
        step = 0 if name in ("before", "base", "warm_start") else steps if name == "after" else int(name.split()[-1])
        points.append({"step": step, "label": name, "success": record["eval_success"], "reward": record["eval_reward"],
                       "episodes": int(record["eval_episodes"]), "errors": int(record["eval_errors"]),
                       "version": int(record["eval_version"])})
    order = {"before": 0, "base": 0, "warm_start": 1}
    return sorted(points, key=lambda p: (p["step"], order.get(p["label"], 2), p["label"] == "after"))


def plot_curve(row: dict, path: Path) -> Path:
    """A small PNG: held-out success at each eval (and each step's training-batch success)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(4.8, 3.0), dpi=80)
    curve = row.get("curve") or []
    if curve:
        ax.plot([p["step"] for p in curve], [p["success"] for p in curve], "o-", label="held-out success")
    train = row.get("train_success") or []
    if train:
        ax.plot(range(1, len(train) + 1), train, ".", alpha=0.5, label="train batch success")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("train step")
    ax.set_ylabel("success")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{row['env']} {label(row)} seed {row['seed']} ({row['model']}, {row['budget']})", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


async def run_cell(env: str, method: str, seed: int, budget: str, model: str, sets: Sequence[str] = (),
                   runs: Path = RUNS) -> dict[str, Any]:
    from clawgym.rl.launch import build

    variant = label({"method": method, "sets": list(sets)})
    out = runs / f"{model}-{budget}-{env}-{variant}-{seed}".replace("=", "_").replace("/", "_")
    if out.exists():  # a fresh run every time: a checkpoint left behind would skip the eval before
        shutil.rmtree(out)
    trained_method = "outcome" if method == "base" else method
    config = config_for(env, trained_method, seed, budget, model, out, sets)
    if config.loop.torch_threads > 0:  # as clawgym train does (clawgym.rl.launch.main.run_config)
        import torch

        torch.set_num_threads(config.loop.torch_threads)
    started = time.perf_counter()
    parts = await asyncio.to_thread(build, config)
    loop = parts.loop
    # no 1 GB HF export per cell (not in the config schema)
    loop.config = dataclasses.replace(loop.config, export_final=False)
    held_out = "the env's eval split"
    if env == "toolcall":
        loop.eval_task_ids = toolcall_eval_ids()
        held_out = f"the {len(loop.eval_task_ids)} test tasks interleaved over their families"
    elif env == "bfcl":
        loop.task_ids, loop.eval_task_ids = bfcl_ids()
        held_out = f"{len(loop.eval_task_ids)} of {len(loop.task_ids) + len(loop.eval_task_ids)} tasks by bfcl_split"
    elif env == "miniwob":
        episodes = config.loop.eval_episodes or 2 * len(MINIWOB_TASKS)
        loop.eval_task_ids = miniwob_eval_ids(episodes)
        # the collector's episode seeds: seed * 1000003 + k for k below (groups started) x group size
        groups = config.loop.steps * config.loop.batch_groups + config.loop.buffer_groups + config.rollout.workers
        train_episodes = groups * config.rollout.group_size
        if seed * 1_000_003 < EVAL_SEED + episodes and seed * 1_000_003 + train_episodes > EVAL_SEED:
            raise ValueError(f"MiniWoB training page seeds {seed * 1_000_003}.. may reach the "
                             f"held-out range {EVAL_SEED}..")
        held_out = f"{len(MINIWOB_TASKS)} tasks, page seeds {EVAL_SEED}..{EVAL_SEED + episodes - 1}"
    row: dict[str, Any] = {
        "env": env, "method": method, "seed": seed, "model": config.policy.model, "budget": budget,
        "launcher": ENV_SETUP[env][0], "env_id": config.env.id, "held_out": held_out,
        "judge": config.judge.type if method.endswith("outcome_prm") else "none", "reward": config.loop.reward,
        "prm_coef": config.loop.prm_coef if method.endswith("outcome_prm") else None,
        "warm_start": ({k.split(".", 1)[1]: getattr(config.warm_start, k.split(".", 1)[1])
                        for k in WARM_START[budget]} if method in WARM_STARTED else None),  # as run: --set included
        "curriculum": config.loop.curriculum, "max_draws_per_batch": config.loop.max_draws_per_batch,
        "knobs": {**BUDGETS[budget], **({"env.kwargs.max_turns": config.env.kwargs.get("max_turns")}
                                        if "max_turns" in config.env.kwargs else {})},
        "lora": config.trainer.lora.enabled, "lr": config.trainer.lr,
        "trainable_tokens": list(config.trainer.lora.trainable_tokens),
        "dtype": config.policy.dtype,  # rows without it computed in bfloat16
        "device": device_name(config), "host": f"{platform.machine()} {os.cpu_count()} cores", "cpu_kind": cpu_kind(),
        "torch_threads": config.loop.torch_threads, "commit": git_commit(),
    }
    if sets:
        row["sets"] = list(sets)
    try:
        if method in UNTRAINED:
            result = await loop.evaluate("base")
            loop.metrics.close()
            row.update(before=result["eval_success"], after=result["eval_success"], reward_before=result["eval_reward"],
                       reward_after=result["eval_reward"], eval_episodes=int(result["eval_episodes"]),
                       eval_errors=int(result["eval_errors"]), steps=0, steps_budget=0, refused={}, train_success=[])
            row["curve"] = eval_curve(out, 0)
        else:
            result = await loop.run()
            before, after = result.eval_before or {}, result.eval_after or {}
            row.update(before=before.get("eval_success"), after=after.get("eval_success"),
                       reward_before=before.get("eval_reward"), reward_after=after.get("eval_reward"),
                       eval_episodes=int(after.get("eval_episodes", 0)), eval_errors=int(after.get("eval_errors", 0)),
                       steps=result.steps, steps_budget=0 if method == "sft" else config.loop.steps,
                       refused={k[len("refused/"):]: int(v) for k, v in result.counters.items()
                                if k.startswith("refused/")},
                       samples_dropped_stale=int(result.counters.get("samples_dropped_stale", 0)),
                       train_reward=[round(h["reward_mean"], 4) for h in result.history],
                       train_success=[round(h["success_rate"], 4) for h in result.history])
            row["curve"] = eval_curve(out, result.steps)
            warm = next((p for p in row["curve"] if p["label"] == "warm_start"), None)
            row["warm"] = warm["success"] if warm else (row["after"] if method == "sft" else None)
            row["warm_start_stats"] = {k: v for k, v in result.counters.items() if k.startswith("warm_start_")}
            row["groups"] = {k: int(result.counters.get(k, 0)) for k in
                             ("groups_played", "groups_empty", "groups_dropped_zero_variance", "draw_cap_hits")}
    finally:
        await parts.close()
    row["wall_s"] = round(time.perf_counter() - started, 1)
    return row


# ---------------------------------------------------------------------------------------- the table
UNKNOWN_KIND = "unrecorded"  # rows written before the CPU kind was recorded


def kind_of(row: dict) -> str:
    return row.get("cpu_kind") or UNKNOWN_KIND


def read_rows(path: Path, model: str, budget: str, kind: str | None = None) -> list[dict]:
    """The rows of one model and budget, and of one CPU kind when ``kind`` is given."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    return [r for r in rows if r["model"] == model and r["budget"] == budget and kind in (None, kind_of(r))]


def done_cells(path: Path, model: str, budget: str, kind: str) -> set[tuple[str, str, int]]:
    """The cells run on this CPU kind: a cell is run again on another kind, never compared across kinds."""
    return {(r["env"], label(r), r["seed"]) for r in read_rows(path, model, budget, kind)}


def kinds(path: Path, model: str, budget: str) -> list[str]:
    return sorted({kind_of(r) for r in read_rows(path, model, budget)}, key=lambda k: (k == UNKNOWN_KIND, k))


def table(path: Path, model: str, budget: str, kind: str | None = None) -> str:
    """The mean over seeds of every method x env, of one CPU kind (``kind``; every kind apart if None)."""
    if kind is None:
        return "\n\n".join(table(path, model, budget, k) for k in kinds(path, model, budget)) or "(no rows)"
    rows = read_rows(path, model, budget, kind)
    names = list(METHODS) + sorted({label(r) for r in rows} - set(METHODS))
    width = max(13, *(len(n) + 1 for n in names))
    lines = [f"{model}, budget {budget}, CPU kind {kind}: held-out success after, mean ± std over seeds [n], "
             "after − before",
             f"{'method':<{width}}" + "".join(f"{e:>24}" for e in ENVS)]
    for method in names:
        cells = [seed_cell([r for r in rows if label(r) == method and r["env"] == env and r["after"] is not None])
                 for env in ENVS]
        lines.append(f"{method:<{width}}" + "".join(cells))
    for r in rows:
        if r["method"] not in UNTRAINED and r["steps"] < r["steps_budget"]:
            lines.append(f"({r['env']} x {label(r)} x seed {r['seed']}: {r['steps']} of {r['steps_budget']} steps "
                         f"within the {r['knobs'].get('loop.max_minutes')}-minute cap)")
    lines += [f"({r['env']} x {label(r)} x seed {r['seed']}: {r['note']})" for r in rows
              if r.get("note") and r["method"] not in WARM_STARTED]  # the warm table prints the others' notes
    refused = [r for r in rows if r.get("refused")]
    if refused:
        keys = sorted({k for r in refused for k in r["refused"]})
        lines.append("samples not trained (summed over runs): "
                     + json.dumps({k: sum(r["refused"].get(k, 0) for r in refused) for k in keys}))
    if rows:
        where = sorted({f"{r['device']} / {r['host']}" for r in rows})
        lines.append(f"ran on: {'; '.join(where)}; wall per cell {min(r['wall_s'] for r in rows) / 60:.1f}-"
                     f"{max(r['wall_s'] for r in rows) / 60:.1f} min")
    return "\n".join(lines)


def warm_table(path: Path, model: str, budget: str) -> str:
    """The warm-started cells, one row each: held-out success before -> after the warm start -> after RL."""
    rows = [r for r in read_rows(path, model, budget) if r["method"] in WARM_STARTED and r.get("warm") is not None]
    if not rows:
        return ""
    lines = ["| env | method | seed | base | warm start (SFT) | after RL | RL's gain | RL steps "
             "| groups drawn / dropped (all equal) | cell wall | CPU |", "|---" * 11 + "|"]
    for r in sorted(rows, key=lambda r: (kind_of(r), ENVS.index(r["env"]), METHODS.index(r["method"]),
                                          label(r), r["seed"])):
        rl = "" if r["method"] == "sft" else f"{r['after'] - r['warm']:+.2f}"
        after = "" if r["method"] == "sft" else f"{r['after']:.2f}"  # sft: no RL ran
        groups = r.get("groups") or {}
        drawn = f"{groups.get('groups_played', 0)} / {groups.get('groups_dropped_zero_variance', 0)}" if rl else ""
        lines.append(f"| {r['env']} | {label(r)} | {r['seed']} | {r['before']:.2f} | {r['warm']:.2f} | "
                     f"{after} | {rl} | {r['steps']} | {drawn} | {r['wall_s'] / 60:.0f} min | "
                     f"{kind_of(r)} |")
    lines += [f"\n{r['env']} x {label(r)} x seed {r['seed']}: {r['note']}" for r in rows if r.get("note")]
    return "\n".join(lines)


def markdown(path: Path, model: str, budget: str) -> str:
    """docs/results/agentic_learning.md: generated from the results file, never edited by hand."""
    return "\n".join([
        "# Agentic learning: warm start and RL on the agentic settings", "",
        "Generated by `benchmarks/agentic_learning.py --markdown docs/results/agentic_learning.md` from "
        "`benchmarks/results/agentic_learning.jsonl`; do not edit by hand. Budget "
        f"`{budget}`, model `{model}`; held-out success, greedy, on 16 episodes (the benchmark's docstring says "
        "which). A cell ran alone on the machine its row names unless its note says otherwise; compare rows of one "
        "CPU kind only.", "",
        "## Warm start, then RL", "",
        "`base` is the held-out success of the untrained weights, `warm start` after the SFT stage, `after RL` at "
        "the end; RL's gain is after RL minus the warm start.", "",
        warm_table(path, model, budget) or "(no warm-started cell yet)", "",
        "## Every cell", "", "One table per CPU kind (`avx512+amx`: native bfloat16; `avx2`: the model computes in "
        f"float32, fewer steps fit in a cell's cap; `{UNKNOWN_KIND}`: rows written before the kind was recorded).", "",
        "```", table(path, model, budget), "```", "",
        "Commands:", "", "    .venv/bin/python benchmarks/agentic_learning.py --env toolcall --method sft_outcome "
        "--seed 0 --budget small", f"    .venv/bin/python benchmarks/agentic_learning.py --missing --budget {budget}",
        ""])


def missing(path: Path, model: str, budget: str) -> list[str]:
    """The commands that would complete the table (3 seeds of every trained method, one of base)."""
    have = done_cells(path, model, budget, cpu_kind())
    flags = f" --budget {budget}" + ("" if model == default_model() else f" --model {model}")
    if path != RESULTS:
        flags += f" --results {path}"
    return [f".venv/bin/python benchmarks/agentic_learning.py --env {e} --method {m} --seed {s}{flags}"
            for m in METHODS for e in ENVS for s in (SEEDS[:1] if m in UNTRAINED else SEEDS)
            if (e, m, s) not in have]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", choices=ENVS)
    parser.add_argument("--method", choices=METHODS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", choices=tuple(BUDGETS), default="small",
                        help="small: 2 CPU cores, <= 45 min a cell; full: one GPU; test: the tiny model (tests)")
    parser.add_argument("--model", default=None,
                        help="the policy (a catalog name or HF checkpoint dir); default: the launchers'. "
                        "Each model and budget has its own table")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="a launcher override on top of the budget (repeatable); its own table row")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--runs", type=Path, default=RUNS, help="where the runs' output dirs go (not committed)")
    parser.add_argument("--table", action="store_true", help="only print the table from --results")
    parser.add_argument("--missing", action="store_true", help="only print the commands of the cells not run yet")
    parser.add_argument("--markdown", type=Path, help="write the generated results page (docs/results/...) and stop")
    args = parser.parse_args(argv)
    args.model = args.model or default_model()
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(markdown(args.results, args.model, args.budget))
        return 0
    if args.missing:
        todo = missing(args.results, args.model, args.budget)
        print("\n".join(todo) or "every cell of the table has run")
        print(f"({len(todo)} cells)", file=sys.stderr)
        return 0
    if not args.table:
        if not (args.env and args.method):
            parser.error("give --env and --method (one cell per invocation), or --table / --missing")
        cell = label({"method": args.method, "sets": args.sets})
        if (args.env, cell, args.seed) in done_cells(args.results, args.model, args.budget, cpu_kind()):
            print(f"{args.env} x {cell} x seed {args.seed} ({args.model}, {args.budget}, {cpu_kind()}) is already in "
                  f"{args.results}; skipped")
        else:
            row = asyncio.run(run_cell(args.env, args.method, args.seed, args.budget, args.model,
                                       tuple(args.sets), args.runs))
            curves = args.results.with_suffix("")  # benchmarks/results/agentic_learning/
            name = f"{args.model}-{args.budget}-{args.env}-{cell}-{args.seed}".replace("=", "_").replace("/", "_")
            row["curve_png"] = str(plot_curve(row, curves / f"{name}.png").relative_to(args.results.parent))
            args.results.parent.mkdir(parents=True, exist_ok=True)
            with args.results.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row))
    print(table(args.results, args.model, args.budget))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
