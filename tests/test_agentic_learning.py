"""benchmarks/agentic_learning.py: one cell end to end on the tiny model (ToolCall-v0, the path of `clawgym
train toolcall`), the row it appends, the table and the missing-cell commands built from the results file,
and BFCL-v0's fixed train / held-out split."""

import json

import pytest

from tests.scripts import load_script


@pytest.fixture(scope="module")
def al():
    return load_script("benchmarks/agentic_learning.py")


ROW_KEYS = {"env", "method", "seed", "model", "budget", "before", "after", "steps", "steps_budget", "wall_s", "device",
            "host", "knobs", "curve", "refused", "judge", "reward", "eval_episodes", "curve_png"}


def test_one_toolcall_cell_end_to_end_appends_a_row_the_table_prints(al, tmp_path, capsys):
    results = tmp_path / "agentic_learning.jsonl"
    argv = ["--env", "toolcall", "--method", "outcome_prm", "--seed", "0", "--budget", "test",
            "--model", "tiny-random-qwen", "--results", str(results), "--runs", str(tmp_path / "runs")]
    assert al.main(argv) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert ROW_KEYS <= set(row)
    assert (row["env"], row["method"], row["seed"], row["model"],
            row["budget"]) == ("toolcall", "outcome_prm", 0, "tiny-random-qwen", "test")
    assert row["steps"] == row["steps_budget"] == 1
    assert row["judge"] == "rules" and row["reward"] == "step_wise"
    assert 0.0 <= row["before"] <= 1.0 and 0.0 <= row["after"] <= 1.0
    assert row["eval_episodes"] == 2 and row["knobs"]["loop.eval_episodes"] == 2
    assert [p["label"] for p in row["curve"]] == ["before", "after"] and row["curve"][-1]["step"] == 1
    assert row["device"] == "cpu" and "cores" in row["host"]
    png = results.parent / row["curve_png"]
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size < 100_000
    out = capsys.readouterr().out
    assert "outcome_prm" in out and "0.00 ± 0.00 [1]" in out

    # a cell already in the file is skipped; the table reads it back; --missing lists every other cell
    assert al.main(argv) == 0
    assert "skipped" in capsys.readouterr().out
    assert len(results.read_text().splitlines()) == 1
    assert "0.00 ± 0.00 [1] +0.00" in al.table(results, "tiny-random-qwen", "test")
    todo = al.missing(results, "tiny-random-qwen", "test")
    trained = len(al.METHODS) - len(al.UNTRAINED)
    assert len(todo) == len(al.ENVS) * (1 + trained * len(al.SEEDS)) - 1
    assert not any("--env toolcall --method outcome_prm --seed 0 " in c + " " for c in todo)
    assert any("--env toolcall --method outcome_prm --seed 1 " in c + " " for c in todo)
    assert all("--budget test" in c and "--model tiny-random-qwen" in c for c in todo)
    assert al.missing(results, "tiny-random-qwen",
                      "small") and len(al.missing(results, "tiny-random-qwen", "small")) == len(todo) + 1


def test_a_warm_started_cell_reports_the_warm_start_apart_from_rl(al, tmp_path):
    results = tmp_path / "agentic_learning.jsonl"
    argv = ["--env", "toolcall", "--method", "sft_outcome", "--seed", "0", "--budget", "test",
            "--model", "tiny-random-qwen", "--results", str(results), "--runs", str(tmp_path / "runs")]
    assert al.main(argv) == 0
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert [p["label"] for p in row["curve"]] == ["before", "warm_start", "after"]
    assert row["warm"] is not None and row["warm_start"]["episodes"] == 2
    assert row["warm_start_stats"]["warm_start_kept"] == 2 and row["steps"] == 1
    sft = al.config_for("toolcall", "sft", 0, "small", "qwen2.5-coder-0.5b", tmp_path)
    assert sft.method == "sft" and sft.warm_start.enabled and sft.warm_start.episodes == 64


def test_cells_are_built_through_the_launchers_with_the_methods_rewards(al, tmp_path):
    outcome = al.config_for("toolcall", "outcome", 1, "small", "qwen2.5-coder-0.5b", tmp_path)
    prm = al.config_for("toolcall", "outcome_prm", 1, "small", "qwen2.5-coder-0.5b", tmp_path)
    assert (outcome.judge.type, outcome.loop.reward) == ("none", "outcome")
    assert (prm.judge.type, prm.loop.reward) == ("rules", "step_wise")
    for config in (outcome, prm):  # the same budget for both trained methods
        assert (config.loop.steps, config.rollout.group_size, config.loop.eval_episodes) == (8, 4, 16)
        assert config.loop.eval_before and config.loop.eval_after and config.loop.seed == 1
    bfcl = al.config_for("bfcl", "outcome_prm", 0, "small", "qwen2.5-coder-0.5b", tmp_path)
    assert bfcl.env.id == "clawgym/BFCL-v0" and bfcl.judge.type == "prm"  # rules would only repeat the outcome
    miniwob = al.config_for("miniwob", "outcome", 0, "full", "qwen2.5-coder-0.5b", tmp_path)
    assert miniwob.env.id == "clawgym/MiniWoB-v0" and miniwob.rollout.executor == "local"
    assert miniwob.env.kwargs["tasks"] == list(al.MINIWOB_TASKS) and miniwob.policy.device == "cuda"


def test_bfcl_split_is_fixed_disjoint_and_interleaved(al):
    ids = {"simple_python": [f"simple_python_{i}" for i in range(200)],
           "multiple": [f"multiple_{i}" for i in range(100)]}
    train, held_out = al.split_ids(ids)
    assert (train, held_out) == al.split_ids(ids)  # deterministic
    assert not set(train) & set(held_out) and sorted(train + held_out) == sorted(ids["simple_python"] + ids["multiple"])
    assert 0.1 < len(held_out) / 300 < 0.3
    assert {held_out[0].rsplit("_", 1)[0], held_out[1].rsplit("_", 1)[0]} == {"simple_python", "multiple"}
    assert all(al.bfcl_split(i) == "test" for i in held_out) and all(al.bfcl_split(i) == "train" for i in train)
    assert al.bfcl_split("simple_python_0") == al.bfcl_split("simple_python_0")


def test_toolcall_held_out_covers_the_families(al):
    ids = al.toolcall_eval_ids()
    assert len(ids) == len(set(ids)) == 75 and ids == al.toolcall_eval_ids()
    families = [i.removeprefix("toolcall-").rsplit("-", 1)[0] for i in ids]
    assert len(set(families[:16])) == 16 and len(set(families[:25])) == 25  # one task of each family per round
    from clawgym.envs.toolcall.env import ToolCallEnv

    assert {t.id for t in ToolCallEnv.bundled_tasks().split("test")} == set(ids)  # the held-out split, all of it


def test_bfcl_split_of_the_real_categories(al):
    pytest.importorskip("bfcl_eval")
    train, held_out = al.bfcl_ids()
    assert (train, held_out) == al.bfcl_ids()
    assert not set(train) & set(held_out)
    categories = {i.rsplit("_", 1)[0].split("_")[0] for i in held_out[:16]}
    assert {"simple", "multiple", "parallel", "irrelevance", "live"} <= categories  # the first 16 cover every category


def test_cpu_kinds_are_never_mixed_a_cell_runs_again_on_another_kind(al, tmp_path):
    """A row counts as done only on its own CPU kind, and each kind gets its own table (means never mix)."""
    results = tmp_path / "agentic_learning.jsonl"
    base = {"env": "bfcl", "method": "outcome", "seed": 0, "model": "m", "budget": "small", "before": 0.4,
            "steps": 8, "steps_budget": 8, "wall_s": 60.0, "device": "cpu", "host": "x86_64 2 cores", "knobs": {}}
    rows = [dict(base, after=0.6, cpu_kind="avx512+amx"), dict(base, after=0.4, cpu_kind="avx2"),
            dict(base, after=0.5, seed=1)]  # no kind recorded
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert al.done_cells(results, "m", "small", "avx2") == {("bfcl", "outcome", 0)}
    assert al.done_cells(results, "m", "small", "avx512") == set()
    assert al.kinds(results, "m", "small") == ["avx2", "avx512+amx", al.UNKNOWN_KIND]
    amx, avx2 = al.table(results, "m", "small", "avx512+amx"), al.table(results, "m", "small", "avx2")
    assert "0.60 ± 0.00 [1] +0.20" in amx and "0.40 ±" not in amx
    assert "0.40 ± 0.00 [1] +0.00" in avx2 and "0.60 ±" not in avx2
    every = al.table(results, "m", "small")
    assert every.count("CPU kind") == 3 and f"CPU kind {al.UNKNOWN_KIND}" in every
