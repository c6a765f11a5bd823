"""Write matched published answers into a run directory, as the stages of a run would have.

answers.jsonl gets one row per imported answer (no latency, no context: the file does not say how they
were made), judgements.jsonl one row per imported judge label (signature `imported:<system>`; a record with
several judgments gives runs 0, 1, ... so J is their mean and standard deviation, as for our runs), and
predictions.jsonl / metrics.json are built by the same aggregate and statistics code as a run's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mem0bench.importing.imported import ImportResult
from mem0bench.metrics.registry import per_question
from mem0bench.pipeline import aggregate
from mem0bench.pipeline.statistics import IMPORTED_PREFIX, BootstrapSettings, add_statistics
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, Judgement, Label
from mem0bench.rundir.schema import write_results


def write_imported_run(
    rundir: RunDirectory,
    result: ImportResult,
    system: str,
    bootstrap: BootstrapSettings | None = None,
    *,
    gold: bool = True,
) -> dict[str, Any]:
    """Write the run's files; returns the metrics.json object. `gold=False`: the questions came from the
    file itself (no dataset at hand), so there is no reference answer and the lexical scores are null."""
    session = f"import-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    signature = IMPORTED_PREFIX + system
    answers, judgements = [], []
    runs = max((len(item.labels) for item in result.answers), default=0) or 1
    for item in result.answers:
        q = item.question
        answer = AnswerRecord(
            qid=q.qid, conversation=q.sample_id, question=q.question, gold=q.answer,
            category=q.category.label, category_id=int(q.category), prediction=item.prediction,
            context_tokens=None, search_latency_s=None, total_latency_s=None, evidence=q.evidence,
            session=session, question_type=q.question_type,
        )  # fmt: skip
        answers.append(answer)
        rundir.appender("answers.jsonl").append(answer.to_dict())
        for run, given in enumerate(item.labels):
            if given is None:
                continue
            label: Label = "PARTIAL" if given == 0.5 else "CORRECT" if given else "WRONG"
            judgement = Judgement(q.qid, run, label, signature, answer_session=session, session=session)
            judgements.append(judgement)
            rundir.appender("judgements.jsonl").append(judgement.to_dict())
    labels = aggregate.judge_labels(judgements, signature, runs)
    rows = aggregate.prediction_rows(answers, labels, runs)
    if not gold:
        for row in rows:
            row.scores.update(
                {m.name: None for m in per_question() if m.needs_reference and m.name in row.scores}
            )
    metrics = aggregate.metrics(
        rows, method=system, runs=runs, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={}
    )
    metrics = add_statistics(
        metrics, rows, bootstrap or BootstrapSettings(), judge_name=f"{system} (imported)"
    )
    return write_results(rundir, rows, metrics).to_dict()
