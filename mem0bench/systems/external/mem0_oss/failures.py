"""The steps mem0 swallowed: its WARNING+ log records, attributed to the stream that caused them.

mem0 catches its own parse errors (a fact-extraction reply without a "facts" list, an update reply that is
not JSON, an action naming a memory id it never showed) and only logs them; the `add` call then returns
as if the conversation held nothing worth remembering. Every such record becomes a StepFailure row.

Attribution (`support.LibraryLog`): the adapter runs mem0's `AsyncMemory`, whose blocking work goes through
`asyncio.to_thread`, which copies the caller's context into the worker thread, so records of two streams
running at once (two speakers, several conversations) never mix, and a record is counted once.
"""

from __future__ import annotations

from mem0bench.llm.types import FailureKind
from mem0bench.systems.external.support import LibraryLog, LogRecord

__all__ = ["LIBRARY_LOG", "LogRecord", "capture", "classify"]

LIBRARY_LOG = LibraryLog(["mem0"])
"""mem0's loggers are all children of "mem0" (mem0.memory.main, mem0.memory.kuzu_memory, ...). It logs
every add and search at INFO ("Total existing memories: 3"); only WARNING and worse are captured."""

capture = LIBRARY_LOG.capture


# (message prefix, step, kind): mem0 1.0.11's own wording in mem0/memory/main.py and kuzu_memory.py.
_KNOWN: tuple[tuple[str, str, FailureKind], ...] = (
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


def classify(row: LogRecord) -> tuple[str, FailureKind]:
    """(step, kind) of a captured record; an unknown WARNING+ record is a ("library", "library_error")."""
    for prefix, step, kind in _KNOWN:
        if row.message.startswith(prefix):
            return step, kind
    return "library", "library_error"
