"""The method table of benchmarks/learning_from_conversation.py is built over many sittings from a results
file; these check that it aggregates what it says (mean ± std over seeds, superseded and void rows kept
apart, ablations as rows of their own) and lists exactly the cells still to run."""

import json

import pytest

from clawgym.envs.openclaw_chat.personas import PERSONAS
from tests.scripts import ROOT, load_script


@pytest.fixture(scope="module")
def lfc():
    return load_script("benchmarks/learning_from_conversation.py")


MODEL = "qwen2.5-coder-0.5b"


def row(lfc, persona, method, seed, before, after, **extra):
    base = {"model": MODEL, "persona": persona, "method": method, "seed": seed,
            "steps_budget": 16, "metrics": lfc.METRICS, "before": before, "after": after, "steps": 16}
    if method in lfc.JUDGE_ONLY:
        base["recipe"] = lfc.RECIPE
    return {**base, **extra}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_table_shows_mean_std_and_gain_over_seeds_and_keeps_old_rows_apart(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [
        row(lfc, "ta", "hybrid", 0, 0.40, 0.50),
        row(lfc, "ta", "hybrid", 1, 0.40, 0.30),
        row(lfc, "ta", "hybrid", 2, 0.40, 0.40, recipe=2),  # an earlier recipe: not averaged in
        row(lfc, "ta", "hybrid", 0, 0.40, 0.60, sets=["trainer.hint_format=header"]),
        row(lfc, "teacher", "base", 0, 0.25, 0.25, metrics=1),  # old checks: void
        {**row(lfc, "ta", "hybrid", 0, 0.10, 0.90), "model": "smollm2-135m"},  # another model's table
    ])
    text = lfc.table(results, MODEL)
    assert text.splitlines()[0] == f"{MODEL}:"
    hybrid = next(line for line in text.splitlines() if line.startswith("hybrid "))
    assert "0.40 ± 0.14 [2] +0.00" in hybrid  # mean of 0.5 and 0.3, sample std 0.1414
    assert hybrid.count("missing") == 2  # student and teacher
    ablation = next(line for line in text.splitlines() if line.startswith("hybrid[trainer.hint_format=header]"))
    assert "0.60 ± 0.00 [1] +0.20" in ablation
    assert "superseded recipe 2: ta x hybrid x seed 2" in text
    assert "1 rows scored with persona checks since changed" in text
    base = next(line for line in text.splitlines() if line.startswith("base "))
    assert base.count("missing") == 3  # the void row is not shown as a result


def test_another_simulated_person_is_a_row_of_its_own(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    current = {"rubric": lfc.RUBRIC, "wishes": lfc.WISHES}
    write(results, [row(lfc, "teacher", "hindsight", 0, 0.5, 0.6, user_voice="all", **current),
                    row(lfc, "teacher", "hindsight", 0, 0.5, 0.4, user_model="qwen2.5-coder-1.5b", **current),
                    row(lfc, "teacher", "hindsight", 0, 0.5, 0.5, **current),
                    row(lfc, "teacher", "hindsight", 1, 0.5, 0.3),  # an earlier rubric judge: a row of its own
                    # the person's offers of help were still taken for wishes: a row of its own
                    row(lfc, "teacher", "hindsight", 0, 0.5, 0.2, user_model="qwen2.5-coder-1.5b",
                        rubric=lfc.RUBRIC)])
    lines = lfc.table(results, MODEL).splitlines()
    assert "0.20 ± 0.00 [1] -0.30" in next(line for line in lines
                                           if line.startswith("hindsight/user=qwen2.5-coder-1.5b/wishes1 "))
    assert "0.30 ± 0.00 [1] -0.20" in next(line for line in lines if line.startswith("hindsight/rubric1 "))
    assert "0.60 ± 0.00 [1] +0.10" in next(line for line in lines if line.startswith("hindsight/voice=all "))
    assert "0.40 ± 0.00 [1] -0.10" in next(line for line in lines
                                           if line.startswith("hindsight/user=qwen2.5-coder-1.5b "))
    assert "0.50 ± 0.00 [1] +0.00" in next(line for line in lines if line.startswith("hindsight "))
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


def test_transcribed_rows_without_a_step_count_are_tabled_and_labelled(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    write(results, [row(lfc, "teacher", "hybrid", 1, 0.25, 0.19, steps=None, transcribed="from an old README"),
                    row(lfc, "teacher", "hybrid", 2, 0.25, 0.13, steps=12, max_minutes=30, conversations=80)])
    text = lfc.table(results, MODEL)
    assert "0.16 ± 0.04 [2] -0.09" in text
    assert "1 rows transcribed from an earlier README" in text
    assert "teacher x hybrid x seed 2: 12 of 16 steps" in text  # a real short cell is still reported
    assert "seed 1:" not in text  # an unknown step count is not reported as short


def test_the_committed_results_are_what_the_readme_table_is_printed_from(lfc):
    """The default results file lives in the repository (a sitting's machine does not outlive it), and
    every row in it is readable and current, explicitly superseded, or void for a stated reason: the only
    void rows kept are the TA rows that the checks' version 3 voided (the TA's old score check) and the student
    and TA rows that version 4 voided (the old no-lists check), so the numbers docs/ quotes from them stay
    traceable."""
    assert lfc.RESULTS.is_relative_to(ROOT / "benchmarks")
    every = [json.loads(line) for line in lfc.RESULTS.read_text().splitlines() if line.strip()]
    for model in (lfc.LEGACY_MODEL, lfc.default_model()):  # rows written before rows named their model are SmolLM2's
        rows, void, superseded = lfc.read_rows(lfc.RESULTS, model)
        void_rows = [r for r in every if lfc.model_of(r) == model and not lfc.metrics_current(r)]
        assert rows and void == len(void_rows)
        assert {(r["persona"], r.get("metrics", 1)) for r in void_rows} <= {("ta", 2), ("ta", 3), ("student", 2)}
        assert all({"persona", "method", "seed", "before", "after"} <= r.keys() for r in rows + superseded)
        assert lfc.table(lfc.RESULTS, model).splitlines()[1].startswith("method")


def test_a_row_stays_current_until_a_rubric_change_touches_its_persona(lfc, monkeypatch):
    changes = lfc.RUBRIC_CHANGED  # every version after the first names the personas whose wishes it judges anew
    assert max(changes) == lfc.RUBRIC and all(set(who) <= set(lfc.PERSONAS) for who in changes.values())
    monkeypatch.setattr(lfc, "RUBRIC", 3)
    monkeypatch.setattr(lfc, "RUBRIC_CHANGED", {2: lfc.PERSONAS, 3: ("ta",)})  # the last change: a TA-only wish
    teacher = {"persona": "teacher", "method": "hindsight", "rubric": 2}
    ta = {**teacher, "persona": "ta"}
    assert lfc.rubric_current(teacher) and not lfc.rubric_current(ta)
    assert lfc.label(teacher) == "hindsight" and lfc.label(ta) == "hindsight/rubric2"
    assert not lfc.rubric_current({**teacher, "rubric": 1}) and lfc.rubric_current({**ta, "rubric": 3})


def test_a_row_is_void_once_a_checks_change_touches_its_persona(lfc, tmp_path, monkeypatch):
    """Version 3 made the TA's score check refuse a number over the scale ("58/10"): every TA row scored
    before it is void, while the teacher's and the student's rows of version 2 still count. Version 4 (the
    no-lists check) touched the student and the TA, never the teacher, whose checks it does not hold."""
    changes = lfc.METRICS_CHANGED
    assert max(changes) == lfc.METRICS and all(set(who) <= set(lfc.PERSONAS) for who in changes.values())
    assert "ta" in changes[3] and "teacher" not in changes[3] and "student" not in changes[3]
    assert set(changes[4]) == {p for p in lfc.PERSONAS if "no_lists" in {c.name for c in PERSONAS[p].preferences}}
    changes = {2: lfc.PERSONAS, 3: ("ta",)}  # the rest as of version 3
    monkeypatch.setattr(lfc, "METRICS", 3)
    monkeypatch.setattr(lfc, "METRICS_CHANGED", changes)
    results = tmp_path / "results.jsonl"
    write(results, [row(lfc, "teacher", "base", 0, 0.50, 0.50, metrics=2),
                    row(lfc, "ta", "base", 0, 0.45, 0.45, metrics=2),  # scored with the TA's old score check
                    row(lfc, "student", "base", 0, 0.55, 0.55, metrics=1),  # the first checks: void everywhere
                    row(lfc, "ta", "prompting", 0, 0.30, 0.30)])
    current, void, _ = lfc.read_rows(results, MODEL)
    assert [(r["persona"], r["method"]) for r in current] == [("teacher", "base"), ("ta", "prompting")]
    assert void == 2
    assert ("ta", "base", 0) not in lfc.done_cells(results, MODEL)  # a void cell is run again
    assert "2 rows scored with persona checks since changed" in lfc.table(results, MODEL)


def test_a_row_is_named_by_the_opd_weight_it_trained_at_wherever_the_weight_came_from(lfc):
    """The launcher's default weight may change; the rows trained at the old one keep their names and the
    new default's rows join the ``--set`` rows of the same weight, never the old default's."""
    old = {"persona": "teacher", "method": "hindsight_hybrid", "temperature": 0.7, "rubric": lfc.RUBRIC}
    explicit = {**old, "sets": ["policy.dtype=float32", "trainer.w_opd=0.3"]}
    recorded = {**old, "sets": ["policy.dtype=float32"], "w_opd": 0.3}
    assert lfc.label(old) == "hindsight_hybrid@T0.7"  # written before rows recorded their weight: 1.0
    both = "hindsight_hybrid@T0.7[policy.dtype=float32][trainer.w_opd=0.3]"
    assert lfc.label(explicit) == lfc.label(recorded) == both
    assert lfc.label({**old, "w_opd": 1.0}) == lfc.label({**old, "sets": ["trainer.w_opd=1.0"]}) == lfc.label(old)
    no_opd_term = {"persona": "ta", "method": "hindsight", "w_opd": 0.3, "rubric": lfc.RUBRIC}
    assert lfc.label(no_opd_term) == "hindsight"
    assert lfc.opd_weight({"method": "binary"}) is None and lfc.opd_weight({"method": "opd", "w_opd": 0.5}) == 0.5


def test_a_cell_run_now_is_named_by_the_launchers_opd_weight_unless_set(lfc):
    shipped = lfc.chat_config([]).trainer.w_opd
    named = lfc.current_label("hybrid", 1.0, [], None, "first")
    assert named == ("hybrid" if shipped == lfc.LEGACY_W_OPD else f"hybrid[trainer.w_opd={shipped:g}]")
    assert lfc.current_label("hybrid", 1.0, [f"trainer.w_opd={shipped}"], None, "first") == named
    assert lfc.current_label("hybrid", 1.0, ["trainer.w_opd=0.25"], None, "first") == "hybrid[trainer.w_opd=0.25]"


def test_the_missing_cells_commands_run_the_tables_own_rows_whatever_the_launcher_ships(lfc, tmp_path, monkeypatch):
    """A command ``--missing`` prints fills the cell it names even after the launcher's OPD weight or answered
    siblings changed, and running it again would find the cell done."""
    shipped = lfc.chat_config

    def changed(overrides=()):
        return shipped(["trainer.w_opd=0.3", "serve.hindsight_answered=1", *overrides])

    monkeypatch.setattr(lfc, "chat_config", changed)
    todo = lfc.missing(tmp_path / "none.jsonl", MODEL)
    for command in todo:
        words = command.split()
        method = words[words.index("--method") + 1]
        sets = [words[i + 1] for i, word in enumerate(words) if word == "--set"]
        assert lfc.current_label(method, 1.0, sets, None, "first") == method, command
    assert any("--set trainer.w_opd=1 --set serve.hindsight_answered=0" in c for c in todo)
    assert not any("--set" in c for c in todo if "--method binary " in c or "--method base " in c)


def test_a_hindsight_row_is_named_by_its_answered_siblings_wherever_they_came_from(lfc):
    """Rows written before rows recorded the count had none; a count from the launcher and the same count from
    ``--set`` name one row, in the same place whatever the order of the overrides."""
    old = {"persona": "ta", "method": "hindsight_hybrid", "temperature": 0.7, "rubric": lfc.RUBRIC,
           "sets": ["policy.dtype=float32", "trainer.w_opd=0.3"]}
    explicit = {**old, "sets": ["policy.dtype=float32", "trainer.w_opd=0.3", "serve.hindsight_answered=1"]}
    recorded = {**old, "hindsight_answered": 1, "w_opd": 0.3, "sets": ["policy.dtype=float32"]}
    assert lfc.label(old) == "hindsight_hybrid@T0.7[policy.dtype=float32][trainer.w_opd=0.3]"
    assert lfc.label({**old, "hindsight_answered": 0}) == lfc.label(old)
    one = "hindsight_hybrid@T0.7[policy.dtype=float32][serve.hindsight_answered=1][trainer.w_opd=0.3]"
    assert lfc.label(explicit) == lfc.label(recorded) == one
    reordered = {**old, "sets": ["serve.hindsight_answered=1", "trainer.w_opd=0.3", "policy.dtype=float32"]}
    assert lfc.label(reordered) == one
    assert lfc.answered_siblings({"method": "hybrid", "hindsight_answered": 1}) is None
    shipped = lfc.chat_config([]).serve.get("hindsight_answered", 0)
    named = lfc.current_label("hindsight_hybrid", 0.7, ["trainer.w_opd=0.3"], None, "first")
    assert named == lfc.current_label("hindsight_hybrid", 0.7, ["trainer.w_opd=0.3",
                                                                f"serve.hindsight_answered={shipped}"], None, "first")


def test_a_cell_short_of_its_steps_says_which_cap_stopped_it(lfc, tmp_path):
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
                    row(lfc, "student", "prompting", 0, 0.6, 0.7)])  # written before rows recorded it
    text = lfc.table(results, MODEL)
    assert text.splitlines()[-1] == f"ran on: not recorded (1 row); {fast} (2 rows); {slow} (1 row)"
    assert lfc.host().startswith(f"{lfc.platform.machine()} ")
    assert lfc.host().endswith("bfloat16")


def test_the_curves_show_each_kept_step_between_before_and_after(lfc, tmp_path):
    results = tmp_path / "results.jsonl"
    checks = {"names": 1.0, "short": 0.5}
    curve = [{"step": 4, "score": 0.55, "checks": {"names": 0.9, "short": 0.8}},
             {"step": 8, "score": 0.60, "checks": {"names": 0.8, "short": 1.0}}]
    write(results, [row(lfc, "teacher", "hindsight_hybrid", 0, 0.44, 0.48, checks_before=checks, rubric=lfc.RUBRIC,
                        checks_after={"names": 0.7, "short": 0.6}, curve=curve, host="x86_64 2 cores"),
                    row(lfc, "teacher", "hindsight_hybrid", 1, 0.44, 0.50)])  # no curve: not shown
    lines = lfc.curves(results, MODEL).splitlines()
    assert lines[0] == "teacher x hindsight_hybrid x seed 0 (x86_64 2 cores):"
    assert lines[1].split() == ["step", "0", "4", "8", "16"]
    assert lines[2].split() == ["score", "0.44", "0.55", "0.60", "0.48"]
    assert lines[3].split() == ["names", "1.00", "0.90", "0.80", "0.70"]
    assert lines[4].split() == ["short", "0.50", "0.80", "1.00", "0.60"] and len(lines) == 5
    write(results, [row(lfc, "teacher", "hindsight_hybrid", 1, 0.44, 0.50)])
    assert "no row has a curve" in lfc.curves(results, MODEL)
