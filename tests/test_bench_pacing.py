"""`python -m benchmarks pacing`: a run under an enforced budget, and the budget-use arithmetic."""

from __future__ import annotations

import json

import pytest

from benchmarks.cli import bench_main
from benchmarks.pacing import budget_figures, render_pacing


def test_budget_use_over_the_run_and_the_work_stages() -> None:
    # 600 tokens a "minute" of 6 s: 100 a second after the full bucket. 1,600 tokens charged over 10 s; the
    # latency pass is the last 1 s (500 tokens admitted in it).
    account = {
        "limits": [100.0, 600.0], "window_s": 6.0, "charged": [3.0, 1_600.0], "started": 50.0, "last": 60.0,
        "use": {"requests": 0.02, "tokens": 1.0}, "admitted": [[50.0, 600.0], [55.0, 500.0], [59.5, 500.0]],
    }  # fmt: skip
    fig = budget_figures(account, {"answer": {"wall_s": 4.0}, "latency": {"wall_s": 1.0}})
    assert fig["use_run"] == {"allowed": 1.0, "refill": 1.6}
    assert fig["latency_pass_tokens"] == 500 and fig["work_span_s"] == 9.0
    assert fig["use_work_stages"] == {
        "allowed": pytest.approx(1_100 / 1_500, abs=1e-4),
        "refill": pytest.approx(1_100 / 900, abs=1e-4),
    }
    # Without a latency pass there is no separate work-stage figure.
    assert budget_figures(account, {})["use_work_stages"] is None


@pytest.mark.slow
def test_pacing_runs_rag_under_a_small_budget(tmp_path, locomo_mini, capsys) -> None:
    # mini-1 with 3 questions and 2 judge runs against 3,000 tokens a "minute" of 1 s: the run needs the
    # budget several times over, so the pacer waits and the stand-in's account is exercised.
    sample = next(s for s in json.loads(locomo_mini.read_text()) if s["sample_id"] == "mini-1")
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps([{**sample, "qa": sample["qa"][:3]}]))
    out = tmp_path / "bench"
    code = bench_main(
        ["pacing", "--dataset", str(tiny), "--conversations", "mini-1", "--tpm", "3000", "--window-s", "1",
         "--judge-runs", "2", "--out", str(out), "--json"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    (res,) = json.loads(captured.out)["results"]
    (run,) = res["runs"]
    assert run["method"] == "rag" and run["requests"] > 0 and 0 <= run["share_429"] <= 0.05
    assert run["tokens_charged"] > 3_000 and run["pacer_wait_s"] is not None and run["pacer_wait_s"] > 0
    use = run["use_run"]
    assert 0 < use["allowed"] <= 1.0 + 1e-6 and use["refill"] > use["allowed"]
    stages = {s["stage"]: s for s in run["stages"]}
    assert {"answer", "judge"} <= set(stages) and stages["judge"]["tokens"] > 0
    assert "budget use, run" in render_pacing(res)
