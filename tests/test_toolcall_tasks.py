"""ToolCall-v0's bundled tasks: enough of them, split, reproducible from the generator, oracle-checked."""

import json
from collections import Counter

import pytest

from clawgym.envs.toolcall import ToolCallEnv
from clawgym.envs.toolcall.answer import answers_match
from tests.scripts import ROOT, load_script

BUNDLED = ROOT / "clawgym" / "envs" / "toolcall" / "tasks.jsonl"


@pytest.fixture(scope="module")
def generator():
    return load_script("scripts/gen_toolcall_tasks.py")


def test_bundled_set_is_large_split_and_well_formed():
    tasks = ToolCallEnv.bundled_tasks()
    splits = Counter(task.split for task in tasks)
    assert len(tasks) >= 300 and splits["train"] >= 240 and splits["test"] >= 60
    assert len({task.prompt for task in tasks}) == len(tasks)
    families = Counter(task.data["family"] for task in tasks)
    assert len(families) >= 20
    test_families = {task.data["family"] for task in tasks if task.split == "test"}
    assert test_families == set(families)  # every family is evaluated
    for task in tasks:
        assert isinstance(task.answer, str) and task.answer
        assert "print(" in task.data["solution_code"]
        assert answers_match(task.answer, task.answer, decimals=task.data.get("decimals"))


def test_committed_file_is_what_the_generator_writes_and_every_oracle_agrees(generator, tmp_path):
    # generate() runs every solution program and fails unless it prints the generator's own answer
    out = tmp_path / "tasks.jsonl"
    assert generator.main(["--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == BUNDLED.read_text(encoding="utf-8")


def test_generation_depends_only_on_the_seed(generator):
    first = generator.generate(seed=5, per_family=2, verify=False)
    again = generator.generate(seed=5, per_family=2, verify=False)
    other = generator.generate(seed=6, per_family=2, verify=False)
    assert first == again
    assert [r["prompt"] for r in first] != [r["prompt"] for r in other]
    assert sum(a["prompt"] == b["prompt"] for a, b in zip(first, other)) <= 2


def test_oracle_programs_compute_rather_than_print_a_constant():
    for line in BUNDLED.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        code = record["data"]["solution_code"]
        assert f"print({record['answer']})" not in code and f"print('{record['answer']}')" not in code


def test_generator_helpers_are_exact(generator):
    import datetime
    from fractions import Fraction

    assert generator.round_half_up(Fraction(5, 2), 0) == "3" and generator.round_half_up(Fraction(-5, 2), 0) == "-3"
    assert generator.round_half_up(Fraction(1, 3), 4) == "0.3333"
    assert generator.sqrt_round_half_up(Fraction(2), 4) == "1.4142"
    for days in (-200000, -1, 0, 59, 60, 365, 10957, 200000):
        date = datetime.date(1970, 1, 1) + datetime.timedelta(days=days)
        assert generator.civil_from_days(days) == (date.year, date.month, date.day)
        assert generator.days_from_civil(date.year, date.month, date.day) == days
        assert generator.zeller_weekday(date.year, date.month, date.day) == date.strftime("%A")
