"""The steps mem0 swallowed: its WARNING+ log records, attributed to the stream that caused them.

mem0 catches its own parse errors (a fact-extraction reply without a "facts" list, an update reply that is
not JSON, an action naming a memory id it never showed) and only logs them; the `add` call then returns
as if the conversation held nothing worth remembering. Every such record becomes a StepFailure row.

Attribution: the adapter runs mem0's `AsyncMemory`, whose blocking work goes through `asyncio.to_thread`,
which copies the caller's context into the worker thread. A ContextVar set around one library call is
therefore visible in every thread that call logs from, so records of two streams running at once (two
speakers, several conversations) never mix, and a record is counted once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["LIBRARY_LOGGER", "LogRecordRow", "capture", "classify", "install"]

LIBRARY_LOGGER = "mem0"
"""mem0's loggers are all children of this one (mem0.memory.main, mem0.memory.kuzu_memory, ...)."""


@dataclass(frozen=True)
class LogRecordRow:
    logger: str
    level: int
    message: str


@dataclass
class _Capture:
    rows: list[LogRecordRow] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, row: LogRecordRow) -> None:
        with self.lock:
            self.rows.append(row)


_current: ContextVar[_Capture | None] = ContextVar("mem0bench_mem0_oss_log", default=None)


class _Handler(logging.Handler):
    """Routes a mem0 record to the capture of the call that logged it; others go on to the root logger."""

    def emit(self, record: logging.LogRecord) -> None:
        target = _current.get()
        if target is None:
            logging.getLogger().handle(record)
            return
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None and str(record.exc_info[1]) not in message:
            message = f"{message} ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        target.add(LogRecordRow(record.name, record.levelno, message))


_installed = threading.Lock()
_handler: _Handler | None = None


def install() -> None:
    """Attach the routing handler to mem0's logger once per process.

    mem0 logs every add and search at INFO ("Total existing memories: 3"); those stay below WARNING. Its
    WARNING+ records are captured (not printed: each becomes a failures.jsonl row instead)."""
    global _handler
    with _installed:
        if _handler is not None:
            return
        _handler = _Handler(level=logging.WARNING)
        library = logging.getLogger(LIBRARY_LOGGER)
        library.setLevel(logging.WARNING)
        library.addHandler(_handler)
        library.propagate = False


@contextmanager
def capture() -> Iterator[list[LogRecordRow]]:
    """Collect the WARNING+ records mem0 logs inside this block (in this context and the threads it starts
    through asyncio.to_thread). The list is filled as records arrive."""
    install()
    target = _Capture()
    token = _current.set(target)
    try:
        yield target.rows
    finally:
        _current.reset(token)


# (message prefix, step, kind): mem0 1.0.11's own wording in mem0/memory/main.py and kuzu_memory.py.
_KNOWN: tuple[tuple[str, str, str], ...] = (
    ("Error in new_retrieved_facts", "extraction", "malformed"),
    ("Error in new memory actions response", "update", "library_error"),
    ("Empty response from LLM", "update", "malformed"),
    ("Invalid JSON response", "update", "malformed"),
    ("Error iterating new_memories_with_actions", "update", "malformed"),
    ("Error in memory processing loop", "update", "malformed"),
    ("Error processing memory action", "update_action", "malformed"),
    ("Error awaiting memory task", "update_action", "library_error"),
    ("Memory ", "update_action", "malformed"),  # "Memory <id> not found for session ID update"
    ("Error in search tool", "graph_entities", "malformed"),
    ("Error during graph cleanup", "graph_delete", "library_error"),
    ("Reranking failed", "rerank", "library_error"),
)


def classify(row: LogRecordRow) -> tuple[str, str]:
    """(step, kind) of a captured record; an unknown WARNING+ record is a ("library", "library_error")."""
    for prefix, step, kind in _KNOWN:
        if row.message.startswith(prefix):
            return step, kind
    return "library", "library_error"
