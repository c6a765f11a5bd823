"""The pure functions behind every published number, without a subprocess run: prediction rows, metrics
aggregation, failure counting and settlement, and which judgements stand for an answer made again."""

from __future__ import annotations

from pathlib import Path

import pytest

from mem0bench.pipeline import aggregate
from mem0bench.pipeline.failures import count_failures, settle_failures_file
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, FailureRecord, IngestRecord, Judgement
from mem0bench.rundir.resume import answer_stands, current_judgements

SIG = "judge-sig"


def answer(qid: str, prediction: str, gold: str, category_id: int = 4, **extra: object) -> AnswerRecord:
    labels = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}
    fields: dict[str, object] = {
        "qid": qid,
        "conversation": "conv-t",
        "question": f"question {qid}?",
        "gold": gold,
        "category": labels[category_id],
        "category_id": category_id,
        "prediction": prediction,
        "context_tokens": 100,
        "search_latency_s": 0.1,
        "total_latency_s": 0.5,
        "session": "attempt-1",
        "ingest_session": "attempt-1",
    }
    fields.update(extra)
    return AnswerRecord(**fields)  # type: ignore[arg-type]


def judgement(qid: str, run: int, label: str | None, answer_attempt: str = "attempt-1") -> Judgement:
    return Judgement(
        qid=qid,
        run=run,
        label=label,  # type: ignore[arg-type]
        signature=SIG,
        failure=None if label else "timeout: no reply",
        answer_session=answer_attempt,
    )


# ---- prediction rows ------------------------------------------------------------------------------------
def test_prediction_rows_score_each_answer_and_keep_bookkeeping_out() -> None:
    answers = [answer("q1", "Paris", "Paris"), answer("q2", "blue car", "a red car")]
    labels = aggregate.judge_labels([judgement("q1", 0, "CORRECT"), judgement("q2", 1, "WRONG")], SIG, runs=2)
    rows = aggregate.prediction_rows(answers, labels, runs=2)
    assert rows[0].score("f1") == 1.0 and rows[0].judge == ("CORRECT", None)
    # f1 over token sets: {blue, car} vs {a, red, car}: precision 1/2, recall 1/3.
    assert rows[1].score("f1") == pytest.approx(2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3))
    assert rows[1].judge == (None, "WRONG")
    assert all("session" not in r.to_dict() and "ingest_session" not in r.to_dict() for r in rows)


def test_a_failed_answer_scores_zero_and_wrong_in_every_run() -> None:
    failed = answer("q1", "", "Paris", failure="answer:timeout: no reply")
    rows = aggregate.prediction_rows([failed], {"q1": [True, True]}, runs=2)
    assert rows[0].judge == ("WRONG", "WRONG") and rows[0].score("f1") == 0.0


def test_judge_labels_ignore_other_judges_and_runs_out_of_range() -> None:
    other = Judgement(qid="q1", run=0, label="WRONG", signature="another-judge")
    labels = aggregate.judge_labels(
        [judgement("q1", 0, "CORRECT"), other, judgement("q1", 5, "WRONG")], SIG, 2
    )
    assert labels["q1"] == [True, None]


# ---- metrics aggregation --------------------------------------------------------------------------------
def test_metrics_are_question_weighted_overall_and_per_category() -> None:
    answers = [
        answer("q1", "Paris", "Paris", category_id=4),
        answer("q2", "Rome", "Paris", category_id=4),
        answer("q3", "Oslo", "Oslo", category_id=2, search_latency_s=0.3, total_latency_s=0.9),
    ]
    labels = {"q1": [True, True], "q2": [False, True], "q3": [True, False]}
    rows = aggregate.prediction_rows(answers, labels, runs=2)
    m = aggregate.metrics(
        rows, method="x", runs=2, memory_tokens={"conv-t": 70, "conv-u": None},
        llm_usage={}, cost_usd=0.5, failures={"answer": 0},
    )  # fmt: skip
    assert m["n_questions"] == 3
    assert m["overall"]["f1"] == pytest.approx(2 / 3)
    # Run 0: 2 of 3 correct, run 1: 2 of 3: J is the mean over runs of the per-run accuracy.
    assert m["overall"]["judge"]["mean"] == pytest.approx(2 / 3)
    assert m["categories"]["single_hop"]["n"] == 2 and m["categories"]["single_hop"]["f1"] == 0.5
    assert m["categories"]["temporal"]["judge"]["per_run"] == [1.0, 0.0]
    assert "multi_hop" not in m["categories"]
    assert m["tokens"]["memory_store_per_conversation"] == {"conv-t": 70}
    assert m["tokens"]["context_mean"] == 100


def test_empty_contexts_are_counted_over_answered_questions() -> None:
    answers = [
        answer("q1", "Paris", "Paris", context_tokens=0, context_items=0),
        answer("q2", "Rome", "Paris", context_tokens=40, context_items=0),  # a header, no item
        answer("q3", "Oslo", "Oslo", context_tokens=80, context_items=3),
        answer("q4", "", "Oslo", context_tokens=None, failure="search:timeout: no reply"),
    ]
    rows = aggregate.prediction_rows(answers, {}, runs=1)
    assert aggregate.empty_contexts(rows) == {"n": 2, "of": 3, "share": 2 / 3}
    m = aggregate.metrics(
        rows, method="x", runs=1, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={}
    )  # fmt: skip
    assert m["empty_contexts"]["n"] == 2 and m["tokens"]["context_items_mean"] == 1.0


def test_a_run_of_mostly_empty_contexts_ends_with_a_warning() -> None:
    assert aggregate.empty_context_warning({"n": 5, "of": 10, "share": 0.5}) is None
    assert aggregate.empty_context_warning({"n": 0, "of": 0, "share": None}) is None
    line = aggregate.empty_context_warning({"n": 6, "of": 10, "share": 0.6})
    assert line is not None and line.startswith("warning: 6 of 10 answered questions had an empty")


# ---- failure counting -----------------------------------------------------------------------------------
def test_failures_are_counted_per_stage_with_rates() -> None:
    answers = [
        answer("q1", "", "x", failure="answer:timeout: no reply"),
        answer("q2", "", "x", failure="search:server_error: 503"),
        answer("q3", "y", "x", degraded=("timeout: entity search",)),
        answer("q4", "y", "x"),
    ]
    labels = {"q3": [True, None], "q4": [None, None]}
    rows = aggregate.prediction_rows(answers, labels, runs=2)
    ingests = {
        "conv-t": IngestRecord("conv-t", failures=2, usage={"ingest": [8, 0, 0]}),
        "conv-u": IngestRecord("conv-u", failed="ingest:timeout: gave up", kind="timeout"),
    }
    tally = count_failures(answers, rows, ingests, runs=2)
    assert tally.counts == {
        "ingest": 3, "search": 2, "answer": 1, "judge": 3, "questions_without_prediction": 2,
    }  # fmt: skip
    assert tally.rates["answer"] == 0.5
    assert tally.rates["judge"] == pytest.approx(3 / 4)  # 3 labels missing of 2 answered x 2 runs
    assert tally.rates["ingest"] == pytest.approx(2 / 10)  # 2 failed steps of 8 calls + 2


def test_a_librarys_own_ingest_stages_count_as_ingest_calls() -> None:
    # A third-party system's calls are served under its own stages: one lost step in 40 library calls is a
    # 1 in 41 failure rate, not 100%.
    ingests = {
        "conv-t": IngestRecord(
            "conv-t",
            failures=1,
            usage={"graphiti_ingest": [30, 0, 0], "graphiti_ingest_embedding": [10, 0, 0]},
        )
    }
    tally = count_failures([], [], ingests, runs=1)
    assert tally.counts["ingest"] == 1 and tally.rates["ingest"] == pytest.approx(1 / 41)


# ---- settlement of failures.jsonl -----------------------------------------------------------------------
def test_settlement_resolves_what_a_later_attempt_fixed(tmp_path: Path) -> None:
    rundir = RunDirectory(tmp_path / "run")
    log = rundir.appender("failures.jsonl")
    log.append(FailureRecord("answer", "timeout", "no reply", "conv-t", "q1", session="attempt-1").to_dict())
    log.append(FailureRecord("answer", "timeout", "no reply", "conv-t", "q2", session="attempt-2").to_dict())
    log.append(FailureRecord("judge", "timeout", "x", "conv-t", "q3", run=1, session="attempt-2").to_dict())
    answers = [
        answer("q1", "fixed", "x", session="attempt-2"),  # answered again: its failure is history
        answer("q2", "", "x", failure="answer:timeout: no reply", session="attempt-2"),
        answer("q3", "y", "x", session="attempt-1"),
    ]
    current = settle_failures_file(
        rundir, answers=answers, labels={"q3": [True, None]}, ingests={}, runs=2, attempt="attempt-2"
    )
    assert [(f.stage, f.qid) for f in current] == [("answer", "q2"), ("judge", "q3")]
    resolved = {(r["stage"], r["qid"]): r["resolved"] for r in rundir.rows("failures.jsonl")}
    assert resolved == {("answer", "q1"): True, ("answer", "q2"): False, ("judge", "q3"): False}


# ---- judgements of a superseded answer ------------------------------------------------------------------
def test_only_judgements_of_the_answer_that_stands_count() -> None:
    standing = {"q1": answer("q1", "new answer", "x", session="attempt-2")}
    judgements = [
        judgement("q1", 0, "CORRECT", answer_attempt="attempt-1"),  # judged the superseded answer
        judgement("q1", 1, None, answer_attempt="attempt-2"),  # a failed try at the new one...
        judgement("q1", 1, "WRONG", answer_attempt="attempt-2"),  # ...then a label
        judgement("q1", 1, None, answer_attempt="attempt-2"),  # a later failure does not undo it
    ]
    chosen = current_judgements(judgements, SIG, 2, standing)
    assert set(chosen) == {("q1", 1)}
    assert chosen[("q1", 1)].label == "WRONG"


# ---- which answer stands (the runner's rule, which status counts by) ------------------------------------
def test_an_answer_stands_only_on_the_memory_it_was_made_from_and_without_a_retryable_failure() -> None:
    final = IngestRecord("conv-t", session="attempt-1", retry=False)
    good = answer("q1", "Paris", "Paris")
    assert answer_stands(good, final)
    assert not answer_stands(None, final)
    assert not answer_stands(answer("q1", "", "Paris", failure="answer:timeout: no reply"), final)
    assert not answer_stands(good, None)  # no memory built yet
    assert not answer_stands(good, IngestRecord("conv-t", session="attempt-2", retry=False))  # built again
    assert not answer_stands(good, IngestRecord("conv-t", session="attempt-1", retry=True))  # to be redone
    assert not answer_stands(good, IngestRecord("conv-t", session="attempt-1", failed="ingest:x: y"))
    transient = answer("q1", "Paris", "Paris", degraded=("rate_limit: slow down",))
    lasting = answer("q1", "Paris", "Paris", degraded=("malformed: not JSON",))
    assert not answer_stands(transient, final)
    assert answer_stands(lasting, final) and not answer_stands(lasting, final, retry_failed=True)


def test_status_and_the_runner_share_the_rule() -> None:
    """Neither keeps a copy of it: both call `answer_stands`."""
    import inspect

    from mem0bench.pipeline import runner
    from mem0bench.status import reader as status

    assert "answer_stands(" in inspect.getsource(runner.Runner._needs_answer)
    assert "answer_stands(" in inspect.getsource(status._standing_answers)
    assert "TRANSIENT_KINDS" not in inspect.getsource(status)
