"""benchmarks/result_accuracy.py counts, from the method table's turn logs, how many first replies state the
task's correct number, a wrong one, or none; these check the counting on a hand-written turn log."""

import json

import pytest

from clawgym.envs.openclaw_chat.personas import PERSONAS, bundled_tasks
from tests.scripts import load_script


@pytest.fixture(scope="module")
def accuracy():
    return load_script("benchmarks/result_accuracy.py")


def turn(prompt, reply, version, index=0):
    return {"event": "turn", "id": f"turn:{version}{index}", "turn": {
        "turn_index": index, "policy_version": version, "action": {"role": "assistant", "content": reply},
        "context": [{"role": "system", "content": "sys"}, {"role": "user", "content": prompt}]}}


def test_counts_right_wrong_and_missing_numbers_per_persona_and_weights(accuracy, tmp_path):
    task = next(t for t in bundled_tasks() if t.data["persona"] == "student")
    prompt, answer = PERSONAS["student"].opener(task), int(task.answer)
    run = tmp_path / "student-opd-0"
    run.mkdir()
    lines = [
        turn(prompt, f"The answer is {answer}.", 0),
        turn(prompt, f"The answer is {answer + 1}.", 0),
        turn(prompt, "Let me think about it.", 3),
        turn(prompt, f"The answer is {answer}.", 3, index=1),  # not a first reply: not counted
        turn("Can you help me with something else?", "The answer is 4.", 0),  # no bundled task
        {"event": "next_state", "turn_id": "00", "messages": []},
    ]
    (run / "turns.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"event": "tu')  # torn tail
    counts, unmatched = accuracy.count(tmp_path)
    assert counts == {("student", "initial", "right"): 1, ("student", "initial", "wrong"): 1,
                      ("student", "trained", "none"): 1}
    assert unmatched == 1
    table = accuracy.table(counts)
    assert "student  initial" in table and "student  trained" in table


def test_a_wrong_number_is_not_the_answer_even_if_the_right_one_appears_later(accuracy):
    assert accuracy.classify("The total is 48, or maybe 50.", 50) == "wrong"
    assert accuracy.classify("So the total is 50 apples.", 50) == "right"
    assert accuracy.classify("Add the packs to the apples.", 50) == "none"
