"""Judge figures that rest on something: a judge whose every call failed gives n/a (never 0), and a second
judge on a finished run keeps its figures apart from the run's own judge."""

from __future__ import annotations

import json

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.reliability import request_stage, small_sample
from devtools.standin.server import HTTPError, StandinServer, ToolCall
from mem0bench.pipeline.aggregate import metrics
from mem0bench.rundir.schema import PredictionRow

QUESTIONS = 4


def _rows(judge: list[list[bool | str | None]], failed: list[bool]) -> list[PredictionRow]:
    def label(value: bool | str | None) -> str | None:
        if value is None or isinstance(value, str):
            return value
        return "CORRECT" if value else "WRONG"

    return [
        PredictionRow(
            qid=f"q{i}", conversation="conv-1", question="?", gold="g", category="single-hop", category_id=4,
            prediction="", scores={"f1": 0.0, "bleu1": 0.0, "locomo_f1": 0.0}, judge=tuple(label(v) for v in labels),
            answer_words=0,
            extra={"failure": "answer:timeout: x" if bad else None, "evidence_recall": None,
                   "search_latency_s": None, "total_latency_s": None, "context_tokens": None},
        )
        for i, (labels, bad) in enumerate(zip(judge, failed, strict=True))
    ]  # fmt: skip


def _metrics(rows: list[PredictionRow], runs: int) -> dict:
    return metrics(rows, method="rag", runs=runs, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={})


def test_no_successful_judgement_is_null_not_zero():
    # One question without a prediction (WRONG in every run by rule), two whose judge calls all failed.
    rows = _rows([[False, False], [None, None], [None, None]], [True, False, False])
    judge = _metrics(rows, runs=2)["overall"]["judge"]
    assert judge["mean"] is None and judge["std"] is None and judge["majority"] is None
    assert judge["kappa"] is None and judge["per_run"] == [None, None]
    assert judge["judgements"] == 0 and judge["failures"] == 4


def test_a_run_without_judgements_is_left_out_and_the_count_is_given():
    # Run 0 judged both answered questions; run 1 judged none: run 1 has no figure, J stands on run 0.
    rows = _rows([[False, False], ["CORRECT", None], ["WRONG", None]], [True, False, False])
    judge = _metrics(rows, runs=2)["overall"]["judge"]
    assert judge["per_run"] == [pytest.approx(1 / 3), None]
    assert judge["mean"] == pytest.approx(1 / 3) and judge["judgements"] == 2


def _rag_args(dataset, run_dir, judge_runs: int) -> list[str]:
    return ["run", "+exp=rag", f"dataset.path={dataset}", f"judge.runs={judge_runs}",
            f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip


class _JudgeFails:
    """Every judge call gets arguments that are not JSON (repairs included), and the first answer call is
    refused (so one question has no prediction, scored WRONG by rule); everything else is normal."""

    def __init__(self) -> None:
        self.answers = 0

    def __call__(self, endpoint: str, body: dict):
        stage = request_stage(endpoint, body)
        if stage == "judge":
            return ToolCall("this is not JSON")
        if stage == "answer":
            self.answers += 1
            return HTTPError(400, message="refused") if self.answers == 1 else None
        return None


@pytest.mark.slow
def test_all_failed_judge_reads_na_in_summary_metrics_and_report(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(_JudgeFails())
        env = cli_env(server.base_url, tmp_path / "cache")
        result = run_cli(_rag_args(dataset, run_dir, judge_runs=2), env)
    assert "Traceback" not in result.stderr
    judge = json.loads((run_dir / "metrics.json").read_text())["overall"]["judge"]
    assert judge["mean"] is None and judge["std"] is None and judge["kappa"] is None
    assert judge["judgements"] == 0
    assert json.loads((run_dir / "metrics.json").read_text())["failures"]["questions_without_prediction"] == 1
    assert "J n/a ± n/a over 2 runs (0 successful judgements)" in result.stderr
    # Every judge call failed: that is above max_failure_rate, and the advice names the way out.
    assert result.returncode == 1
    assert "run.retry_failed=true" in result.stderr

    out = tmp_path / "report"
    report = run_cli(["report", str(run_dir), "--out", str(out)], env)
    assert report.returncode == 0, report.stderr
    table = (out / "table1.md").read_text()
    assert "n/a" in table and "0.00 ± 0.00" not in table
    runs = (out / "runs.csv").read_text().splitlines()
    assert runs[0].endswith(",judgements") and runs[1].endswith(",0")


@pytest.mark.slow
def test_second_judge_keeps_its_metrics_apart(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        first = run_cli(_rag_args(dataset, run_dir, judge_runs=2), env)
        assert first.returncode == 0, first.stderr[-3000:]
        own_metrics = (run_dir / "metrics.json").read_bytes()
        own_predictions = (run_dir / "predictions.jsonl").read_bytes()
        second = run_cli(["judge", str(run_dir), "judge.prompt=strict", "judge.runs=3", *FAST[-1:]], env)
    assert second.returncode == 0, second.stderr[-3000:]

    # The run's own judge's files are untouched, and config.yaml still says which judge made them.
    assert (run_dir / "metrics.json").read_bytes() == own_metrics
    assert (run_dir / "predictions.jsonl").read_bytes() == own_predictions
    assert "prompt: lenient" in (run_dir / "config.yaml").read_text()

    other = run_dir / "judges" / "gpt-4o-mini_strict_tool"
    metrics_other = json.loads((other / "metrics.json").read_text())
    assert metrics_other["overall"]["judge"]["runs"] == 3
    assert metrics_other["overall"]["judge"]["judgements"] == 3 * QUESTIONS
    assert all(len(r["judge"]) == 3 for r in read_jsonl(other / "predictions.jsonl"))
    config = (other / "config.yaml").read_text()
    assert "prompt: strict" in config and "runs: 3" in config
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["judges"]["judges/gpt-4o-mini_strict_tool"]["prompt"] == "strict"


@pytest.mark.slow
def test_fewer_judge_runs_than_the_figures_stand_on_is_refused_unless_meant(tmp_path, locomo_mini):
    """`judge RUN judge.runs=1` on a run judged with 3 runs would rewrite its metrics over 1 run: one line,
    nothing changed; `--fewer-runs` does it on purpose, and the other runs' labels are kept."""
    dataset = small_sample(tmp_path, locomo_mini, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        first = run_cli(_rag_args(dataset, run_dir, judge_runs=3), env)
        assert first.returncode == 0, first.stderr[-3000:]
        before = {n: (run_dir / n).read_bytes() for n in ("metrics.json", "predictions.jsonl", "config.yaml")}
        refused = run_cli(["judge", str(run_dir), "judge.runs=1", *FAST[-1:]], env)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "judge.runs=1 is fewer than the 3 runs" in refused.stderr and "--fewer-runs" in refused.stderr
        assert {n: (run_dir / n).read_bytes() for n in before} == before
        more = run_cli(["judge", str(run_dir), "judge.runs=4", *FAST[-1:]], env)  # more runs: as before
        assert more.returncode == 0, more.stderr[-3000:]
        meant = run_cli(["judge", str(run_dir), "judge.runs=1", "--fewer-runs", *FAST[-1:]], env)
    assert meant.returncode == 0, meant.stderr[-3000:]
    assert json.loads((run_dir / "metrics.json").read_text())["overall"]["judge"]["runs"] == 1
    assert {r["run"] for r in read_jsonl(run_dir / "judgements.jsonl")} == {0, 1, 2, 3}
