"""The isolated latency pass (`eval.latency=isolated`, the default).

Timed inline, a question's search shares the event loop, the HTTP pool and the model server with every
other question, answer and judge call of the run: its latency says as much about the harness's load as
about the system. So, once every answer and judgement is in, each question's retrieval is run again with
its model calls made live (`llm.client.live_calls`: the cache neither answers nor keeps them, so the figure
is a server's and the run's cached replies stay the ones its answers were made from). The rows go to
latency.jsonl; metrics.json keeps them apart from the inline figures.

A few questions at once, where that changes no figure (`run_pass`). One at a time, the pass waited out
every round trip in turn (161 s at 100 ms on LOCOMO). What must be alone is what a question's figure
would feel of the others: a queue in our client, or the others' own computation holding the event loop.
So the first `PROBES` questions are timed alone; from them the pass learns how many calls a search makes
and what share of its time is its own computation, and runs up to `PASS_CONCURRENCY` questions at once
only while (a) their calls together fit `llm.max_concurrency`, so no call waits for a slot, and (b) the
others' computation could add at most `LOCAL_SHARE_MAX` to a question's time. A question whose calls
waited in the client anyway (a slot, the rate budget: `timing` counts it) is not kept: it is timed again
alone, and the rest of the pass runs one question at a time. Every kept figure was measured with no
client-side queue, as a run at `llm.max_concurrency=1` would measure it.

Which questions: every answered one, or a stratified sample of `eval.latency_questions` (seeded by
`eval.seed`, so a rerun picks the same). A question already measured against the memory that stands is
not measured again unless `run.remeasure_latency=true`: a rerun of a finished run makes no call here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
    "PASS_CONCURRENCY",
    "LatencyMode",
    "PassItem",
    "PassStats",
    "latency_plan",
    "measure_question",
    "pass_concurrency",
    "run_pass",
    "standing_latency",
]

LatencyMode = Literal["isolated", "inline"]
LATENCY_MODES: tuple[LatencyMode, ...] = ("isolated", "inline")
LATENCY_FILE = "latency.jsonl"

PASS_CONCURRENCY = 4
"""At most this many questions timed at once (fewer when their calls would not fit the client's slots)."""
PROBES = 3
"""Questions timed alone first: they tell how many calls a search makes and how much is its own work."""
LOCAL_SHARE_MAX = 0.25
"""The most the other questions' computation may add to one question's time, as a share of its search."""
QUEUE_TOLERANCE_S = 0.002
"""Client-side waiting below this is the cost of taking a free slot, not a queue."""


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
    """One question's retrieval, live. Nothing else of the run may be in flight (the caller's job)."""
    record, _ = await _measure(system, conversation, question, answer, session=session)
    return record


async def _measure(
    system: MemorySystem,
    conversation: Conversation,
    question: Question,
    answer: AnswerRecord,
    *,
    session: str,
) -> tuple[LatencyRecord, float]:
    """-> (the row, seconds its calls waited inside the client: for a slot, the rate budget, a backoff)."""
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
            ), scope.wait_s  # fmt: skip
    requests = sum(entry[0] for entry in scope.usage.values())
    search = context.search_latency_s
    server = scope.server_s  # overlapping requests counted once: the time any was in flight
    local = None if search is None else max(search - server, 0.0)
    answer_server = answer.answer_server_s
    total = None if answer_server is None else (search or 0.0) + answer_server
    return LatencyRecord(
        **base, search_s=search, local_s=local, server_s=server if search is not None else None,
        total_s=total, requests=requests, usage=scope.usage,
    ), scope.wait_s  # fmt: skip


@dataclass(frozen=True)
class PassItem:
    """One question the pass times, with what it needs."""

    conversation: Conversation
    question: Question
    answer: AnswerRecord


@dataclass
class PassStats:
    """What the pass did: for tests and the benchmark, not for the results."""

    timed: int = 0
    concurrency: int = 1
    """Questions at once after the probes."""
    retimed_alone: int = 0
    """Questions whose calls waited in the client while others ran: timed again alone, that row kept."""
    max_queue_s: float = 0.0
    """The longest client-side wait of any kept row (0 but for backoffs after a failed attempt)."""


def pass_concurrency(limit: int, max_concurrency: int, calls: int, local_share: float) -> int:
    """Questions to time at once: at most `limit`; their calls (`calls` each, at most) within the client's
    `max_concurrency` slots; and the others' own computation (`local_share` of a search, each) adding at
    most `LOCAL_SHARE_MAX` to a question's time."""
    fits_slots = max_concurrency // max(calls, 1)
    fits_loop = limit if local_share <= 0 else 1 + int(LOCAL_SHARE_MAX / local_share)
    return max(1, min(limit, fits_slots, fits_loop))


async def run_pass(
    system: MemorySystem,
    items: Sequence[PassItem],
    *,
    session: str,
    max_concurrency: int,
    record: Callable[[LatencyRecord], None],
    limit: int = PASS_CONCURRENCY,
) -> PassStats:
    """Time every item's retrieval (see the module's doc): `record` gets each kept row as it is made.
    Nothing else of the run may be in flight."""
    stats = PassStats()
    calls, local_share = 1, 0.0

    async def alone(item: PassItem) -> LatencyRecord:
        row, waited = await _measure(system, item.conversation, item.question, item.answer, session=session)
        stats.max_queue_s = max(stats.max_queue_s, waited)
        stats.timed += 1
        record(row)
        return row

    for item in items[:PROBES]:
        row = await alone(item)
        calls = max(calls, row.requests)
        if row.search_s and row.local_s is not None:
            local_share = max(local_share, row.local_s / row.search_s)
    rest = list(items[PROBES:])
    stats.concurrency = pass_concurrency(limit, max_concurrency, calls, local_share) if rest else 1
    if stats.concurrency > 1:
        later: list[PassItem] = []  # timed again (or for the first time) alone, after the others
        gate = asyncio.Semaphore(stats.concurrency)

        async def together(item: PassItem) -> None:
            async with gate:
                if later:  # a queue formed: from now on one at a time
                    later.append(item)
                    return
                row, waited = await _measure(
                    system, item.conversation, item.question, item.answer, session=session
                )
                if waited > QUEUE_TOLERANCE_S and row.failure is None:
                    stats.retimed_alone += 1
                    later.append(item)
                    return
                stats.max_queue_s = max(stats.max_queue_s, waited)
                stats.timed += 1
                record(row)

        async with asyncio.TaskGroup() as group:
            for item in rest:
                group.create_task(together(item))
        rest = later
    for item in rest:
        await alone(item)
    return stats
