"""The isolated latency pass (`eval.latency=isolated`, the default).

Timed inline, a question's search shares the event loop, the HTTP pool and the model server with every
other question, answer and judge call of the run: its latency says as much about the harness's load as
about the system. So, once every answer and judgement is in, each question's retrieval is run again, one
question at a time, with its model calls made live (`llm.client.live_calls`: the cache neither answers nor
keeps them, so the figure is a server's and the run's cached replies stay the ones its answers were made
from). The rows go to latency.jsonl; metrics.json keeps them apart from the inline figures.

Which questions: every answered one, or a stratified sample of `eval.latency_questions` (seeded by
`eval.seed`, so a rerun picks the same). A question already measured against the memory that stands is
not measured again unless `run.remeasure_latency=true`: a rerun of a finished run makes no call here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from mem0bench.data.model import Conversation, Question
from mem0bench.llm.client import live_calls
from mem0bench.llm.timing import measure
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import MemorySystem
from mem0bench.pipeline.sample import sample_questions
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, LatencyRecord

__all__ = [
    "LATENCY_FILE",
    "LATENCY_MODES",
    "LatencyMode",
    "latency_plan",
    "measure_question",
    "standing_latency",
]

LatencyMode = Literal["isolated", "inline"]
LATENCY_MODES: tuple[LatencyMode, ...] = ("isolated", "inline")
LATENCY_FILE = "latency.jsonl"


def standing_latency(rundir: RunDirectory, answers: Mapping[str, AnswerRecord]) -> dict[str, LatencyRecord]:
    """qid -> the latest latency row measured against the memory its answer was made from."""
    out: dict[str, LatencyRecord] = {}
    for row in map(LatencyRecord.from_dict, rundir.rows(LATENCY_FILE)):
        answer = answers.get(row.qid)
        if answer is not None and row.ingest_session == answer.ingest_session:
            out[row.qid] = row
    return out


def latency_plan(
    questions: Sequence[Question],
    answers: Mapping[str, AnswerRecord],
    measured: Mapping[str, LatencyRecord],
    *,
    limit: int | None,
    seed: int,
    remeasure: bool,
) -> list[Question]:
    """The questions the pass times now: the sample (of those with a standing prediction), less those
    already measured unless `remeasure`."""
    answered = [q for q in questions if (a := answers.get(q.qid)) is not None and not a.failure]
    chosen = sample_questions(answered, limit, how="stratified", seed=f"latency:{seed}")
    if remeasure:
        return chosen
    return [q for q in chosen if (m := measured.get(q.qid)) is None or m.failure is not None]


async def measure_question(
    system: MemorySystem,
    conversation: Conversation,
    question: Question,
    answer: AnswerRecord,
    *,
    session: str,
) -> LatencyRecord:
    """One question's retrieval, alone and live. Nothing else may be in flight (the caller's job)."""
    base: dict[str, Any] = {
        "qid": question.qid,
        "conversation": conversation.sample_id,
        "category_id": int(question.category),
        "session": session,
        "ingest_session": answer.ingest_session,
    }
    with live_calls(), measure() as scope:
        try:
            context = await system.retrieve(conversation, question)
        except LLMCallError as exc:
            f = exc.failure
            return LatencyRecord(
                **base, search_s=None, local_s=None, server_s=None, total_s=None,
                failure=f"{f.stage}:{f.kind}: {f.message}", usage=scope.usage,
            )  # fmt: skip
    requests = sum(entry[0] for entry in scope.usage.values())
    search = context.search_latency_s
    server = scope.server_s  # overlapping requests counted once: the time any was in flight
    local = None if search is None else max(search - server, 0.0)
    answer_server = answer.answer_server_s
    total = None if answer_server is None else (search or 0.0) + answer_server
    return LatencyRecord(
        **base, search_s=search, local_s=local, server_s=server if search is not None else None,
        total_s=total, requests=requests, usage=scope.usage,
    )  # fmt: skip
