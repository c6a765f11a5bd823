"""Write matched published answers into a run directory, as the stages of a run would have.

answers.jsonl gets one row per imported answer (no latency, no context: the file does not say how they
were made), judgements.jsonl one row per imported judge label (signature `imported:<system>`, run 0), and
predictions.jsonl / metrics.json are built by the same aggregate and statistics code as a run's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from mem0bench.pipeline import aggregate
from mem0bench.pipeline.statistics import IMPORTED_PREFIX, BootstrapSettings, add_statistics
from mem0bench.pipeline.tools.imported import ImportResult
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, Judgement
from mem0bench.rundir.schema import write_results


def write_imported_run(
    rundir: RunDirectory, result: ImportResult, system: str, bootstrap: BootstrapSettings | None = None
) -> dict[str, Any]:
    """Write the run's files; returns the metrics.json object."""
    session = f"import-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    signature = IMPORTED_PREFIX + system
    answers, judgements = [], []
    for item in result.answers:
        q = item.question
        answer = AnswerRecord(
            qid=q.qid, conversation=q.sample_id, question=q.question, gold=q.answer,
            category=q.category.label, category_id=int(q.category), prediction=item.prediction,
            context_tokens=None, search_latency_s=None, total_latency_s=None, evidence=q.evidence,
            session=session,
        )  # fmt: skip
        answers.append(answer)
        rundir.appender("answers.jsonl").append(answer.to_dict())
        if item.label is not None:
            label: Literal["CORRECT", "WRONG"] = "CORRECT" if item.label else "WRONG"
            judgement = Judgement(q.qid, 0, label, signature, answer_session=session, session=session)
            judgements.append(judgement)
            rundir.appender("judgements.jsonl").append(judgement.to_dict())
    labels = aggregate.judge_labels(judgements, signature, 1)
    rows = aggregate.prediction_rows(answers, labels, 1)
    metrics = aggregate.metrics(
        rows, method=system, runs=1, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={}
    )
    metrics = add_statistics(
        metrics, rows, bootstrap or BootstrapSettings(), judge_name=f"{system} (imported)"
    )
    return write_results(rundir, rows, metrics).to_dict()
