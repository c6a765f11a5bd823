"""What every third-party adapter needs besides the bridge: its library's swallowed errors, telemetry
switched off, and a clear error when the extra is missing."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint

__all__ = [
    "LibraryLog",
    "LogRecord",
    "TELEMETRY_OFF",
    "import_library",
    "quiet_telemetry",
]

TELEMETRY_OFF: dict[str, str] = {
    "MEM0_TELEMETRY": "False",  # mem0ai (posthog)
    "GRAPHITI_TELEMETRY_ENABLED": "false",  # graphiti-core (posthog)
    "ANONYMIZED_TELEMETRY": "False",  # chromadb
    "LANGCHAIN_TRACING_V2": "false",  # langchain / langsmith
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING": "false",
    "POSTHOG_DISABLED": "1",
    "HF_HUB_OFFLINE": "1",  # nothing fetched from a hub at run time
    "TRANSFORMERS_OFFLINE": "1",
    "DO_NOT_TRACK": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm (A-Mem) would download its price list at import
}


def quiet_telemetry() -> None:
    """Turn the libraries' telemetry and hub downloads off (before they are imported). A user's own
    explicit setting of one of these variables is left alone."""
    for name, value in TELEMETRY_OFF.items():
        os.environ.setdefault(name, value)


def import_library(module: str, extra: str, system: str) -> ModuleType:
    """Import an adapter's library, or say in one line which extra installs it."""
    quiet_telemetry()
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(
            f"{system} needs the {module!r} library, which is not installed ({exc}): {install_hint(extra)}"
        ) from None


@dataclass(frozen=True)
class LogRecord:
    logger: str
    level: int
    message: str


@dataclass
class _Capture:
    records: list[LogRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class LibraryLog:
    """The WARNING and worse records of a library's loggers, each routed to the library call that logged it.

    Libraries log and swallow many of their own failures (a reply they could not parse, an update they
    skipped); an adapter turns the captured records into StepFailure rows, so a system that lost its
    memories is not mistaken for one that had nothing to remember. `capture()` sets a context variable:
    asyncio tasks, `asyncio.to_thread` and `LLMBridge.run_blocking` copy the context, so a record logged in any task or worker thread
    of the call goes to that call's list, and two calls running at once (two speakers, two conversations)
    never mix their records. Captured records are not printed (failures.jsonl is their place); records
    logged outside any capture go on to the root logger as before.

    Make one instance per library, at module level: its handler is attached once per process.
    """

    def __init__(self, loggers: Sequence[str]) -> None:
        self.names = tuple(loggers)
        self._current: ContextVar[_Capture | None] = ContextVar(
            f"mem0bench_log_{'_'.join(self.names)}", default=None
        )
        self._install_lock = threading.Lock()
        self._installed = False

    def _install(self) -> None:
        with self._install_lock:
            if self._installed:
                return
            handler = _Router(self._current)
            for name in self.names:
                logger = logging.getLogger(name)
                if logger.getEffectiveLevel() > logging.WARNING or logger.level == logging.NOTSET:
                    logger.setLevel(logging.WARNING)
                logger.addHandler(handler)
                logger.propagate = False  # the router hands uncaptured records to the root logger itself
            self._installed = True

    @contextmanager
    def capture(self) -> Iterator[list[LogRecord]]:
        """Collect what the library logs inside this block (this context and the tasks and threads it
        starts). The list fills as records arrive; read it after the block."""
        self._install()
        target = _Capture()
        token = self._current.set(target)
        try:
            yield target.records
        finally:
            self._current.reset(token)


class _Router(logging.Handler):
    def __init__(self, current: ContextVar[_Capture | None]) -> None:
        super().__init__(logging.WARNING)
        self._current = current

    def emit(self, record: logging.LogRecord) -> None:
        target = self._current.get()
        if target is None:
            logging.getLogger().handle(record)
            return
        try:
            message = record.getMessage()
        except Exception:  # a library's bad format string must not break its own call
            message = str(record.msg)
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and str(error) not in message:
            message = f"{message} ({type(error).__name__}: {error})"
        with target.lock:
            target.records.append(LogRecord(record.name, record.levelno, message))
