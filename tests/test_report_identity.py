"""Tables a reader can tell apart: a runs table (name, folder, scope, dataset, answer key, judge), a
warning when runs differ in scope, failed sweep jobs named, and CSV files that hold plain numbers."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.reliability import small_sample
from devtools.standin.server import StandinServer
from mem0bench.cli.report import report_main
from tests.test_report import make_config, make_metrics, write_run

RAG = {"_target_": "mem0bench.systems.baselines.rag.RAG", "name": "rag", "chunk_size": 256, "k": 2}


def _run(root: Path, name: str, *, questions: int, sha: str, conversations: int) -> Path:
    folder = write_run(root / name, make_metrics("rag", 0.6), make_config(RAG, root / name, 0))
    metrics = json.loads((folder / "metrics.json").read_text())
    metrics["n_questions"] = questions
    metrics["tokens"]["context_mean"] = 1764.25
    (folder / "metrics.json").write_text(json.dumps(metrics))
    manifest = {
        "run_id": name,
        "status": "complete",
        "dataset": {"path": "/data/locomo10.json", "sha256": sha},
        "scope": {"conversations": conversations, "questions": questions, "answer_key": None},
    }
    (folder / "run.json").write_text(json.dumps(manifest))
    return folder


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_identical_looking_runs_are_told_apart(tmp_path, capsys):
    runs = tmp_path / "runs"
    for i in range(4):
        _run(runs, f"2026-01-0{i + 1}_rag", questions=1540, sha="a" * 64, conversations=10)
    _run(runs, "2026-01-09_rag", questions=20, sha="b" * 64, conversations=2)
    out = tmp_path / "report"
    assert report_main([str(runs), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "differ in scope" in err
    assert "questions: 1540 (4 runs), 20 (1 run)" in err and "conversations: 10 (4 runs), 2 (1 run)" in err
    assert "dataset (sha256): aaaaaaaaaaaa (4 runs), bbbbbbbbbbbb (1 run)" in err

    table = _csv(out / "runs.csv")
    assert len({row["run"] for row in table}) == 5
    small = next(row for row in table if row["run"] == "2026-01-09_rag")
    assert (
        small["questions"] == "20" and small["conversations"] == "2" and small["dataset sha256"] == "b" * 64
    )
    assert small["judge"] == "gpt-4o-mini / mem0" and small["judge runs"] == "10"
    assert small["answer key"] == "LOCOMO's" and small["folder"] == str(runs / "2026-01-09_rag")
    t1 = [row["run"] for row in _csv(out / "table1.csv")]
    assert len(set(t1)) == 5


def test_csv_holds_numbers(tmp_path, capsys):
    _run(tmp_path / "runs", "one", questions=1540, sha="a" * 64, conversations=10)
    out = tmp_path / "report"
    assert report_main([str(tmp_path / "runs"), "--out", str(out)]) == 0
    capsys.readouterr()
    row = _csv(out / "table1.csv")[0]
    assert float(row["overall J mean"]) == pytest.approx(60.0) and float(
        row["overall J std"]
    ) == pytest.approx(1.23)
    assert "overall J" not in row and not any("±" in v for v in row.values())
    row2 = _csv(out / "table2.csv")[0]
    assert float(row2["context tokens (mean)"]) == pytest.approx(1764.25)  # no "1,764"
    assert float(row2["search p95 (s)"]) == pytest.approx(0.699)
    assert "±" in (out / "table1.md").read_text() and "1,764" in (out / "table2.md").read_text()


def test_failed_sweep_jobs_are_named(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    _run(sweep, "0", questions=40, sha="a" * 64, conversations=1)
    (sweep / "1").mkdir(parents=True)
    (sweep / "1" / "run.json").write_text(json.dumps({"status": "failed", "reason": "rag: k must be >= 1"}))
    (sweep / "2").mkdir()
    (sweep / "2" / "run.json").write_text(json.dumps({"status": "stopped", "reason": "server gone"}))
    assert report_main([str(sweep), "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert f"{sweep / '1'}: failed, no metrics (left out of the tables): rag: k must be >= 1" in err
    assert f"{sweep / '2'}: stopped, no metrics" in err


@pytest.mark.slow
def test_a_sweep_job_that_fails_at_once_leaves_a_run_json(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=1)
    sweep = tmp_path / "sweep"
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        args = ["run", "-m", "+exp=rag", f"dataset.path={dataset}", "judge.runs=1", "method.k=1,0",
                f"hydra.sweep.dir={sweep}", *FAST]  # fmt: skip
        result = run_cli(args, env)
    assert "Traceback" not in result.stderr
    assert (sweep / "0" / "metrics.json").exists()
    failed = json.loads((sweep / "1" / "run.json").read_text())
    assert failed["status"] == "failed" and "k" in failed["reason"]
    report = run_cli(["report", str(sweep), "--out", str(tmp_path / "r")], env)
    assert report.returncode == 0 and f"{sweep / '1'}: failed" in report.stderr
