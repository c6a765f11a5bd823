"""Latency percentiles count only rows none of whose calls came from the cache (issue 8)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from devtools.standin.server import StandinServer
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.memory.base import SystemContext
from mem0bench.pipeline.aggregate import latency_summary, prediction_rows
from mem0bench.pipeline.answer import answer_question
from mem0bench.report.collect import RunSummary
from mem0bench.report.tables import table2
from mem0bench.rundir.schema import Metrics, PredictionRow
from mem0bench.systems.baselines import RAG
from tests.test_baselines import make_conversation
from tests.test_report import make_metrics

KEY = "test-fake-latency-key-0001"


def _row(search: float | None, total: float | None, cached: bool | None) -> PredictionRow:
    scored = dict.fromkeys(PredictionRow.fields(), 0)
    row = {**scored, "judge": [], "search_latency_s": search, "total_latency_s": total, "cached": cached}
    return PredictionRow.from_dict({**row, "failure": None}, "test row")


def test_percentiles_leave_cached_rows_out():
    # Two real rows (1 s and 3 s total) and three cached ones at ~0 s: the median must be 2, not ~0.
    rows = [_row(0.5, 1.0, False), _row(1.5, 3.0, False)] + [_row(0.0, 0.001, True)] * 3
    latency = latency_summary(rows)
    assert latency["n_uncached"] == 2 and latency["n_cached"] == 3
    assert latency["total"]["p50"] == pytest.approx(2.0)
    assert latency["search"]["p50"] == pytest.approx(1.0)


def test_no_uncached_row_gives_null_percentiles():
    latency = latency_summary([_row(0.0, 0.001, True)] * 4 + [_row(0.2, 0.4, None)])
    assert latency == {"search": None, "total": None, "n_uncached": 0, "n_cached": 4}


def _summary(latency: dict) -> RunSummary:
    metrics = Metrics.from_dict({**make_metrics("rag", 0.5), "latency_s": latency}, "test metrics")
    return RunSummary(path=Path("r"), method="rag", config={}, metrics=metrics, status="complete")


def test_report_marks_latency_on_few_or_no_uncached_rows():
    few = {
        "search": {"p50": 0.2, "p95": 0.7},
        "total": {"p50": 0.8, "p95": 1.9},
        "n_uncached": 7,
        "n_cached": 93,
    }
    none = {"search": None, "total": None, "n_uncached": 0, "n_cached": 100}
    many = {**few, "n_uncached": 100, "n_cached": 0}
    df = table2([_summary(few), _summary(none), _summary(many)])
    assert df["total p95 (s)"].tolist() == ["1.900 (n=7)", "cached", "1.900"]
    assert df["search p50 (s)"].tolist() == ["0.200 (n=7)", "cached", "0.200"]


def test_answer_rows_say_whether_a_reply_came_from_the_cache(tmp_path):
    # Real client, real cache, real loopback HTTP: the same question twice; the second time the search
    # embedding and the answer come from the cache.
    conversation = make_conversation()
    question = conversation.questions[0]

    async def go(server: StandinServer) -> list:
        settings = LLMSettings(base_url=server.base_url, api_key=KEY, timeout_s=5.0, max_retries=1)
        cache = ResponseCache(tmp_path / "cache.sqlite")
        client = LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), cache)
        try:
            rag = RAG(context=SystemContext(client=client, state_dir=tmp_path / "state"), chunk_size=128, k=1)
            await rag.ingest(conversation)
            first = await answer_question(rag, client, conversation, question)
            second = await answer_question(rag, client, conversation, question)
            return [first, second]
        finally:
            await client.aclose()
            cache.close()

    with StandinServer(api_key=KEY) as server:
        first, second = asyncio.run(go(server))
    assert first.failure is None and second.failure is None
    assert first.cached is False
    assert second.cached is True
    assert latency_summary(prediction_rows([first, second], {}, runs=1))["n_uncached"] == 1
