"""The isolated latency pass times a few questions at once where no figure feels it (issue 34, item 4).

Against a stand-in answering every call after a fixed delay: the pass's p50 and p95 are the delay (as one
question at a time measures them), its wall drops, and no kept figure was measured with a call waiting in
our client.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import pytest

from devtools.standin.server import StandinServer
from mem0bench.data.context import RetrievedContext
from mem0bench.data.model import Conversation, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.timing import measure
from mem0bench.memory.base import IngestReport, SystemBase
from mem0bench.pipeline.latency import (
    PASS_CONCURRENCY,
    PROBES,
    QUEUE_TOLERANCE_S,
    PassItem,
    PassStats,
    pass_concurrency,
    run_pass,
)
from mem0bench.rundir.records import AnswerRecord, LatencyRecord
from tests.test_latency_isolated import _conversation

KEY = "test-fake-latency-concurrent-0001"
DELAY_S = 0.1


class ParallelSearch(SystemBase):
    """A search of `calls` embedding calls made at once (a system searching several stores), plus
    `blocking_s` of its own computation holding the event loop. `calls_after`: from the search after the
    probes on, this many calls (a system whose searches grow: the probes could not foresee it)."""

    name = "parallel"

    def __init__(self, client: LLMClient, calls: int = 1, blocking_s: float = 0.0, calls_after: int = 0):
        super().__init__()
        self.client, self.calls, self.blocking_s, self.calls_after = client, calls, blocking_s, calls_after
        self.searches = 0

    async def ingest(self, conversation: Conversation) -> IngestReport:
        return IngestReport(conversation.sample_id, memory_tokens=0)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        self.searches += 1
        calls = self.calls_after if self.calls_after and self.searches > PROBES else self.calls
        with measure() as m:
            await asyncio.gather(
                *(self.client.embed([f"{question.question} {i}"], stage="search") for i in range(calls))
            )
            time.sleep(self.blocking_s)
        return RetrievedContext(
            "chunks", "x", 1, search_latency_s=m.latency_s, local_search_s=m.local_s, items=1
        )


def _items(conversation: Conversation) -> list[PassItem]:
    return [
        PassItem(
            conversation,
            q,
            AnswerRecord(
                qid=q.qid,
                conversation=conversation.sample_id,
                question=q.question,
                gold="g",
                category=q.category.label,
                category_id=int(q.category),
                prediction="p",
                context_tokens=1,
                # The answer stage's figures, far from DELAY_S: the pass's own must be measured, not copied.
                search_latency_s=5.0,
                total_latency_s=6.0,
                ingest_session="i1",
            ),  # fmt: skip
        )
        for q in conversation.questions
    ]


def _pass(
    server: StandinServer, make, *, max_concurrency: int = 32, limit: int = PASS_CONCURRENCY
) -> tuple[list[LatencyRecord], PassStats, float]:
    async def go() -> tuple[list[LatencyRecord], PassStats, float]:
        settings = LLMSettings(
            base_url=server.base_url, api_key=KEY, timeout_s=10.0, max_retries=1,
            max_concurrency=max_concurrency,
        )  # fmt: skip
        rows: list[LatencyRecord] = []
        async with LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small")) as client:
            system = make(client)
            conversation = _conversation()
            started = time.perf_counter()
            stats = await run_pass(
                system, _items(conversation), session="s1", max_concurrency=max_concurrency,
                record=rows.append, limit=limit,
            )  # fmt: skip
            wall = time.perf_counter() - started
        return rows, stats, wall

    return asyncio.run(go())


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def test_a_few_at_once_measure_what_one_at_a_time_does_in_a_fraction_of_the_wall(tmp_path: Path) -> None:
    with StandinServer(api_key=KEY, latency_ms=DELAY_S * 1000) as server:
        alone, alone_stats, alone_wall = _pass(server, ParallelSearch, limit=1)
        rows, stats, wall = _pass(server, ParallelSearch)
    assert alone_stats.concurrency == 1 and stats.concurrency == PASS_CONCURRENCY
    n = len(_conversation().questions)
    assert len(rows) == len(alone) == n == len({r.qid for r in rows}) and stats.timed == n
    assert stats.retimed_alone == 0 and stats.max_queue_s <= QUEUE_TOLERANCE_S  # no call queued in the client
    for figures in (alone, rows):
        search = [r.search_s for r in figures if r.search_s is not None]
        assert len(search) == n
        # The stand-in's delay, plus loopback and our own code (a loaded 2-core machine: wide upper bound).
        assert DELAY_S <= _p(search, 50) < DELAY_S + 0.05
        assert DELAY_S <= _p(search, 95) < DELAY_S + 0.1
    # Within bounds of what one at a time measured, question by question the medians agree.
    assert _p([r.search_s for r in rows], 50) < 1.25 * _p([r.search_s for r in alone], 50)
    # The probes run alone, the rest four at a time.
    assert wall < 0.6 * alone_wall


def test_calls_that_would_not_fit_the_slots_keep_the_pass_one_at_a_time() -> None:
    with StandinServer(api_key=KEY, latency_ms=20) as server:
        _, stats, _ = _pass(server, lambda c: ParallelSearch(c, calls=2), max_concurrency=2)
    assert stats.concurrency == 1 and stats.max_queue_s <= QUEUE_TOLERANCE_S


def test_a_search_that_computes_on_the_event_loop_is_timed_alone() -> None:
    with StandinServer(api_key=KEY, latency_ms=20) as server:
        rows, stats, _ = _pass(server, lambda c: ParallelSearch(c, blocking_s=0.03))
    assert stats.concurrency == 1
    assert _p([r.search_s for r in rows if r.search_s is not None], 50) < 0.03 + 0.02 + 0.04


def test_a_question_whose_calls_queued_is_timed_again_alone_and_the_rest_follow_alone() -> None:
    # The probes make one call each; later searches make three at once: four questions' twelve calls do
    # not fit four slots, so calls wait in the client. Those figures are not kept.
    with StandinServer(api_key=KEY, latency_ms=50) as server:
        rows, stats, _ = _pass(server, lambda c: ParallelSearch(c, calls_after=3), max_concurrency=4)
    n = len(_conversation().questions)
    assert stats.concurrency == 4 and stats.retimed_alone >= 1
    assert len(rows) == n == len({r.qid for r in rows}) and stats.timed == n
    assert stats.max_queue_s <= QUEUE_TOLERANCE_S
    assert max(r.search_s for r in rows if r.search_s is not None) < 0.05 + 0.06


@pytest.mark.parametrize(
    ("limit", "slots", "calls", "share", "expected"),
    [
        (4, 32, 1, 0.01, 4),  # a server-bound search: four at once
        (4, 32, 10, 0.01, 3),  # ten calls a search: three searches fill 30 of 32 slots
        (4, 1, 1, 0.0, 1),  # llm.max_concurrency=1: one at a time, as a single-slot server needs
        (4, 32, 1, 0.1, 3),  # a tenth of its time computing: two others add at most a fifth
        (4, 32, 1, 0.5, 1),  # mostly computation: alone
    ],
)
def test_pass_concurrency(limit: int, slots: int, calls: int, share: float, expected: int) -> None:
    assert pass_concurrency(limit, slots, calls, share) == expected
