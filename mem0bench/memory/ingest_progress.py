"""How a system tells the harness that part of a conversation's ingestion is done, without knowing who
listens.

The runner sets a listener around each `system.ingest(conversation)` call; a system calls
`report_ingested()` after each unit of work it finishes (Mem0 and Mem0^g: one message pair of one speaker's
stream). The listener lives in a context variable, so it follows the conversation's task and every task
that task starts (the per-speaker streams), and two conversations ingesting at once never mix their counts.
A system that reports nothing still works: the runner counts its conversation as done when `ingest`
returns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

Listener = Callable[[int], None]

_listener: ContextVar[Listener | None] = ContextVar("mem0bench_ingest_listener", default=None)


def report_ingested(units: int = 1) -> None:
    """`units` more units of the current conversation's ingestion are done (no-op when nobody listens)."""
    listener = _listener.get()
    if listener is not None:
        listener(units)


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Route `report_ingested` calls made in this context (and tasks started from it) to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


# ---- the sequential chain of each stream (run.json timing.ingest.chain_bound_s) -------------------------

ChainListener = Callable[[str, float, int], None]
"""listener(stream, seconds, calls): one more step of `stream`'s sequential chain took `seconds` of requests
in flight over `calls` requests."""

_chain_listener: ContextVar[ChainListener | None] = ContextVar("mem0bench_chain_listener", default=None)


def report_chain(stream: str, seconds: float, calls: int) -> None:
    """A step of `stream`'s sequential chain (the part of ingestion that must run in order, e.g. Mem0's
    update decisions of one pair) spent `seconds` with a request in flight over `calls` requests; no-op
    when nobody listens. The longest stream's sum is the ingest's chain bound: no concurrency gets below it.
    """
    listener = _chain_listener.get()
    if listener is not None:
        listener(stream, seconds, calls)


@contextlib.contextmanager
def timing_chains(listener: ChainListener) -> Iterator[None]:
    """Route `report_chain` calls made in this context (and tasks started from it) to `listener`."""
    token = _chain_listener.set(listener)
    try:
        yield
    finally:
        _chain_listener.reset(token)
