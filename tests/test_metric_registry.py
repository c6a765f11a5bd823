"""Metrics registered once: a metric added to the registry reaches the rows, the blocks, the bootstrap
intervals, `compare` and the report's tables, and leaves the files of the suites it does not apply to as
they were."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from mem0bench.comparison.compare import compare_pairs, pair_rows
from mem0bench.metrics.registry import BUILT_IN, METRICS, Metric, per_question, register_metric
from mem0bench.pipeline import aggregate
from mem0bench.pipeline.statistics import BootstrapSettings, add_statistics
from mem0bench.rundir.records import AnswerRecord
from mem0bench.rundir.schema import SCHEMA_VERSION, Metrics, PredictionRow, score_names


def _answer(
    qid: str, prediction: str, gold: str, category_id: int = 4, conversation: str = "c1"
) -> AnswerRecord:
    names = {1: "multi_hop", 4: "single_hop", 6: "cognitive", 11: "single_session_user"}
    return AnswerRecord(
        qid=qid, conversation=conversation, question="?", gold=gold, category=names[category_id],
        category_id=category_id, prediction=prediction, context_tokens=10, search_latency_s=0.1, total_latency_s=0.2,
    )  # type: ignore[call-arg]  # fmt: skip


def _exact(prediction: str, gold: str) -> float:
    return float(prediction.strip().lower() == gold.strip().lower())


def _share_long(rows: list[PredictionRow]) -> float:
    return sum(r.answer_words > 2 for r in rows) / len(rows)


@pytest.fixture
def exact_match() -> Iterator[Metric]:
    """A per-question metric for LongMemEval only, registered for one test."""
    m = register_metric(
        Metric("exact", "EM", "question", _exact, suites=frozenset({"longmemeval"}), table=True)
    )
    yield m
    del METRICS["exact"]


def _run(answers: list[AnswerRecord]) -> tuple[list[PredictionRow], dict]:
    labels = {a.qid: [True] for a in answers}
    rows = aggregate.prediction_rows(answers, labels, runs=1)
    out = aggregate.metrics(
        rows, method="m", runs=1, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={}
    )
    out = add_statistics(out, rows, BootstrapSettings(replicates=50), judge_name="j")
    return rows, Metrics.from_dict({**out, "schema_version": SCHEMA_VERSION}, "test").to_dict()


LOCOMO = [_answer(f"q{i}", p, g, conversation=f"c{i % 2}") for i, (p, g) in enumerate(
    [("Paris", "Paris"), ("a red car", "red car"), ("no idea", "Lisbon"), ("2023", "2022")])]  # fmt: skip
LME = [_answer(f"l{i}", p, g, 11, f"l{i}") for i, (p, g) in enumerate(
    [("Paris", "paris"), ("a red car", "red car"), ("Lisbon", "Lisbon")])]  # fmt: skip


def test_the_built_in_metrics_are_schema_2s_fields_in_order() -> None:
    assert [m.name for m in BUILT_IN] == ["f1", "bleu1", "locomo_f1", "judge"] == score_names()
    assert PredictionRow.fields()[7:10] == ("f1", "bleu1", "locomo_f1")


def test_a_new_metric_reaches_rows_blocks_intervals_and_compare(exact_match: Metric) -> None:
    rows, metrics = _run(LME)
    assert [r.score("exact") for r in rows] == [1.0, 0.0, 1.0]
    assert list(rows[0].to_dict())[7:11] == ["f1", "bleu1", "locomo_f1", "exact"]
    overall = metrics["overall"]
    assert (
        overall["exact"] == pytest.approx(2 / 3)
        and "exact" in overall["stderr"]
        and "exact" in overall["ci95"]
    )
    assert metrics["categories"]["single_session_user"]["exact"] == pytest.approx(2 / 3)
    assert "exact" not in overall.get("not_applicable", [])
    compared = compare_pairs(pair_rows(rows, rows, intersect=False), BootstrapSettings(replicates=50))
    assert compared["overall"]["exact"]["delta"] == 0.0
    assert list(compared["overall"])[:2] == ["n", "judge"]  # J first, as before

    from mem0bench.report.tables import table1

    run = SimpleNamespace(
        name="r", method="m", config={}, manifest={}, metrics=Metrics.from_dict(metrics, "t")
    )
    assert table1([run])["overall EM"].iloc[0] == "66.67"  # type: ignore[list-item]


def test_a_metric_of_another_suite_leaves_a_locomo_run_as_it_was(exact_match: Metric) -> None:
    rows, metrics = _run(LOCOMO)
    del METRICS["exact"]
    try:
        rows_before, metrics_before = _run(LOCOMO)
    finally:
        register_metric(exact_match)
    assert [r.to_dict() for r in rows] == [r.to_dict() for r in rows_before]
    assert metrics == metrics_before and list(metrics["overall"]) == list(metrics_before["overall"])


def test_a_per_run_metric_is_one_figure_of_the_overall_block() -> None:
    register_metric(Metric("long_share", "long answers", "run", _share_long, suites=frozenset({"locomo"})))
    try:
        _, metrics = _run(LOCOMO)
        _, lme = _run(LME)
    finally:
        del METRICS["long_share"]
    assert metrics["overall"]["long_share"] == 0.25  # "a red car": 3 words
    assert "long_share" not in metrics["categories"]["single_hop"] and "long_share" not in lme["overall"]


def test_schema_2s_metrics_are_required_and_a_newer_one_is_not(exact_match: Metric) -> None:
    rows, _ = _run(LOCOMO)
    row = rows[0].to_dict()
    assert "exact" not in row and PredictionRow.from_dict(row, "x").scores == rows[0].scores
    del row["bleu1"]
    with pytest.raises(ValueError, match="missing field 'bleu1'"):
        PredictionRow.from_dict(row, "x")


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="metric 'f1' is registered twice"):
        register_metric(Metric("f1", "F1", "question", _exact))
    assert METRICS["f1"] is BUILT_IN[0] and per_question()[0] is BUILT_IN[0]
