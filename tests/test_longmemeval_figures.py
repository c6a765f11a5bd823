"""LongMemEval's three figures as its authors compute them (print_qa_metrics.py): overall (micro),
task-averaged (the six question types' mean, each abstention question inside its question_type) and
abstention, and each type's accuracy on that definition; recomputed by hand here from the labels."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mem0bench.metrics.registry import METRICS
from mem0bench.pipeline.aggregate import metrics as aggregate_metrics
from mem0bench.rundir.schema import PredictionRow
from mem0bench.suites import DatasetRequest, get_suite

MINI = Path(__file__).parent / "data" / "longmemeval_s_mini.json"
LABELS = {  # question_id -> its judge labels over two runs
    "e47becba": ("CORRECT", "CORRECT"),  # single-session-user
    "7161e7e2": ("WRONG", "WRONG"),  # single-session-assistant
    "0edc2aef": ("CORRECT", "CORRECT"),  # single-session-preference
    "gpt4_d84a3211": ("CORRECT", "WRONG"),  # multi-session: 0.5
    "gpt4_7f6b06db": ("CORRECT", "CORRECT"),  # temporal-reasoning
    "6aeb4375": ("CORRECT", "CORRECT"),  # knowledge-update
    "gpt4_2f8be40d_abs": ("WRONG", "WRONG"),  # abstention; its question_type: temporal-reasoning
}


def _rows(tmp_path: Path) -> list[PredictionRow]:
    request = DatasetRequest(path=str(MINI), data_dir=tmp_path / "data", cache_dir=tmp_path / "hf")
    dataset = get_suite("longmemeval_s").load(request)
    return [
        PredictionRow(
            qid=q.qid,
            conversation=q.sample_id,
            question=q.question,
            gold=q.answer,
            category=q.category.label,
            category_id=int(q.category),
            prediction="x",
            scores={},
            judge=LABELS[q.sample_id],
            answer_words=1,
        )  # fmt: skip
        for q in dataset.questions
    ]


def test_the_three_figures_and_the_types_by_hand(tmp_path: Path) -> None:
    figures = aggregate_metrics(
        _rows(tmp_path), method="m", runs=2, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={}
    )["overall"]
    # overall (micro): (1 + 0 + 1 + 0.5 + 1 + 1 + 0) / 7 = 4.5 / 7
    assert figures["lme_overall"] == pytest.approx(4.5 / 7)
    # by question_type, the abstention question inside temporal-reasoning: (1 + 0) / 2 = 0.5;
    # task-averaged: (1 + 0 + 1 + 0.5 + 0.5 + 1) / 6 = 4 / 6 (our seven categories' mean would be 4.5 / 7)
    assert figures["lme_task_averaged"] == pytest.approx(4 / 6)
    assert figures["lme_abstention"] == 0.0
    assert figures["lme_type_temporal_reasoning"] == 0.5  # our temporal category alone: 1.0
    assert figures["lme_type_multi_session"] == 0.5 and figures["lme_type_single_session_assistant"] == 0.0
    assert figures["lme_type_knowledge_update"] == 1.0
    # the micro figure is J's mean (both runs labelled every question): (5/7 + 4/7) / 2
    assert figures["judge"]["mean"] == pytest.approx(4.5 / 7)


def test_an_abstention_question_of_unknown_type_leaves_the_type_figures_out(tmp_path: Path) -> None:
    rows = _rows(tmp_path)
    abs_row = next(r for r in rows if r.category == "abstention")
    stray = replace(abs_row, qid="not_loaded_abs:q0")
    assert METRICS["lme_task_averaged"].over_run([stray]) is None
    assert METRICS["lme_type_temporal_reasoning"].over_run([stray]) is None
    assert METRICS["lme_abstention"].over_run([stray]) == 0.0  # needs no type
    # a row that carries its question_type (rows written since issue 33) needs no dataset
    typed = replace(stray, extra={"question_type": "temporal-reasoning"})
    assert METRICS["lme_type_temporal_reasoning"].over_run([typed]) == 0.0
    assert METRICS["lme_task_averaged"].over_run([typed]) == 0.0


def test_the_figures_are_longmemevals_only() -> None:
    for name in ("lme_overall", "lme_task_averaged", "lme_abstention"):
        assert METRICS[name].suites == frozenset({"longmemeval"}) and METRICS[name].table


@pytest.mark.parametrize("policy", ["wrong", "skipped"])
def test_missing_answers_wrong_or_skipped(tmp_path: Path, policy: str) -> None:
    rows = _rows(tmp_path)
    # knowledge-update's answer failed: no prediction, WRONG in both judge runs (as `prediction_rows` makes it)
    rows = [
        replace(r, prediction="", judge=("WRONG", "WRONG"), extra={"failure": "answer:timeout: no reply"})
        if r.category == "knowledge_update"
        else r
        for r in rows
    ]
    out = aggregate_metrics(
        rows, method="m", runs=2, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={},
        missing_answers=policy,
    )  # fmt: skip
    figures = out["overall"]
    if policy == "wrong":  # ours: (1 + 0 + 1 + 0.5 + 1 + 0 + 0) / 7; types (1 + 0 + 1 + 0.5 + 0.5 + 0) / 6
        assert figures["lme_overall"] == pytest.approx(3.5 / 7)
        assert figures["lme_task_averaged"] == pytest.approx(3 / 6)
        assert figures["lme_type_knowledge_update"] == 0.0
    else:  # the authors': the question is left out: 3.5 / 6; five types (1 + 0 + 1 + 0.5 + 0.5) / 5
        assert figures["lme_overall"] == pytest.approx(3.5 / 6)
        assert figures["lme_task_averaged"] == pytest.approx(3 / 5)
        assert figures["lme_type_knowledge_update"] is None
    assert figures["judge"]["mean"] == pytest.approx(3.5 / 7)  # J counts it WRONG either way
    assert out["missing_answers"] == policy


def test_missing_answers_is_checked_and_reaches_only_the_figures() -> None:
    from mem0bench.common.errors import ConfigurationError
    from mem0bench.pipeline.aggregate import check_missing_answers
    from mem0bench.pipeline.config_change import Reach, reach_of

    assert check_missing_answers("skipped") == "skipped"
    with pytest.raises(
        ConfigurationError, match="eval.missing_answers must be one of wrong, skipped, not 'no'"
    ):
        check_missing_answers("no")
    assert reach_of("eval.missing_answers") == Reach.AGGREGATE


@pytest.mark.slow
def test_judge_run_dir_recomputes_the_figures_from_the_files(tmp_path: Path) -> None:
    """`judge RUN_DIR` does not load the dataset: the rows' own question_type gives the abstention question's
    type, so the by-type figures come back the same (with `eval.missing_answers=skipped` kept from config)."""
    import json

    from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
    from devtools.standin.server import StandinServer

    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=full_context", "dataset=longmemeval_s", f"dataset.path={MINI.parent / 'longmemeval_mini.json'}",
        "judge.runs=2", "eval.missing_answers=skipped", f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY, latency_ms=1) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        done = run_cli(args, env)
        assert done.returncode == 0, done.stderr[-2000:]
        before = json.loads((run_dir / "metrics.json").read_text())
        again = run_cli(["judge", str(run_dir)], env)
        assert again.returncode == 0, again.stderr[-2000:]
    after = json.loads((run_dir / "metrics.json").read_text())
    names = [m.name for m in METRICS.values() if m.name.startswith("lme_")]
    assert after["overall"]["lme_type_temporal_reasoning"] is not None  # the abstention question's type
    assert {n: after["overall"][n] for n in names} == {n: before["overall"][n] for n in names}
    assert before["missing_answers"] == after["missing_answers"] == "skipped"
