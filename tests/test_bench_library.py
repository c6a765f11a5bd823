"""`python -m benchmarks library`: ours against mem0's own library, end to end on a tiny file (issue 34)."""

from __future__ import annotations

import json

import pytest

from benchmarks.cli import bench_main
from benchmarks.library import render_library
from tests.test_bench import tiny_locomo  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


def test_library_against_ours_at_two_latencies(tiny_locomo, tmp_path, capsys):  # noqa: F811
    code = bench_main(
        ["library", "--dataset", str(tiny_locomo), "--conversations", "mini-1", "--latencies-ms", "0,20",
         "--judge-runs", "1", "--out", str(tmp_path / "bench"), "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    (res,) = json.loads(captured.out)["results"]
    assert list(res["rows"]) == ["0ms", "20ms"]
    for row in res["rows"].values():
        library, ours = row["library"], row["ours"]
        # One thread per speaker stream; every pair of the 8 turns added; every question searched.
        assert library["streams"] == 2 and library["adds"] == 2 * 4 and library["questions"] == 3
        assert library["ingest_s"] > 0 and library["search_s"] > 0 and library["http"]["errors"] == 0
        assert library["http"]["chat"] > 0 and library["http"]["embeddings"] > 0
        assert ours["n_questions"] == 3 and ours["http"]["errors"] == 0
        assert 0 < row["ours_ingest_s"] < ours["wall_s"]
    # At 20 ms the library's adds each wait out several sequential calls.
    assert res["rows"]["20ms"]["library"]["ingest_s"] > 4 * 0.02
    assert {c["figure"] for c in res["checks"]} == {
        "ours / library ingest wall, 20ms",
        "ours ingest wall / its chain bound, 20ms",
    }
    text = render_library(res)
    assert "mem0's library (2 threads)" in text and "`+exp=mem0`" in text
