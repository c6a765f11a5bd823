"""Reading back what earlier attempts on a run directory left, so a rerun redoes nothing that finished.

Every stage file is append-only: a later row for the same item supersedes an earlier one, and the
judgements that stand depend on which answer stands.
"""

from __future__ import annotations

from dataclasses import dataclass

from mem0bench.llm.types import TRANSIENT_KINDS
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, IngestRecord, Judgement
from mem0bench.rundir.usage import UsageSession, read_usage_sessions


@dataclass(frozen=True)
class PreviousWork:
    """The rows of earlier attempts, as a rerun finds them when it starts."""

    answers: dict[str, AnswerRecord]
    """qid -> the latest answer row."""
    judgements: list[Judgement]
    """Every judgement row, in file order (any judge, any answer)."""
    ingests: dict[str, IngestRecord]
    """sample_id -> the latest ingest row."""
    usage_sessions: list[UsageSession]
    """What each earlier process paid (usage.json)."""

    @classmethod
    def read(cls, rundir: RunDirectory) -> PreviousWork:
        return cls(
            answers=latest_answers(rundir),
            judgements=read_judgements(rundir),
            ingests={row.sample_id: row for row in map(IngestRecord.from_dict, rundir.rows("ingest.jsonl"))},
            usage_sessions=read_usage_sessions(rundir),
        )


def latest_answers(rundir: RunDirectory) -> dict[str, AnswerRecord]:
    return {answer.qid: answer for answer in map(AnswerRecord.from_dict, rundir.rows("answers.jsonl"))}


def read_judgements(rundir: RunDirectory) -> list[Judgement]:
    return [Judgement.from_dict(row) for row in rundir.rows("judgements.jsonl")]


def answer_stands(
    answer: AnswerRecord | None, ingest: IngestRecord | None, *, retry_failed: bool = False
) -> bool:
    """Whether a run keeps `answer` instead of answering its question again (the runner decides by it,
    and `status` counts by it): it holds a prediction, made from the memory that stands for its
    conversation (`ingest`: the latest ingest row, final, the one the answer was made from), and no step
    behind its context failed in a way a retry may put right (a transient failure; with
    run.retry_failed=true, any failure)."""
    if answer is None or answer.failure is not None or ingest is None or not ingest.is_final:
        return False
    if answer.ingest_session != ingest.session:
        return False  # answered from a memory that has since been built again
    kinds = [d.split(":", 1)[0].strip() for d in answer.degraded]
    return not (retry_failed and kinds) and not any(kind in TRANSIENT_KINDS for kind in kinds)


def current_judgements(
    judgements: list[Judgement], signature: str, runs: int, answers: dict[str, AnswerRecord]
) -> dict[tuple[str, int], Judgement]:
    """(qid, run) -> the judgement that stands: a label if any attempt gave one, else the latest failure;
    only judgements of the answer that stands (an answer made again needs new labels)."""
    chosen: dict[tuple[str, int], Judgement] = {}
    for j in judgements:
        if j.signature != signature or not 0 <= j.run < runs:
            continue
        answer = answers.get(j.qid)
        if answer is None or j.answer_session != answer.session:
            continue
        key = (j.qid, j.run)
        held = chosen.get(key)
        if held is None or held.label is None:
            chosen[key] = j
    return chosen
