"""benchmarks/fair_scheduling.py: its page is generated from its committed rows, and a row says how it was measured."""

import json

import pytest

from tests.scripts import ROOT, load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/fair_scheduling.py")


def test_the_page_is_generated_from_the_committed_rows(bench):
    page = (ROOT / bench.PAGE).read_text()
    assert page == bench.markdown(bench.RESULTS), (
        f"regenerate it: .venv/bin/python benchmarks/fair_scheduling.py --markdown {bench.PAGE}")
    rows = [json.loads(line) for line in bench.RESULTS.read_text().splitlines() if line.strip()]
    assert rows and all(r["cpu"] and r["command"] and r["commit"] and r["long_replies"] for r in rows)
    assert all(x["tokens"] <= r["max_output_tokens"] < r["long_asked"] for r in rows for x in r["long_replies"])


def test_a_row_is_one_line_of_the_table_and_the_percentiles_interpolate(bench, tmp_path):
    assert bench.percentile([], 50) is None
    assert bench.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5 and bench.percentile([1.0, 2.0], 95) == 1.95
    row = {"model": "m", "short_requests": 2, "short_max_tokens": 16, "alone_p50": 1.0, "alone_p95": 1.5,
           "with_long_p50": 2.0, "with_long_p95": 2.25, "long_asked": 100_000_000,
           "long_replies": [{"tokens": 512, "seconds": 120.4, "tokens_per_s": 4.25}],
           "cpu": "x86-64 2 cores, AVX-512/AMX",
           "load_before": [4.0, 3.0, 2.0], "load_after": [5.0, 4.0, 3.0], "command": "nice -n 19 x", "commit": "abc",
           "note": "shared"}
    results = tmp_path / "rows.jsonl"
    results.write_text(json.dumps(row) + "\n")
    page = bench.markdown(results)
    assert ("| m | 2 + 2 (16) | 1.00 / 1.50 s | 2.00 / 2.25 s | 1e+08 → 512 in 120 s (4.25 tok/s) "
            "| x86-64 2 cores, AVX-512/AMX | 4.00 → 5.00 | `nice -n 19 x` | abc |") in page
    assert "- m at abc: shared" in page
