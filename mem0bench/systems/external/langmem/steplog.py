"""What happened inside one library call: the warnings and errors LangMem/trustcall logged and swallowed,
the chat calls it made, and the exception it raised, attributed to the call even when conversations ingest
concurrently.

The library's log records go through `support.LibraryLog`, which routes each to the step open in the
task that logged it (asyncio tasks and LangChain's executor threads copy the context), so two
conversations ingesting at once never mix their records.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mem0bench.systems.external.support import LibraryLog

__all__ = ["LIBRARY_LOGGERS", "Step", "step"]

LIBRARY_LOGGERS = ("extraction", "trustcall", "langmem")
"""trustcall logs its swallowed validation and patch errors to 'extraction'; langmem to its modules."""


@dataclass
class Step:
    """One library call (one message ingested, or one search)."""

    records: list[tuple[str, int, str]] = field(default_factory=list)
    """(logger, level, message) of every WARNING+ record logged during the call."""
    chat_calls: int = 0
    """Chat-model calls the library made in the call (counted by a LangChain callback)."""
    tool_errors: list[str] = field(default_factory=list)
    """Errors of tools the agent ran (agent mode), which the agent swallows."""
    invalid_calls: list[str] = field(default_factory=list)
    """Tool calls of a reply whose arguments were not JSON: LangChain sets them aside
    (`invalid_tool_calls`) and trustcall and the agent ignore them, so the memory they held is lost."""


_current: ContextVar[Step | None] = ContextVar("mem0bench_langmem_step", default=None)
_lock = threading.Lock()
_LOG = LibraryLog(LIBRARY_LOGGERS)


@contextlib.contextmanager
def step() -> Iterator[Step]:
    """Collect what the library logs in this context (and the tasks and threads it starts)."""
    current = Step()
    with _LOG.capture() as records:
        token = _current.set(current)
        try:
            yield current
        finally:
            _current.reset(token)
            current.records.extend((r.logger, r.level, r.message) for r in records)


def current_step() -> Step | None:
    return _current.get()


def count_chat_call() -> None:
    current = _current.get()
    if current is not None:
        with _lock:
            current.chat_calls += 1


def note_tool_error(message: str) -> None:
    current = _current.get()
    if current is not None:
        with _lock:
            current.tool_errors.append(message)


def note_invalid_call(message: str) -> None:
    current = _current.get()
    if current is not None:
        with _lock:
            current.invalid_calls.append(message)


def describe_exception(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:500] if text else type(exc).__name__


def callback_handler(base: Any) -> Any:
    """A LangChain callback handler (subclass of `base`, langchain_core's BaseCallbackHandler) that counts
    chat-model calls, tool errors and unparseable tool calls into the current step."""

    class _Counter(base):
        run_inline = True  # called in the caller's context, so the step's context variable is visible

        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
            count_chat_call()

        def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
            note_tool_error(describe_exception(error))

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            for generations in getattr(response, "generations", None) or []:
                for generation in generations:
                    message = getattr(generation, "message", None)
                    for call in getattr(message, "invalid_tool_calls", None) or []:
                        args = " ".join(str(call.get("args") or "").split())[:200]
                        note_invalid_call(
                            f"{call.get('name')}: {call.get('error') or 'arguments not JSON'}: {args}"
                        )

    return _Counter()
