"""benchmarks/wish_judge.py: a small hand-made items file scored by a cues-only judge and by the tiny random
model; the counts, the agreement arithmetic (an unsure or uncheckable verdict never agrees), the split filter,
the row it appends and the page line of a row."""

import json

import pytest

from benchmarks.wish_bench.checks import met
from clawgym.personal.rubric import RubricJudge, WishCheck
from tests.scripts import load_script

SUMMARY = "Summarise this: The river flooded the town twice this spring, and the council now plans a new wall."
TRIP = "Plan me a day in Lisbon on a small budget."
SHORT = "The town flooded twice this spring; the council plans a wall."
LONG = " ".join(["The river rose and the town flooded."] * 10)  # 70 words
EXCITED = "The town flooded twice this spring! The council plans a new wall."


def item(request: str, reply: str, wish: str, wish_id: str, split: str, label: bool | None = None) -> dict:
    return {"kind": wish_id.split(".")[0], "request": request, "request_index": 0, "reply": reply, "wish": wish,
            "wish_id": wish_id, "split": split, "model": "hand",
            "met": met(wish_id, request, reply) if label is None else label}


ITEMS = [
    item(SUMMARY, SHORT, "40 words max", "summaries.max_40", "dev"),  # met; the cues decide: agree
    item(SUMMARY, LONG, "40 words max", "summaries.max_40", "dev"),  # unmet; the cues decide: agree
    item(SUMMARY, "", "keep the whole thing under 120 words", "work_email.under_120", "dev"),  # empty: unmet, agree
    item(SUMMARY, SHORT, "no exclamation marks, they read as unprofessional", "work_email.no_exclamation", "dev"),
    item(SUMMARY, EXCITED, "no exclamation marks, they read as unprofessional", "work_email.no_exclamation", "dev"),
    item(SUMMARY, SHORT, "email me the summary", "hand.email", "dev", label=False),  # uncheckable: never agrees
    item(TRIP, "Morning, Jo: walk Alfama, then a cheap lunch.", "call me Jo", "traveller.call_jo", "test"),
    item(TRIP, "Walk Alfama, then a cheap lunch.", "call me Jo", "traveller.call_jo", "test"),
]


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/wish_judge.py")


@pytest.fixture
def items_file(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in ITEMS))
    return path


@pytest.fixture(scope="module")
def tiny():
    from clawgym.inference.hf import HFPolicy

    return HFPolicy.from_pretrained("tiny-random")


def test_the_labels_are_what_the_items_say():
    assert [i["met"] for i in ITEMS] == [True, False, False, True, False, False, True, False]


def test_the_split_filter_and_the_limit(bench, items_file):
    dev = bench.read_items(items_file, "dev")
    assert len(dev) == 6 and {i["split"] for i in dev} == {"dev"}
    test = bench.read_items(items_file, "test")
    assert len(test) == 2 and {i["wish_id"] for i in test} == {"traveller.call_jo"}
    spread = bench.read_items(items_file, "dev", limit=3)
    assert [i["reply"] for i in spread] == [dev[0]["reply"], dev[2]["reply"], dev[4]["reply"]]  # every other one
    assert bench.read_items(items_file, "dev", limit=99) == dev
    job = bench.job_of(dev[0])
    assert job == (["40 words max"], [{"role": "user", "content": SUMMARY}], SHORT)  # one wish, the product's context


def test_cues_only_judge_counts_unsure_and_uncheckable_against_agreement(bench, items_file):
    items = bench.read_items(items_file, "dev")
    lines = []
    checks, seconds = bench.judge_items(RubricJudge(None, cues=True), items, batch=4, progress=lines.append)
    assert len(lines) == 2 and lines[-1].startswith("  6/6 items judged") and seconds >= 0  # two check_many calls
    assert [c.source for c in checks] == ["cues", "cues", "cues", "unsure", "unsure", "uncheckable"]
    counts = bench.summarise(items, checks)
    assert counts["n"] == 6 and counts["met"] == 2 and counts["agree"] == 3 and counts["undecided"] == 3
    assert counts["by_source"] == {"cues": {"n": 3, "met": 1, "agree": 3}, "unsure": {"n": 2, "met": 1, "agree": 0},
                                   "uncheckable": {"n": 1, "met": 0, "agree": 0}}
    assert list(counts["by_source"]) == ["cues", "unsure", "uncheckable"]  # in table order
    assert counts["per_wish"]["summaries.max_40"] == {"wish": "40 words max", "n": 2, "met": 1, "agree": 2,
                                                      "sources": {"cues": 2}}
    assert counts["per_wish"]["work_email.no_exclamation"]["agree"] == 0
    assert counts["model_auc"] is None and counts["model_auc_n"] == 0  # the model decided nothing

    test = bench.read_items(items_file, "test")
    checks, _ = bench.judge_items(RubricJudge(None, cues=True), test, progress=None)
    counts = bench.summarise(test, checks)
    assert [c.met for c in checks] == [True, False] and counts["agree"] == 2 and counts["undecided"] == 0


def test_agreement_arithmetic_and_the_auc(bench):
    items = [{"wish_id": "k.w", "wish": "w", "met": label} for label in (True, True, False, False)]
    checks = [WishCheck("w", True, "model", 2.0), WishCheck("w", False, "model", -1.0),
              WishCheck("w", False, "model", -0.5), WishCheck("w", None, "unsure", 0.0)]
    counts = bench.summarise(items, checks)
    assert counts["agree"] == 2 and counts["undecided"] == 1  # an unsure verdict on an unmet item still disagrees
    assert counts["model_auc_n"] == 3 and counts["model_auc"] == pytest.approx(0.5)  # 2.0 > -0.5, -1.0 < -0.5
    assert bench.auc([1.0, 1.0], [True, False]) == 0.5 and bench.auc([1.0], [True]) is None
    with pytest.raises(ValueError):
        bench.summarise(items, checks[:2])


def test_a_run_on_the_tiny_random_model_appends_a_row_and_the_page_shows_it(bench, items_file, tmp_path, tiny,
                                                                            capsys):
    results = tmp_path / "wish_judge.jsonl"
    assert bench.main(["--items", str(items_file), "--judge-model", "tiny-random", "--results", str(results),
                       "--batch", "4"], policy=tiny) == 0
    out = capsys.readouterr().out
    assert "6/6 items judged" in out and "agreement" in out and "work_email.no_exclamation" in out
    row = json.loads(results.read_text().splitlines()[0])
    assert row["judge_model"] == "tiny-random" and row["split"] == "dev" and row["cues"] and row["read_facts"]
    assert row["n"] == 6 and row["met"] == 2 and row["reply_models"] == ["hand"] and row["limit"] is None
    sources = row["by_source"]
    assert sources["cues"] == {"n": 3, "met": 1, "agree": 3} and sources["uncheckable"]["n"] == 1
    assert sources["model"]["n"] == 2 and "unsure" not in sources  # the model decides what the cues left open
    assert row["model_auc_n"] == 2 and row["model_auc"] in (0.0, 0.5, 1.0)
    assert row["agree"] == 3 + sources["model"]["agree"] and row["undecided"] == 1
    assert row["forward_prompts"] == 2 and row["s_per_decision"] == pytest.approx(row["judge_s"] / 6, abs=1e-3)
    assert {"host", "commit", "wall_s", "items_sha", "refusals_fail"} <= set(row)

    assert bench.main(["--items", str(items_file), "--judge-model", "tiny-random", "--results", str(results),
                       "--no-cues", "--split", "test"], policy=tiny) == 0
    alone = json.loads(results.read_text().splitlines()[1])
    assert not alone["cues"] and not alone["read_facts"] and alone["split"] == "test" and alone["n"] == 2
    assert alone["by_source"]["model"]["n"] == 2 and "tune nothing" in capsys.readouterr().out

    page = tmp_path / "page.md"
    assert bench.main(["--results", str(results), "--markdown", str(page)]) == 0  # runs nothing
    text = page.read_text()
    assert "do not edit by hand" in text and "wish_judge.py --markdown docs/results/wish_judge.md` from" in text
    assert f"from `{results}`" in text  # outside the repository: the whole path
    assert bench.table_line(row) in text and bench.table_line(alone) in text
    assert f"{row['host']} (2 rows)" in text


def test_the_page_line_of_a_row(bench):
    row = {"judge_model": "qwen2.5-coder-0.5b", "cues": True, "split": "dev", "n": 200, "limit": None, "met": 80,
           "agree": 150, "undecided": 10, "by_source": {"cues": {"n": 50, "met": 20, "agree": 48},
                                                        "model": {"n": 140, "met": 56, "agree": 102},
                                                        "unsure": {"n": 10, "met": 4, "agree": 0}},
           "model_auc": 0.6512, "model_auc_n": 140, "s_per_decision": 0.4321, "reply_models": ["qwen2.5-coder-0.5b"],
           "items_sha": "abc123def456", "commit": "1234567", "host": "x86_64 2 cores"}
    assert bench.table_line(row) == (
        "| qwen2.5-coder-0.5b | cues and facts | dev | 200 | 40.0% | 75.0% | 5.0% | – | 25.0%, 96.0% | – "
        "| 70.0%, 72.9% | 0.65 (140) | 0.432 | qwen2.5-coder-0.5b (abc123def456) | 1234567 | x86_64 2 cores |")
    assert "| 200 (limit 200) |" in bench.table_line({**row, "limit": 200, "cues": False})
    assert "| model alone |" in bench.table_line({**row, "cues": False})
    compiled = {**row, "cues": False, "wish_checks": {"accept": "consensus", "drafts": 6},
                "by_source": {**row["by_source"], "compiled": {"n": 100, "met": 40, "agree": 90}}}
    assert "| compiled checks (consensus, 6 drafts), model | dev |" in bench.table_line(compiled)
    assert "| 5.0% | 50.0%, 90.0% | 25.0%, 96.0% |" in bench.table_line(compiled)


def test_wish_checks_take_a_few_wishes_spread_over_the_split(bench, items_file):
    dev = bench.read_items(items_file, "dev")
    two = bench.few_wishes(dev, 2, None)
    assert {i["wish_id"] for i in two} == {"summaries.max_40", "work_email.no_exclamation"}  # spread over the four
    assert len(bench.few_wishes(dev, 2, 1)) == 1


def test_cached_drafts_compile_without_the_model_and_only_the_first_drafts_count(bench):
    pytest.importorskip("shutil").which("bwrap") or pytest.skip("bubblewrap not installed")
    short = "```python\ndef met(request, reply):\n    return len(reply.split()) <= 3\n```"
    always = "```python\ndef met(request, reply):\n    return True\n```"
    cached = {"wish": "keep it short", "request": "q", "seconds": 40.0, "answers": [always, short],
              "meet": ["Fine.", "Yes, at noon."],
              "miss": ["A long reply that goes on and on.", "Another long one here."]}
    replies = [("q", "Ok."), ("q", "This one is long, far longer than three words.")]
    kept, figures = bench.compile_wishes(None, [("keep it short", "q", replies)], drafts=2, progress=None,
                                         answers={"keep it short": cached})
    assert kept == {"keep it short": bench_code(short)} and figures["outcomes"][0]["cached"]
    assert figures["outcomes"][0]["seconds"] >= 40.0  # the model's time when it wrote them
    kept, _ = bench.compile_wishes(None, [("keep it short", "q", replies)], drafts=1, progress=None,
                                   answers={"keep it short": cached})
    assert kept == {"keep it short": bench_code(always)}  # one draft: the greedy one, kept as the best guess


def bench_code(answer: str) -> str:
    from clawgym.personal.wish_checks import parse_code

    return parse_code(answer)


def test_a_cues_only_judge_with_compiled_checks_decides_by_them_first(bench, items_file):
    pytest.importorskip("shutil").which("bwrap") or pytest.skip("bubblewrap not installed")
    items = bench.read_items(items_file, "dev")[:2]  # "40 words max": met, then unmet
    judge = RubricJudge(None, cues=True)
    judge.checks_of = lambda wish: {wish: "def met(request, reply):\n    return len(reply.split()) > 40\n"}
    checks, _ = bench.judge_items(judge, items, progress=None)  # a wrong check, to see that it decides
    assert [(c.met, c.source) for c in checks] == [(False, "compiled"), (True, "compiled")]
    assert bench.decided_agreement(items, checks) == {"decided": 2, "agree": 0}
