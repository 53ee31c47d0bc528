"""The method table of benchmarks/learning_from_conversation.py is built over many runs from a results
file; these check that it aggregates what it says (mean ± std over seeds, every row named by what it ran with,
ablations as rows of their own), lists exactly the cells still to run, moves the rows a change makes stale
to the archive, and that the committed results page is the one the committed rows generate."""

import json

import pytest

from tests.scripts import ROOT, load_script


@pytest.fixture(scope="module")
def lfc():
    return load_script("benchmarks/learning_from_conversation.py")


@pytest.fixture(scope="module")
def launcher(lfc):
    return lfc.chat_config([])


MODEL = "qwen2.5-coder-0.5b"


def row(lfc, persona, method, seed, before, after, **extra):
    """A row as ``run_one`` writes it for a cell run now: what it ran with comes from the chat launcher."""
    config = lfc.chat_config([])
    base = {"model": MODEL, "persona": persona, "method": method, "seed": seed,
            "steps_budget": 16, "metrics": lfc.METRICS, "before": before, "after": after, "steps": 16}
    if method in lfc.JUDGE_ONLY:
        base.update(recipe=lfc.RECIPE, wishes=lfc.WISHES)
    if method in lfc.HINDSIGHT:
        base.update(rubric=lfc.RUBRIC, hindsight_answered=config.serve.hindsight_answered)
    if method in lfc.OPD_METHODS:
        base["w_opd"] = config.trainer.w_opd
    return {**base, **extra}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def line_of(text, name):
    return next(line for line in text.splitlines() if line.startswith(f"{name} "))


def test_table_shows_mean_std_and_gain_over_seeds_and_keeps_other_rows_apart(lfc, launcher, tmp_path):
    results = tmp_path / "results.jsonl"
    weight = f"{launcher.trainer.w_opd:g}"
    write(results, [
        row(lfc, "ta", "hybrid", 0, 0.40, 0.50),
        row(lfc, "ta", "hybrid", 1, 0.40, 0.30),
        row(lfc, "ta", "hybrid", 2, 0.40, 0.90, w_opd=0.5),  # trained at another OPD weight: not averaged in
        row(lfc, "ta", "hybrid", 0, 0.40, 0.60, sets=["trainer.hint_format=header"]),
        {**row(lfc, "ta", "hybrid", 0, 0.10, 0.90), "model": "smollm2-135m"},  # another model's table
    ])
    text = lfc.table(results, MODEL)
    assert text.splitlines()[0] == f"{MODEL}:"
    hybrid = line_of(text, f"hybrid[trainer.w_opd={weight}]")
    assert "0.40 ± 0.14 [2] +0.00" in hybrid  # mean of 0.5 and 0.3, sample std 0.1414
    assert hybrid.count("missing") == 2  # student and teacher
    assert "0.90 ± 0.00 [1] +0.50" in line_of(text, "hybrid[trainer.w_opd=0.5]")
    ablation = line_of(text, f"hybrid[trainer.hint_format=header][trainer.w_opd={weight}]")
    assert "0.60 ± 0.00 [1] +0.20" in ablation
    assert "0.10" not in text and "smollm2" not in text
    assert line_of(text, "base").count("missing") == 3


def test_the_table_is_the_results_file_and_never_the_archive(lfc, tmp_path):
    results, archive = tmp_path / "results.jsonl", tmp_path / "archive" / "results.jsonl"
    write(results, [row(lfc, "teacher", "base", 0, 0.50, 0.50)])
    archive.parent.mkdir()
    write(archive, [{**row(lfc, "student", "base", 0, 0.55, 0.55, metrics=1), "archived": "old checks"}])
    assert [r["persona"] for r in lfc.read_rows(results, MODEL)] == ["teacher"]
    assert line_of(lfc.table(results, MODEL), "base").count("missing") == 2  # the archived student row is no result
    assert ("student", "base", 0) not in lfc.done_cells(results, MODEL)  # so the cell is run again


def test_another_simulated_person_is_a_row_of_its_own(lfc, launcher, tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [row(lfc, "teacher", "hindsight", 0, 0.5, 0.6, user_voice="all"),
                    row(lfc, "teacher", "hindsight", 0, 0.5, 0.4, user_model="qwen2.5-coder-1.5b"),
                    row(lfc, "teacher", "hindsight", 0, 0.5, 0.5)])
    text = lfc.table(results, MODEL)
    siblings = f"[serve.hindsight_answered={launcher.serve.hindsight_answered}]"
    assert "0.60 ± 0.00 [1] +0.10" in line_of(text, f"hindsight/voice=all{siblings}")
    assert "0.40 ± 0.00 [1] -0.10" in line_of(text, f"hindsight/user=qwen2.5-coder-1.5b{siblings}")
    assert "0.50 ± 0.00 [1] +0.00" in line_of(text, f"hindsight{siblings}")
    assert not any("--method hindsight --seed 0" in c and "teacher" in c for c in lfc.missing(results, MODEL))


def test_missing_lists_exactly_the_cells_not_run(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    trained = len(lfc.METHODS) - len(lfc.UNTRAINED)
    # nothing run: base/prompting once, the rest x 3 seeds
    assert len(lfc.missing(results, MODEL)) == 2 * 3 + trained * 3 * 3
    write(results, [row(lfc, "ta", "hybrid", 1, 0.4, 0.4), row(lfc, "ta", "base", 0, 0.4, 0.4),
                    row(lfc, "ta", "hybrid", 2, 0.4, 0.4, sets=["trainer.lr=1e-5"])])  # an ablation fills no cell
    todo = lfc.missing(results, MODEL)
    assert len(todo) == 2 * 3 + trained * 3 * 3 - 2
    assert not any("--persona ta --method hybrid --seed 1" in c for c in todo)
    assert any("--persona ta --method hybrid --seed 2" in c for c in todo)
    assert not any("--persona ta --method base" in c for c in todo)
    assert all("--max-minutes" in c for c in todo if "--method hybrid" in c)  # a judge-only cell is capped
    assert all("--model smollm2-135m" in c for c in lfc.missing(results, "smollm2-135m"))  # not the default model


def test_transcribed_rows_without_a_step_count_are_tabled_and_labelled(lfc, launcher, tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [row(lfc, "teacher", "hybrid", 1, 0.25, 0.19, steps=None, transcribed="from an old README"),
                    row(lfc, "teacher", "hybrid", 2, 0.25, 0.13, steps=12, max_minutes=30, conversations=80)])
    text = lfc.table(results, MODEL)
    assert "0.16 ± 0.04 [2] -0.09" in text
    assert "1 rows transcribed from an earlier README" in text
    name = f"hybrid[trainer.w_opd={launcher.trainer.w_opd:g}]"
    assert f"teacher x {name} x seed 2: 12 of 16 steps" in text  # a real short cell is still reported
    assert "seed 1:" not in text  # an unknown step count is not reported as short


def test_the_committed_results_hold_current_rows_that_carry_what_they_ran_with(lfc):
    """The default results file lives in the repository (a run's machine does not outlive it); every row in it
    names its model and what the table keys on (the OPD weight and answered siblings it trained with, the
    versions of the recipe and judges it ran with, all current), and the rows that a change to the checks, the
    recipe or a judge made stale are in the archive, each saying why, and never in the table."""
    assert lfc.RESULTS.is_relative_to(ROOT / "benchmarks")
    every = lfc.all_rows(lfc.RESULTS)
    keys = {"model", "persona", "method", "seed", "before", "after", "metrics"}
    assert every and all(keys <= r.keys() for r in every)
    for r in every:
        assert r["metrics"] <= lfc.METRICS and "archived" not in r
        if r["method"] in lfc.JUDGE_ONLY:
            assert r["recipe"] == lfc.RECIPE
        if r["method"] in lfc.HINDSIGHT:
            assert r["rubric"] == lfc.RUBRIC and lfc.answered_siblings(r) is not None
        if r["method"] in lfc.OPD_METHODS:
            assert lfc.opd_weight(r) is not None
        if r.get("user_model"):
            assert r["wishes"] == lfc.WISHES
    archived = lfc.all_rows(lfc.ARCHIVE)
    assert archived and all(r.get("archived") and "model" in r for r in archived)
    assert not [r for r in archived if {k: v for k, v in r.items() if k != "archived"} in every]
    for model in lfc.models_in(lfc.RESULTS):
        assert lfc.table(lfc.RESULTS, model).splitlines()[1].startswith("method")


def test_the_committed_results_page_is_generated_from_the_committed_rows(lfc):
    """docs/results/learning_from_conversation.md is what ``--markdown`` writes from the results file: never
    edited by hand, and regenerated with every row appended."""
    page = (ROOT / lfc.PAGE).read_text()
    assert page == lfc.markdown(lfc.RESULTS), (
        f"regenerate it: .venv/bin/python benchmarks/learning_from_conversation.py --markdown {lfc.PAGE}")


@pytest.mark.parametrize("where, moved", [
    ({"persona": "ta", "metrics": "3"}, 2),  # a change to the TA's checks voids the TA rows scored with the old ones
    ({"method": "hindsight", "rubric": "4"}, 1),  # a change to the rubric judge: the hindsight rows it trained
])
def test_a_change_moves_the_rows_it_makes_stale_to_the_archive(lfc, tmp_path, where, moved):
    results, archive = tmp_path / "results.jsonl", tmp_path / "archive" / "results.jsonl"
    rows = [row(lfc, "teacher", "base", 0, 0.50, 0.50, metrics=3),
            row(lfc, "ta", "base", 0, 0.45, 0.45, metrics=3),
            row(lfc, "ta", "prompting", 0, 0.30, 0.30, metrics=3),
            row(lfc, "ta", "base", 1, 0.45, 0.45),
            row(lfc, "teacher", "hindsight", 0, 0.50, 0.60, rubric=4)]
    write(results, rows)
    assert lfc.archive_rows(where, "the checks changed", results, archive) == moved
    kept, gone = lfc.all_rows(results), lfc.all_rows(archive)
    assert len(kept) == len(rows) - moved and len(gone) == moved
    assert all(r["archived"] == "the checks changed" and all(str(r[k]) == v for k, v in where.items()) for r in gone)
    assert [{k: v for k, v in r.items() if k != "archived"} for r in gone] == [
        r for r in rows if all(str(r.get(k)) == v for k, v in where.items())]
    assert lfc.archive_rows(where, "again", results, archive) == 0  # nothing left to move
    with pytest.raises(ValueError):
        lfc.archive_rows({}, "everything", results, archive)


def test_a_row_is_named_by_the_opd_weight_it_trained_at_wherever_the_weight_came_from(lfc):
    """The launcher's weight may change: a row's name comes from the weight it recorded or was given with
    ``--set``, so the rows trained at the old weight keep their names and the new weight's rows join the
    ``--set`` rows of the same weight."""
    old = {"persona": "teacher", "method": "hindsight_hybrid", "temperature": 0.7, "hindsight_answered": 0}
    explicit = {**old, "sets": ["policy.dtype=float32", "trainer.w_opd=0.3"]}
    recorded = {**old, "sets": ["policy.dtype=float32"], "w_opd": 0.3}
    both = "hindsight_hybrid@T0.7[policy.dtype=float32][serve.hindsight_answered=0][trainer.w_opd=0.3]"
    assert lfc.label(explicit) == lfc.label(recorded) == both
    assert lfc.label({**old, "w_opd": 1.0}) == lfc.label({**old, "sets": ["trainer.w_opd=1.0"], "w_opd": 0.3}) \
        == "hindsight_hybrid@T0.7[serve.hindsight_answered=0][trainer.w_opd=1]"  # the last --set wins
    no_opd_term = {"persona": "ta", "method": "hindsight", "w_opd": 0.3, "hindsight_answered": 1}
    assert lfc.label(no_opd_term) == "hindsight[serve.hindsight_answered=1]"
    assert lfc.opd_weight({"method": "binary"}) is None and lfc.opd_weight({"method": "opd", "w_opd": 0.5}) == 0.5
    with pytest.raises(KeyError):  # an OPD row that says nothing of its weight is not a row of the table
        lfc.opd_weight({"method": "opd"})


def test_a_cell_run_now_is_named_by_the_launchers_opd_weight_unless_set(lfc, launcher):
    shipped = launcher.trainer.w_opd
    named = lfc.current_label("hybrid", 1.0, [], None, "first")
    assert named == f"hybrid[trainer.w_opd={shipped:g}]" == lfc.grid()[lfc.METHODS.index("hybrid")]
    assert lfc.current_label("hybrid", 1.0, [f"trainer.w_opd={shipped}"], None, "first") == named
    assert lfc.current_label("hybrid", 1.0, ["trainer.w_opd=0.25"], None, "first") == "hybrid[trainer.w_opd=0.25]"


def test_the_missing_cells_commands_fill_the_tables_first_rows_whatever_the_launcher_ships(lfc, tmp_path, monkeypatch):
    """The first rows are each method as the chat launcher runs it now: after a launcher change a command
    ``--missing`` prints fills the row it names (no pinned overrides), and running it again finds the cell done."""
    shipped = lfc.chat_config

    def changed(overrides=()):
        return shipped(["trainer.w_opd=0.5", "serve.hindsight_answered=2", *overrides])

    monkeypatch.setattr(lfc, "chat_config", changed)
    first = lfc.grid()
    assert "hybrid[trainer.w_opd=0.5]" in first
    assert "hindsight_hybrid[serve.hindsight_answered=2][trainer.w_opd=0.5]" in first
    results = tmp_path / "results.jsonl"
    todo = lfc.missing(results, MODEL)
    assert not any("--set" in c for c in todo)
    for command in todo:
        words = command.split()
        method = words[words.index("--method") + 1]
        assert lfc.current_label(method, 1.0, [], None, "first") == first[lfc.METHODS.index(method)], command
    config = changed()
    write(results, [{"model": MODEL, "persona": "ta", "method": "hybrid", "seed": 0, "w_opd": config.trainer.w_opd,
                     "before": 0.4, "after": 0.4}])
    assert len(lfc.missing(results, MODEL)) == len(todo) - 1


def test_a_hindsight_row_is_named_by_its_answered_siblings_wherever_they_came_from(lfc, launcher):
    """A count from the launcher (recorded) and the same count from ``--set`` name one row, in the same place
    whatever the order of the overrides."""
    old = {"persona": "ta", "method": "hindsight_hybrid", "temperature": 0.7, "hindsight_answered": 0,
           "sets": ["policy.dtype=float32", "trainer.w_opd=0.3"]}
    explicit = {**old, "sets": ["policy.dtype=float32", "trainer.w_opd=0.3", "serve.hindsight_answered=1"]}
    recorded = {**old, "hindsight_answered": 1, "w_opd": 0.3, "sets": ["policy.dtype=float32"]}
    none = "hindsight_hybrid@T0.7[policy.dtype=float32][serve.hindsight_answered=0][trainer.w_opd=0.3]"
    assert lfc.label(old) == none
    one = "hindsight_hybrid@T0.7[policy.dtype=float32][serve.hindsight_answered=1][trainer.w_opd=0.3]"
    assert lfc.label(explicit) == lfc.label(recorded) == one
    reordered = {**old, "sets": ["serve.hindsight_answered=1", "trainer.w_opd=0.3", "policy.dtype=float32"]}
    assert lfc.label(reordered) == one
    assert lfc.answered_siblings({"method": "hybrid", "hindsight_answered": 1}) is None
    shipped = launcher.serve.hindsight_answered
    named = lfc.current_label("hindsight_hybrid", 0.7, ["trainer.w_opd=0.3"], None, "first")
    assert named == lfc.current_label("hindsight_hybrid", 0.7, ["trainer.w_opd=0.3",
                                                                f"serve.hindsight_answered={shipped}"], None, "first")


def test_a_cell_short_of_its_steps_says_which_cap_stopped_it(lfc, launcher, tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [
        row(lfc, "teacher", "oracle_grpo", 0, 0.48, 0.58, steps=12, sets=["policy.device=cuda", "loop.max_minutes=7"]),
        row(lfc, "teacher", "hybrid", 0, 0.5, 0.5, steps=9, max_minutes=17.0, conversations=119,
            cap_ends_training=True),
        row(lfc, "teacher", "hybrid", 1, 0.5, 0.5, steps=11, max_minutes=30.0, conversations=77),
    ])
    text = lfc.table(results, MODEL)
    assert "seed 0: 12 of 16 steps within the 7-minute cap)" in text  # the oracle's cap is its --set
    assert "seed 0: 9 of 16 steps within the 17.0-minute cap, 119 conversations)" in text
    # a row from before the cap stopped the trainer says its steps may have trained past the cap
    assert ("seed 1: 11 of 16 steps by the end of the run (conversations stopped at the 30.0-minute cap, "
            "steps due then trained past it), 77 conversations)") in text


def test_the_table_says_where_its_rows_ran(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    fast, slow = "x86_64 2 cores, native bfloat16", "x86_64 2 cores, no native bfloat16"
    write(results, [row(lfc, "teacher", "base", 0, 0.5, 0.5, host=fast),
                    row(lfc, "ta", "base", 0, 0.4, 0.4, host=fast),
                    row(lfc, "student", "base", 0, 0.6, 0.6, host=slow),
                    row(lfc, "teacher", "prompting", 0, 0.6, 0.6, host=fast, hardware="NVIDIA H100 80GB"),  # a GPU
                    row(lfc, "student", "prompting", 0, 0.6, 0.7)])  # written before rows recorded it
    text = lfc.table(results, MODEL)
    assert text.splitlines()[-1] == (f"ran on: NVIDIA H100 80GB (1 row); not recorded (1 row); {fast} (2 rows); "
                                     f"{slow} (1 row)")
    assert lfc.host().startswith(f"{lfc.platform.machine()} ")
    assert lfc.host().endswith("bfloat16")


def test_the_results_page_holds_each_models_table_hardware_and_rows(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    checks_before, checks_after = {"names_student": 1.0, "short": 0.5}, {"names_student": 1.0, "short": 0.75}
    write(results, [row(lfc, "teacher", "hindsight_hybrid", 0, 0.44, 0.60, host="x86_64 2 cores, native bfloat16",
                        checks_before=checks_before, checks_after=checks_after, wall_s=1500.0),
                    {**row(lfc, "teacher", "base", 0, 0.25, 0.25), "model": "smollm2-135m"}])
    page = lfc.markdown(results)
    assert page.startswith("# Learning from the conversation")
    assert f"Generated by `benchmarks/learning_from_conversation.py --markdown {lfc.PAGE}`" in page
    assert page.index(f"## {lfc.default_model()} (the chat launcher's policy)") < page.index("## smollm2-135m")
    assert "Hardware (each row's `host` or `hardware`): x86_64 2 cores, native bfloat16 (1 row)." in page
    assert lfc.table(results, MODEL) in page and lfc.table(results, "smollm2-135m") in page
    assert "| teacher | 0 | 0.440 → 0.600 | 16 of 16 | 25.0 | x86_64 2 cores, native bfloat16 | " \
           "names_student 1.00, short 0.50 → 0.75 |" in page


def test_the_curves_show_each_kept_step_between_before_and_after(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    checks = {"names": 1.0, "short": 0.5}
    curve = [{"step": 4, "score": 0.55, "checks": {"names": 0.9, "short": 0.8}},
             {"step": 8, "score": 0.60, "checks": {"names": 0.8, "short": 1.0}}]
    write(results, [row(lfc, "teacher", "hindsight_hybrid", 0, 0.44, 0.48, checks_before=checks,
                        checks_after={"names": 0.7, "short": 0.6}, curve=curve, host="x86_64 2 cores"),
                    row(lfc, "teacher", "hindsight_hybrid", 1, 0.44, 0.50)])  # no curve: not shown
    lines = lfc.curves(results, MODEL).splitlines()
    name = lfc.label(row(lfc, "teacher", "hindsight_hybrid", 0, 0.44, 0.48))
    assert lines[0] == f"teacher x {name} x seed 0 (x86_64 2 cores):"
    assert lines[1].split() == ["step", "0", "4", "8", "16"]
    assert lines[2].split() == ["score", "0.44", "0.55", "0.60", "0.48"]
    assert lines[3].split() == ["names", "1.00", "0.90", "0.80", "0.70"]
    assert lines[4].split() == ["short", "0.50", "0.80", "1.00", "0.60"] and len(lines) == 5
    write(results, [row(lfc, "teacher", "hindsight_hybrid", 1, 0.44, 0.50)])
    assert "no row has a curve" in lfc.curves(results, MODEL)
