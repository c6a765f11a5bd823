"""The isolated latency pass (issue 18): each question's retrieval timed again alone, its calls live.

A whole run (real client, real cache, real loopback HTTP to the stand-in) at high concurrency, with many
questions answered and judged at once; then the pass. Its p50 must land near what the system's search
costs by itself, and the cache must neither answer the pass's calls nor keep them.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest

from devtools.standin.server import StandinServer
from mem0bench import tokens
from mem0bench.data.context import RetrievedContext
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.client import LLMClient, live_calls
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.timing import measure
from mem0bench.memory.base import IngestReport, MemorySystem, SystemBase, SystemContext
from mem0bench.pipeline.attempt import RunOptions
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.latency import LATENCY_FILE, latency_plan
from mem0bench.pipeline.runner import Runner
from mem0bench.report.collect import RunSummary
from mem0bench.report.tables import table2
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, LatencyRecord
from mem0bench.rundir.schema import Metrics
from mem0bench.suites.locomo import MULTI_HOP, OPEN_DOMAIN, SINGLE_HOP, TEMPORAL
from mem0bench.systems.baselines import RAG
from tests.test_baselines import make_conversation
from tests.test_report import make_metrics

KEY = "test-fake-isolated-latency-key-0001"
N_QUESTIONS = 24
CATEGORIES = (SINGLE_HOP, MULTI_HOP, TEMPORAL, OPEN_DOMAIN)


def _conversation(sample_id: str = "conv-lat") -> Conversation:
    base = make_conversation(sample_id=sample_id)
    questions = tuple(
        Question(f"{sample_id}:q{i}", sample_id, i, f"What about topic {i}?", "stars", CATEGORIES[i % 4])
        for i in range(N_QUESTIONS)
    )
    return replace(base, questions=questions)


class SleepySearch(SystemBase):
    """Embeds the question (one live call), then computes for `seconds` without yielding (time.sleep
    stands for a library's own CPU work): its search costs `seconds` plus one embedding round trip."""

    name = "sleepy"

    def __init__(self, client: LLMClient, seconds: float) -> None:
        super().__init__()
        self.client, self.seconds = client, seconds

    async def ingest(self, conversation: Conversation) -> IngestReport:
        return IngestReport(conversation.sample_id, memory_tokens=0)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        with measure() as m:
            await self.client.embed([question.question], stage="search")
            time.sleep(self.seconds)
        return RetrievedContext(
            "chunks", "nothing", 1, search_latency_s=m.latency_s, local_search_s=m.local_s, items=1
        )


def _cache_rows(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as db:
        chat = db.execute("SELECT count(*) FROM chat").fetchone()[0]
        emb = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    return chat, emb


async def _run(
    server: StandinServer, tmp_path: Path, make_system, options: RunOptions, conversation: Conversation
) -> tuple[dict, list[LatencyRecord]]:
    settings = LLMSettings(
        base_url=server.base_url, api_key=KEY, timeout_s=10.0, max_retries=1, max_concurrency=32
    )
    cache = ResponseCache(tmp_path / "cache.sqlite")
    client = LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), cache)
    system: MemorySystem = make_system(client)
    rundir = RunDirectory(tmp_path / "run")
    try:
        runner = Runner(
            dataset=Dataset("mem", "0", (conversation,)), questions={conversation.sample_id: list(conversation.questions)},
            system=system, client=client, rundir=rundir, judge=JudgeSettings(model="gpt-4o-mini", runs=3),
            options=options, method_name=system.name,
        )  # fmt: skip
        outcome = await runner.run()
    finally:
        await system.aclose()
        await client.aclose()
        cache.close()
    rows = [LatencyRecord.from_dict(r) for r in rundir.rows(LATENCY_FILE)]
    return outcome.metrics, rows


ISOLATED = RunOptions(progress=False, latency="isolated")


@pytest.mark.parametrize("seconds", [0.08])
def test_isolated_p50_is_the_systems_own_search_time(tmp_path, seconds):
    conversation = _conversation()
    with StandinServer(api_key=KEY) as server:
        metrics, rows = asyncio.run(
            _run(server, tmp_path, lambda c: SleepySearch(c, seconds), ISOLATED, conversation)
        )
    isolated = metrics["latency_isolated_s"]
    assert isolated["n"] == N_QUESTIONS == len(rows) and isolated["n_failed"] == 0
    # Alone, a search costs its sleep plus one loopback embedding call (milliseconds). Wide upper bound:
    # a loaded CI machine; the inline figure, with 24 questions' blocking work interleaved, runs higher.
    assert seconds <= isolated["search"]["p50"] < seconds + 0.12
    assert seconds * 0.95 <= isolated["local"]["p50"]
    assert all(r.requests == 1 and r.server_s is not None for r in rows)
    assert metrics["latency_s"]["search"]["p50"] is not None  # the inline figures stay, apart
    # Total: the search plus the answer call's own server time (from the answer row, here uncached).
    assert isolated["n_total"] == N_QUESTIONS
    assert all(r.total_s is not None and r.search_s is not None and r.total_s >= r.search_s for r in rows)


def test_isolated_p50_follows_a_slow_embedding_server(tmp_path):
    delay = 0.1
    conversation = _conversation()

    def rag(client: LLMClient) -> RAG:
        return RAG(context=SystemContext(client=client, state_dir=tmp_path / "state"), chunk_size=128, k=2)

    with StandinServer(api_key=KEY, latency_ms=delay * 1000) as server:
        metrics, rows = asyncio.run(_run(server, tmp_path, rag, ISOLATED, conversation))
    isolated = metrics["latency_isolated_s"]
    assert isolated["n"] == N_QUESTIONS
    assert delay <= isolated["search"]["p50"] < delay + 0.15
    assert delay <= isolated["server"]["p50"]  # the wait is the server's, not ours
    assert isolated["local"]["p50"] < 0.05


def test_the_pass_neither_reads_nor_writes_the_cache_and_a_rerun_pays_only_when_asked(tmp_path):
    conversation = _conversation()
    make = lambda c: SleepySearch(c, 0.0)  # noqa: E731
    with StandinServer(api_key=KEY) as server:
        asyncio.run(_run(server, tmp_path, make, ISOLATED, conversation))
        cached_before = _cache_rows(tmp_path / "cache.sqlite")
        # The answer stage cached one embedding per question; the pass asked for each again, live.
        assert cached_before[1] == N_QUESTIONS
        assert server.count("embeddings") == 2 * N_QUESTIONS

        # A rerun of the finished run: nothing to measure, no request at all.
        seen = server.count()
        _, rows = asyncio.run(_run(server, tmp_path, make, ISOLATED, conversation))
        assert server.count() == seen and len(rows) == N_QUESTIONS

        # Asked to remeasure: exactly the pass's calls (one embedding per question), none from the cache
        # (every one of them is in it), none written to it.
        asyncio.run(_run(server, tmp_path, make, replace(ISOLATED, remeasure_latency=True), conversation))
        assert server.count() == seen + N_QUESTIONS
        assert server.count("embeddings") == 3 * N_QUESTIONS
        assert _cache_rows(tmp_path / "cache.sqlite") == cached_before


def test_live_calls_skip_the_cache_only_inside_the_block(tmp_path):
    async def go(server: StandinServer) -> None:
        settings = LLMSettings(base_url=server.base_url, api_key=KEY, timeout_s=5.0, max_retries=1)
        cache = ResponseCache(tmp_path / "c.sqlite")
        async with LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), cache) as client:
            messages = [{"role": "user", "content": "hello"}]
            with live_calls():
                live = await client.chat(messages, stage="answer")
                await client.embed(["one text"], stage="search")
            assert not live.cached and _cache_rows(tmp_path / "c.sqlite") == (0, 0)
            assert cache.hits == 0 and cache.misses == 0  # not even looked up
            first = await client.chat(messages, stage="answer")
            again = await client.chat(messages, stage="answer")
            assert not first.cached and again.cached
        cache.close()

    with StandinServer(api_key=KEY) as server:
        asyncio.run(go(server))
        assert server.count("chat") == 2 and server.count("embeddings") == 1


def _answer(qid: str, *, failure: str | None = None, ingest: str = "i1") -> AnswerRecord:
    return AnswerRecord(
        qid=qid, conversation="c", question="?", gold="g", category="single_hop", category_id=1,
        prediction="p", context_tokens=1, search_latency_s=0.1, total_latency_s=0.2, failure=failure,
        ingest_session=ingest,
    )  # fmt: skip


def test_the_plan_samples_answered_questions_and_skips_measured_ones():
    questions = _conversation().questions
    answers = {q.qid: _answer(q.qid) for q in questions}
    answers[questions[0].qid] = _answer(questions[0].qid, failure="answer:timeout: x")
    measured = {
        questions[1].qid: LatencyRecord(questions[1].qid, "c", 1, 0.1, 0.0, 0.1, 0.2, ingest_session="i1")
    }
    every = latency_plan(questions, answers, measured, limit=None, seed=0, remeasure=False)
    assert [q.qid for q in every] == [q.qid for q in questions[2:]]
    again = latency_plan(questions, answers, measured, limit=None, seed=0, remeasure=True)
    assert [q.qid for q in again] == [q.qid for q in questions[1:]]
    sample = latency_plan(questions, answers, {}, limit=8, seed=3, remeasure=False)
    assert len(sample) == 8 and {q.category for q in sample} == set(CATEGORIES)
    assert sample == latency_plan(questions, answers, {}, limit=8, seed=3, remeasure=False)


def _summary(name: str, **blocks: dict) -> RunSummary:
    metrics = Metrics.from_dict({**make_metrics("rag", 0.5), **blocks}, "test metrics")
    return RunSummary(path=Path(name), method="rag", config={}, metrics=metrics, status="complete")


INLINE = {
    "search": {"p50": 0.2, "p95": 0.7},
    "total": {"p50": 0.8, "p95": 1.9},
    "n_uncached": 40,
    "n_cached": 0,
}


def test_table2_says_which_mode_each_latency_comes_from():
    isolated = {
        "mode": "isolated", "search": {"p50": 0.011, "p95": 0.02}, "total": {"p50": 0.5, "p95": 0.9},
        "local": None, "server": None, "n": 30, "n_total": 28, "n_failed": 0,
    }  # fmt: skip
    df = table2(
        [_summary("a", latency_s=INLINE, latency_isolated_s=isolated), _summary("b", latency_s=INLINE)]
    )
    assert df["search p50 (s)"].tolist() == ["0.011", "0.200"]
    assert df["total p95 (s)"].tolist() == ["0.900", "1.900"]
    assert df["latency"].tolist() == ["isolated (n=30, total n=28)", "inline (n=40)"]
    # Runs without the pass: the table keeps the columns it always had.
    assert "latency" not in table2([_summary("b", latency_s=INLINE)]).columns


class NotesEncoding(SleepySearch):
    """SleepySearch (its ingest counts nothing) noting, at each search's start, whether tiktoken's encoding
    was loaded already: the first load must not land inside a timed search."""

    def __init__(self, client: LLMClient, empty: bool = False) -> None:
        super().__init__(client, 0.0)
        self.loaded_at_search: list[bool] = []
        self.empty_context_expected = empty

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        self.loaded_at_search.append(tokens.is_loaded())
        if self.empty_context_expected:
            return RetrievedContext("none", "", 0, search_latency_s=None, items=0)
        return await super().retrieve(conversation, question)


@pytest.mark.parametrize("empty", [False, True])
def test_the_encoding_loads_before_the_first_timed_search_only_when_counted(tmp_path, empty):
    conversation = _conversation()
    systems: list[NotesEncoding] = []

    def make(client: LLMClient) -> NotesEncoding:
        systems.append(NotesEncoding(client, empty))
        return systems[-1]

    tokens.encoding.cache_clear()  # as in a fresh process (tiktoken keeps its own copy: reloading is quick)
    with StandinServer(api_key=KEY) as server:
        asyncio.run(_run(server, tmp_path, make, ISOLATED, conversation))
    seen = systems[0].loaded_at_search
    assert len(seen) >= N_QUESTIONS  # inline searches, then the isolated pass's
    # A system that searches: loaded before its first search. One that retrieves nothing by design counts
    # nothing, and the run never loads the encoding.
    assert set(seen) == {not empty}
    assert tokens.is_loaded() is not empty
