"""Sweeps through Hydra multirun (basic, joblib, submitit_local), the report over a sweep, re-judging,
and the adversarial scope: the real CLI against the stand-in server."""

from __future__ import annotations

import json

import pytest

from devtools.e2e import FAST, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server():
    with StandinServer() as s:
        yield s


def _small(locomo_mini, questions: int = 3, judge_runs: int = 2) -> list[str]:
    return [
        f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
        f"eval.max_questions={questions}", f"judge.runs={judge_runs}", *FAST,
    ]  # fmt: skip


def test_four_job_sweep_becomes_a_report(tmp_path, server, locomo_mini):
    sweep = tmp_path / "sweep"
    args = ["run", "-m", "+exp=rag", "method.chunk_size=128,256", "method.k=1,2", f"hydra.sweep.dir={sweep}"]
    result = run_cli([*args, *_small(locomo_mini)], cli_env(server.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    runs = sorted(p.parent for p in sweep.rglob("metrics.json"))
    assert len(runs) == 4

    out = tmp_path / "report"
    report = run_cli(
        ["report", str(sweep), "--out", str(out), "--labels", "paper"], cli_env(server.base_url, tmp_path)
    )
    assert report.returncode == 0, report.stderr
    table1 = (out / "table1.csv").read_text().splitlines()
    assert len(table1) == 1 + 4 and "chunk_size" in table1[0] and ",k," in table1[0]
    combos = {tuple(line.split(",")[2:4]) for line in table1[1:]}  # after the run name and the method
    assert combos == {("128", "1"), ("128", "2"), ("256", "1"), ("256", "2")}
    assert "NOT LOCOMO" in (out / "table1_paper_labels.md").read_text()
    for png in ("judge_by_category.png", "judge_vs_latency.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_parallel_launchers(tmp_path, server, locomo_mini, launcher):
    sweep = tmp_path / "sweep"
    args = ["run", "-m", "+exp=rag", "method.k=1,2", f"hydra/launcher={launcher}", f"hydra.sweep.dir={sweep}"]
    result = run_cli([*args, *_small(locomo_mini, 2)], cli_env(server.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    ks = sorted(
        json.loads((p.parent / "run.json").read_text())["status"] for p in sweep.rglob("metrics.json")
    )
    assert ks == ["complete", "complete"]


def test_rejudge_calls_only_the_judge(tmp_path, server, locomo_mini):
    run_dir = tmp_path / "run"
    env = cli_env(server.base_url, tmp_path / "cache")
    first = run_cli(["run", "+exp=rag", f"hydra.run.dir={run_dir}", *_small(locomo_mini)], env)
    assert first.returncode == 0, first.stderr[-3000:]
    chat, embeddings = server.count("chat"), server.count("embeddings")

    again = run_cli(["judge", str(run_dir), "judge.runs=3", "judge.prompt=strict"], env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.count("embeddings") == embeddings  # nothing ingested or retrieved
    assert server.count("chat") - chat == 3 * 3  # three new judge runs of three answers, no answer call
    strict = run_dir / "judges" / "gpt-4o-mini_strict_tool"  # another judge: its figures apart
    metrics = json.loads((strict / "metrics.json").read_text())
    assert metrics["overall"]["judge"]["runs"] == 3
    assert all(len(r["judge"]) == 3 for r in read_jsonl(strict / "predictions.jsonl"))


def test_adversarial_scope(tmp_path, server, locomo_mini):
    run_dir = tmp_path / "run"
    args = ["run", "+exp=full_context", "eval.include_adversarial=true", f"hydra.run.dir={run_dir}"]
    # mini-1's adversarial questions come after its others: take them all.
    result = run_cli([*args, *_small(locomo_mini, 200, 1)], cli_env(server.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    rows = read_jsonl(run_dir / "predictions.jsonl")
    adversarial = [r for r in rows if r["category_id"] == 5]
    assert adversarial and all(r["category"] == "adversarial" for r in adversarial)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["categories"]["adversarial"]["n"] == len(adversarial)
    # LOCOMO's rule for category 5: 1 exactly when the prediction says the information is not there.
    for r in adversarial:
        said_missing = any(
            p in r["prediction"].lower() for p in ("not mentioned", "no information available")
        )
        assert r["locomo_f1"] == (1.0 if said_missing else 0.0)
