"""Identical runs send identical requests, so the harness's LLM cache serves a rerun or a re-ingest.

LangMem names new memories and each prompt's session block with `uuid.uuid4()`, and LangGraph's
InMemoryStore stamps items with the wall clock (which the agent's prompt and the search tool show the
model). Both would make every request of a rerun new to the cache. While a message is ingested, the ids
come from a generator seeded with the message (conversation, dia_id, position) and the store's clock reads
the message's session date (plus one second per message of the session, to keep their order): the ids stay
unique, the requests repeat exactly, and the items' timestamps become the conversation's own dates.

Only the names inside `langmem.knowledge.extraction`, `langmem.knowledge.tools` (their `uuid`) and
`langgraph.store.memory` (its `datetime`) are replaced, by stand-ins that behave exactly like the originals
outside such a message (no seed set).
"""

from __future__ import annotations

import contextlib
import importlib
import random
import threading
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

__all__ = ["install", "seeded"]

_rng: ContextVar[random.Random | None] = ContextVar("mem0bench_langmem_rng", default=None)
_now: ContextVar[datetime | None] = ContextVar("mem0bench_langmem_now", default=None)
_lock = threading.Lock()
_installed: list[bool] = []


class _SeededUUID:
    """The `uuid` module as LangMem's modules see it: `uuid4()` from the message's generator."""

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)

    @staticmethod
    def uuid4() -> uuid.UUID:
        rng = _rng.get()
        if rng is None:
            return uuid.uuid4()
        with _lock:
            bits = rng.getrandbits(128)
        return uuid.UUID(int=bits, version=4)


class _SessionClock(datetime):
    """`datetime` as LangGraph's InMemoryStore sees it: `now()` is the message's session time."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        fixed = _now.get()
        if fixed is None:
            return datetime.now(tz)
        return fixed.astimezone(tz) if tz is not None else fixed.replace(tzinfo=None)


def install() -> None:
    """Put the stand-ins in place (once)."""
    with _lock:
        if _installed:
            return
        for name in ("langmem.knowledge.extraction", "langmem.knowledge.tools"):
            module = importlib.import_module(name)
            if getattr(module, "uuid", None) is uuid:
                module.uuid = _SeededUUID()  # type: ignore[attr-defined]
        store_module = importlib.import_module("langgraph.store.memory")
        if getattr(store_module, "datetime", None) is datetime:
            store_module.datetime = _SessionClock  # type: ignore[attr-defined]
        _installed.append(True)


@contextlib.contextmanager
def seeded(seed: str, when: datetime | None) -> Iterator[None]:
    """Within this block (and the tasks it starts), ids come from `seed` and the store's clock reads
    `when` (a naive time is taken as UTC); `when` None leaves the store on the wall clock
    (`method.store_clock=wall`, as the reference ran: its requests then differ from run to run)."""
    aware = when if when is None or when.tzinfo is not None else when.replace(tzinfo=UTC)
    rng_token = _rng.set(random.Random(seed))
    now_token = _now.set(aware)
    try:
        yield
    finally:
        _now.reset(now_token)
        _rng.reset(rng_token)
