"""The client's slot pool serves ingest first, the longest remaining work first (issue 34, item 2).

A stream's chain of ingest calls decides how long a run takes against a real API; with a first-come pool,
its next call waits behind the answer and judge calls of conversations that finished early.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtools.standin.server import StandinServer
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.slots import FILL, PrioritySlots, current_key, ingest_priority

KEY = "test-fake-priority-key-0001"


async def _settle() -> None:
    """Let every ready task run up to its next real wait."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_full_pool_hands_the_next_slot_to_the_longest_ingest_then_the_rest_in_order() -> None:
    async def go() -> list[str]:
        slots = PrioritySlots(1)
        served: list[str] = []

        async def call(name: str, remaining: float | None) -> None:
            if remaining is None:
                async with slots:
                    served.append(name)
            else:
                with ingest_priority(lambda: remaining):
                    async with slots:
                        served.append(name)

        await slots.acquire()  # the pool is full
        tasks = []
        for name, remaining in [("answer1", None), ("short", 10), ("judge", None), ("long", 300)]:
            tasks.append(asyncio.create_task(call(name, remaining)))
            await _settle()
        assert slots.waiting == 4 and served == []
        slots.release()
        await asyncio.gather(*tasks)
        assert slots.in_use == 0 and slots.waiting == 0
        return served

    assert asyncio.run(go()) == ["long", "short", "answer1", "judge"]


def test_a_free_slot_is_taken_whatever_the_key_and_the_size_is_the_ceiling() -> None:
    async def go() -> None:
        slots = PrioritySlots(3)
        assert current_key() == FILL
        for _ in range(3):
            await slots.acquire()  # answers take free slots at once: nothing is held back for ingest
        assert slots.in_use == 3
        with ingest_priority(lambda: 5):
            waiter = asyncio.create_task(slots.acquire())
            await _settle()
            assert not waiter.done() and slots.waiting == 1  # the ceiling holds for ingest too
        slots.release()
        await waiter
        assert slots.in_use == 3

    asyncio.run(go())


def test_a_cancelled_waiter_loses_no_slot() -> None:
    async def go() -> None:
        slots = PrioritySlots(1)
        await slots.acquire()
        gone = asyncio.create_task(slots.acquire(key=(0, -100.0)))
        later = asyncio.create_task(slots.acquire())
        await _settle()
        gone.cancel()
        await _settle()
        assert slots.waiting == 1
        slots.release()
        await later  # the cancelled waiter's turn passed to the next one
        slots.release()
        assert slots.in_use == 0 and slots.waiting == 0
        # Cancelled just after the slot was handed over: it goes to the next waiter, not lost.
        await slots.acquire()
        handed = asyncio.create_task(slots.acquire())
        third = asyncio.create_task(slots.acquire())
        await _settle()
        slots.release()  # -> handed's future is set; cancel it before it resumes
        handed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await handed
        await third
        assert slots.in_use == 1 and slots.waiting == 0

    asyncio.run(go())


def test_the_client_sends_a_waiting_long_streams_ingest_call_before_waiting_answer_calls() -> None:
    """Through the real client and loopback HTTP: one slot, held by a slow call; answers queue first,
    then a short stream's ingest call, then a long stream's. The server sees the long one next."""

    async def go(server: StandinServer) -> list[str]:
        settings = LLMSettings(
            base_url=server.base_url, api_key=KEY, timeout_s=10.0, max_retries=1, max_concurrency=1
        )
        async with LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small")) as client:

            async def ask(text: str, stage: str, remaining: float | None) -> Any:
                messages = [{"role": "user", "content": text}]
                if remaining is None:
                    return await client.chat(messages, stage=stage)
                with ingest_priority(lambda: remaining):
                    return await client.chat(messages, stage=stage)

            tasks = [asyncio.create_task(ask("first", "answer", None))]
            await asyncio.sleep(0.05)  # it holds the only slot for the server's 200 ms
            for text, stage, remaining in [
                ("answer-a", "answer", None),
                ("answer-b", "answer", None),
                ("ingest-short", "ingest", 12),
                ("judge-a", "judge", None),
                ("ingest-long", "ingest", 355),
            ]:
                tasks.append(asyncio.create_task(ask(text, stage, remaining)))
                await _settle()
            assert client.slots.waiting == 5
            await asyncio.gather(*tasks)
        return [body["messages"][-1]["content"] for ep, body in server.requests if ep == "chat"]

    with StandinServer(api_key=KEY, latency_ms=200) as server:
        order = asyncio.run(go(server))
    assert order == ["first", "ingest-long", "ingest-short", "answer-a", "answer-b", "judge-a"]
