"""Tables a reader can tell apart: a runs table (name, folder, scope, dataset, answer key, judge), a
warning when runs differ in scope, failed sweep jobs named, and CSV files that hold plain numbers."""

from __future__ import annotations

import csv
import html
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
    small = next(row for row in table if row["name"] == "2026-01-09_rag")
    assert (
        small["questions"] == "20" and small["conversations"] == "2" and small["dataset sha256"] == "b" * 64
    )
    assert small["judge"] == "gpt-4o-mini / mem0" and small["judge runs"] == "10"
    assert small["answer key"] == "LOCOMO's" and small["folder"] == str(runs / "2026-01-09_rag")
    t1 = [row["run"] for row in _csv(out / "table1.csv")]
    assert t1 == [row["run"] for row in table] and len(set(t1)) == 5  # the runs table maps each name


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
    assert (
        f"{sweep / '1'}: failed, no metrics (in the runs table, left out of the others): rag: k must be >= 1"
        in err
    )
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


def _predictions(folder: Path, qids: list[str]) -> None:
    rows = [{"qid": q, "conversation": q.split("_")[0]} for q in qids]
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_failed_run_among_the_arguments_is_listed_and_the_others_reported(tmp_path, capsys):
    good = _run(tmp_path, "good", questions=40, sha="a" * 64, conversations=1)
    failed = tmp_path / "failed"
    failed.mkdir()
    reason = "the rag system raised KeyError: 'x' (at s.py:3 in ingest) while ingesting conversation conv-26"
    (failed / "run.json").write_text(json.dumps({"status": "failed", "method": "rag", "reason": reason}))
    out = tmp_path / "report"
    assert report_main([str(good), str(failed), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        f"warning: {failed}: failed, no metrics (in the runs table, left out of the others): {reason}" in err
    )
    table = {row["name"]: row for row in _csv(out / "runs.csv")}
    assert set(table) == {"good", "failed"}
    assert table["failed"]["status"] == "failed" and table["failed"]["method"] == "rag"
    assert table["failed"]["folder"] == str(failed) and table["failed"]["questions"] == ""
    assert table["good"]["questions"] == "40"
    assert "failed" in (out / "runs.md").read_text()
    assert [row["run"] for row in _csv(out / "table1.csv")] == [table["good"]["run"]]
    # Nothing finished at all: one line, nothing written.
    assert report_main([str(failed), "--out", str(tmp_path / "none")]) == 2
    assert "no finished run" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_runs_that_answered_different_questions_are_warned_about(tmp_path, capsys):
    a = _run(tmp_path, "a", questions=3, sha="a" * 64, conversations=1)
    b = _run(tmp_path, "b", questions=3, sha="a" * 64, conversations=1)
    _predictions(a, ["conv-26_q1", "conv-26_q2", "conv-26_q3"])
    _predictions(b, ["conv-26_q1", "conv-26_q2", "conv-26_q9"])  # as many, not the same ones
    assert report_main([str(a), str(b), "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "differ in scope" in err and "questions: 3" not in err
    assert "question sets: 2 questions in every run; not in every run: a 1, b 1" in err
    _predictions(b, ["conv-26_q1", "conv-26_q2", "conv-26_q3"])
    assert report_main([str(a), str(b), "--out", str(tmp_path / "r")]) == 0
    assert "differ in scope" not in capsys.readouterr().err


def test_report_html_shows_the_warnings_the_cli_prints(tmp_path, capsys):
    """One list of warnings: a failed sweep job, a partial run, a scope difference and an off-profile run
    are printed by the CLI and shown, the same words, at the top of report.html."""
    runs = tmp_path / "runs"
    _run(runs, "a", questions=40, sha="a" * 64, conversations=1)
    partial = _run(runs, "b", questions=20, sha="a" * 64, conversations=1)
    manifest = json.loads((partial / "run.json").read_text())
    manifest.update(status="interrupted", profile={"name": "paper/rag", "departs": True,
                                                   "overrides": ["judge.runs=2 (profile: 10)"]})  # fmt: skip
    (partial / "run.json").write_text(json.dumps(manifest))
    (runs / "c").mkdir()
    (runs / "c" / "run.json").write_text(json.dumps({"status": "failed", "reason": "no graph server"}))
    out = tmp_path / "report"
    assert report_main([str(runs), "--out", str(out)]) == 0
    warnings = [line.removeprefix("warning: ") for line in capsys.readouterr().err.splitlines()]
    assert len(warnings) == 4
    assert any("no graph server" in w for w in warnings) and any("'interrupted'" in w for w in warnings)
    assert any("differ in scope" in w for w in warnings)
    assert any("departs from the paper/rag profile: judge.runs=2 (profile: 10)" in w for w in warnings)
    page = (out / "report.html").read_text()
    for warning in warnings:
        assert f'<p class="warn">warning: {html.escape(warning)}</p>' in page
    assert "paper/rag, departs: judge.runs=2 (profile: 10)" in (out / "runs.md").read_text()
