"""benchmarks/rescore_cell.py: a void row (in the results' archive) is carried over to the current checks only
when replaying its training through them changes nothing the scripted person said, and then with held-out
scores taken again, into the results file."""

import json

import pytest

from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks
from tests.scripts import load_script

STUDENT = PERSONAS["student"]
SETS = ["policy.model=tiny-random", "policy.dtype=float32"]


@pytest.fixture(scope="module")
def rescore():
    return load_script("benchmarks/rescore_cell.py")


def void_row(lfc, steps=3, **extra):
    return {"model": "tiny-random", "persona": "student", "method": "hindsight_hybrid", "seed": 0,
            "steps_budget": 16, "steps": steps, "metrics": 3, "eval_tasks": 2, "temperature": 0.7, "sets": SETS,
            "user_voice": "all", "rubric": lfc.RUBRIC, "recipe": lfc.RECIPE, "w_opd": 0.3, "hindsight_answered": 1,
            "before": 0.5, "after": 0.75, "checks_before": {}, "checks_after": {}, "curve": [{"step": 4}],
            "archived": "scored with the persona checks' version 3", **extra}


def write_turns(path, replies_and_said):
    """A turn log as the gateway writes it: each served reply, then the person's next message."""
    task = next(t for t in bundled_tasks() if t.data["persona"] == "student")
    lines = []
    for i, (reply, said) in enumerate(replies_and_said):
        context = [{"role": "system", "content": "x"}, {"role": "user", "content": STUDENT.opener(task)}]
        lines.append({"event": "turn", "id": f"turn:{i}", "turn": {"context": context,
                                                                  "action": {"role": "assistant", "content": reply}}})
        lines.append({"event": "next_state", "id": f"next:{i}", "turn_id": str(i),
                      "messages": [{"role": "user", "content": said}]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return task


def setup_run(rescore, tmp_path, monkeypatch, row, replies_and_said):
    monkeypatch.chdir(tmp_path)
    lfc = rescore.lfc
    run = lfc.run_dir("tiny-random", "student", lfc.label(row), 0)
    run.mkdir(parents=True)
    write_turns(run / "turns.jsonl", replies_and_said)
    results = tmp_path / "results.jsonl"
    results.write_text("")
    archive = tmp_path / "archive" / "results.jsonl"  # where --archive put the void row: the results file's archive
    archive.parent.mkdir()
    archive.write_text(json.dumps(row) + "\n")
    return run, results


def test_replay_names_every_next_state_the_current_checks_would_change(rescore, tmp_path):
    task = write_turns(tmp_path / "turns.jsonl", [])
    with_list = "1. Add the packs.\n2. The answer is 50."
    opens_with_a_number = f"58. The answer is {task.answer}."
    write_turns(tmp_path / "turns.jsonl", [
        (with_list, STUDENT.feedback(with_list, task, "all")[0]),
        # what the old check made the person say: a complaint about a list the current check does not see
        (opens_with_a_number, "No numbered or bulleted lists please, my teacher will know it's AI. Write it as "
                              "normal sentences."),
    ])
    replayed, differs = rescore.replay(tmp_path / "turns.jsonl", "student", "all")
    assert replayed == 2 and len(differs) == 1 and "turn 1" in differs[0] and "58. The answer" in differs[0]
    replayed, differs = rescore.replay(tmp_path / "turns.jsonl", "teacher", "all")  # another persona's log
    assert replayed == 2 and all("not a conversation of the teacher persona" in line for line in differs)


def test_a_row_whose_training_would_differ_stays_void_and_nothing_is_appended(rescore, tmp_path, monkeypatch):
    row = void_row(rescore.lfc)
    run, results = setup_run(rescore, tmp_path, monkeypatch, row, [("58. Sure, here it is.", "No lists please.")])
    with pytest.raises(rescore.NotCarried, match="1 of 1 next states differ"):
        rescore.carry_over(run, results)
    assert results.read_text() == "" and (results.parent / "archive" / results.name).read_text().count("\n") == 1


@pytest.mark.parametrize("change, why", [
    ({"metrics": 99}, "already scored with the current checks"),
    ({"method": "oracle_grpo"}, "only judge-only rows"),
])
def test_rows_that_cannot_be_replayed_are_refused(rescore, tmp_path, monkeypatch, change, why):
    row = {**void_row(rescore.lfc), **change}
    run, results = setup_run(rescore, tmp_path, monkeypatch, row, [])
    with pytest.raises(rescore.NotCarried, match=why):
        rescore.carry_over(run, results)
    with pytest.raises(rescore.NotCarried, match="no row of"):
        rescore.carry_over(run.with_name("elsewhere"), results)


def test_a_replayed_row_is_scored_again_from_its_checkpoint(rescore, tmp_path, monkeypatch):
    lfc = rescore.lfc
    row = void_row(lfc)
    task = next(t for t in bundled_tasks() if t.data["persona"] == "student")
    plain = f"Emma has {task.answer} now."
    run, results = setup_run(rescore, tmp_path, monkeypatch, row, [(plain, STUDENT.feedback(plain, task, "all")[0])])
    from clawgym.rl.launch.build import build_stack

    stack = build_stack(lfc.config_for("hindsight_hybrid", 0, 16, tmp_path / "build", 0.7, tuple(SETS), "tiny-random"))
    stack.trainer.step = 2  # not the row's last step
    stack.trainer.save_checkpoint(run / "checkpoint")
    with pytest.raises(rescore.NotCarried, match="the checkpoint is step 2, the row's last step 3"):
        rescore.carry_over(run, results)
    stack.trainer.step = 3
    stack.trainer.save_checkpoint(run / "checkpoint")

    carried = rescore.carry_over(run, results)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert rows == [carried] and carried["metrics"] == lfc.METRICS and "archived" not in carried
    assert lfc.all_rows(results.parent / "archive" / results.name) == [row]  # the void row stays in the archive
    assert carried["rescored"]["from_metrics"] == 3 and carried["rescored"]["next_states_replayed"] == 1
    assert "curve" not in carried and carried["rescored"]["curve_dropped"]
    # the checkpoint holds the initial weights: the same greedy replies, scored with the current checks
    assert carried["before"] == carried["after"] and set(carried["checks_after"]) == {
        p.name for p in STUDENT.preferences}
    assert lfc.read_rows(results, "tiny-random") == [carried]
