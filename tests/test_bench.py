"""`python -m benchmarks`: a tiny overhead measurement end to end (stand-in and harness processes)."""

from __future__ import annotations

import json

import pytest

from benchmarks.cli import bench_main
from benchmarks.render import render_markdown, render_text

pytestmark = pytest.mark.slow


@pytest.fixture
def tiny_locomo(tmp_path, locomo_mini):
    """The fixture's mini-1 cut to its first 8 turns and 3 questions: a few dozen calls."""
    sample = next(s for s in json.loads(locomo_mini.read_text()) if s["sample_id"] == "mini-1")
    conversation = {k: sample["conversation"][k] for k in ("speaker_a", "speaker_b", "session_1_date_time")}
    conversation["session_1"] = sample["conversation"]["session_1"][:8]
    tiny = {**sample, "conversation": conversation, "qa": sample["qa"][:3]}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([tiny]))
    return path


def test_overhead_reports_sane_figures(tiny_locomo, tmp_path, capsys):
    out = tmp_path / "bench"
    code = bench_main(
        ["overhead", "--dataset", str(tiny_locomo), "--conversations", "mini-1", "--out", str(out),
         "--no-startup", "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    report = json.loads(captured.out)
    assert report["machine"]["nproc"] > 0 and report["machine"]["python"]
    (res,) = report["results"]
    full, ingest = res["full_run"], res["ingest_run"]

    assert full["n_conversations"] == 1 and full["n_turns"] == 8 and full["n_questions"] == 3
    for run in (full, ingest):
        assert run["wall_s"] > 0 and run["cpu_s"] > 0 and run["peak_rss_mb"] > 0
        assert run["http"]["chat"] > 0 and run["http"]["embeddings"] > 0 and run["http"]["errors"] == 0
        assert run["cpu_ms_per_call"] > 0
    # Both runs ingest the same (fresh caches); the ingestion run answers and judges 1 question of 3.
    assert full["http"]["chat"] >= ingest["http"]["chat"] + 2 * 2
    assert full["ledger"]["answer"]["calls"] == 3 and full["ledger"]["judge"]["calls"] == 3
    per_turn = full["ingest_per_turn"]
    assert per_turn["chat_calls"] > 0 and per_turn["prompt_tokens"] > 0 and per_turn["completion_tokens"] > 0
    assert 0 < full["ingest_done_s"] < full["wall_s"]
    local = full["local_search_ms"]
    assert local["n"] == 3 and 0 < local["p50"] <= local["p95"] <= local["max"]
    assert {c["figure"] for c in res["checks"]} >= {"harness CPU per LLM call (ms)", "harness peak RSS (MB)"}
    assert all(c["pass"] in (True, False) for c in res["checks"])

    # The run folders are kept under --out, and the human-readable renderings hold the figures.
    assert (out / "overhead-mem0-full-run" / "metrics.json").is_file()
    text = render_text(report["results"])
    assert "harness CPU per LLM call" in text and "local search p50 / p95" in text
    markdown = render_markdown(report["results"], report["machine"], report["bench_command"])
    assert "| harness peak RSS (MB) |" in markdown and "python -m mem0bench run +exp=mem0" in markdown


def test_chain_reports_ingest_wall_against_its_chain_bound(tiny_locomo, tmp_path, capsys):
    code = bench_main(
        ["chain", "--dataset", str(tiny_locomo), "--latency-ms", "5", "--out", str(tmp_path / "bench"),
         "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    (res,) = json.loads(captured.out)["results"]
    sequential, ahead = res["runs"]
    assert (sequential["lookahead"], ahead["lookahead"]) == ("0", "default")
    for run in (sequential, ahead):
        assert 0 < run["chain_bound_s"] <= run["ingest_wall_s"] and run["chain_stream"].startswith("mini-1/")
    # The same calls; ahead, the chain holds only the update decisions.
    assert (
        ahead["ingest_calls"] == sequential["ingest_calls"] > sequential["chain_calls"] > ahead["chain_calls"]
    )
    assert "method.lookahead=0" in sequential["command"] and "method.lookahead" not in ahead["command"]


def test_bridge_runs_mem0_directly_and_through_the_bridge(tiny_locomo, tmp_path, capsys):
    out = tmp_path / "bench"
    code = bench_main(
        ["bridge", "--dataset", str(tiny_locomo), "--conversation", "mini-1", "--out", str(out), "--json"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    (res,) = json.loads(captured.out)["results"]
    direct, bridged = res["direct"], res["bridged"]
    # The same work on both sides: the conversation's adds and its 3 questions' searches, both speakers.
    assert direct["questions"] == bridged["questions"] == 3
    assert direct["search_ms"]["n"] == 2 * 3 and direct["question_ms"]["n"] == 3
    assert bridged["isolated_search_ms"]["n"] == 3
    for side in (direct, bridged):
        assert side["http"]["chat"] > 0 and side["http"]["embeddings"] > 0 and side["http"]["errors"] == 0
        assert side["cpu_ms_per_request"] > 0
    # The bridged run makes the library's requests plus the answers and judgements (fresh cache).
    assert bridged["http"]["chat"] > 2 * 3
    assert res["ratios"]["search_p50_bridged_vs_direct_question"] > 0
    assert all(c["pass"] in (True, False) for c in res["checks"])
    assert "bridged / direct" in render_text([res])


def test_cpu_per_request_for_two_systems(tiny_locomo, tmp_path, capsys):
    """`cpu` on the fixture's first session: our RAG, and mem0's library with its reply formats (the
    stand-in's handler given by a factory)."""
    code = bench_main(
        ["cpu", "--dataset", str(tiny_locomo), "--conversation", "mini-1", "--sessions", "1",
         "--systems", "rag,mem0_oss", "--out", str(tmp_path / "bench"), "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    (res,) = json.loads(captured.out)["results"]
    assert set(res["systems"]) == {"rag", "mem0_oss"}
    for name, row in res["systems"].items():
        assert "error" not in row, (name, row)
        assert row["requests"] == row["chat"] + row["embeddings"] > 0
        assert row["cpu_s"] > row["cpu_to_first_request_s"] > 0 and row["cpu_after_last_request_s"] > 0
        assert row["cpu_ms_per_request_whole_run"] > row["cpu_ms_per_request"] > 0
    assert res["systems"]["mem0_oss"]["chat"] > res["systems"]["rag"]["chat"]  # the library's own calls


def test_cpu_steal_is_the_hosts_share_of_the_cpu_time_between_two_readings() -> None:
    from benchmarks.machine import cpu_ticks, steal_pct

    assert steal_pct((10, 1000), (15, 1100)) == 5.0
    assert steal_pct(None, (1, 2)) is None and steal_pct((1, 2), (1, 2)) is None
    ticks = cpu_ticks()  # Linux: /proc/stat is there (CI and this machine)
    assert ticks is not None and 0 <= ticks[0] <= ticks[1]
