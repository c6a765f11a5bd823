"""What every third-party adapter needs besides the bridge: its library's swallowed errors, telemetry
switched off, and a clear error when the extra is missing."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from dataclasses import dataclass
from types import ModuleType, TracebackType

from mem0bench.common.errors import ConfigurationError

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
            f"{system} needs the {module!r} library, which is not installed ({exc}): "
            f"pip install 'mem0bench[{extra}]'"
        ) from None


@dataclass(frozen=True)
class LogRecord:
    logger: str
    level: str
    message: str


class LibraryLog(logging.Handler):
    """Collects WARNING and worse records of a library's loggers while a `with` block runs.

    Libraries log and swallow many of their own failures (a reply they could not parse, an update they
    skipped); an adapter turns the collected records into StepFailure rows, so a system that lost its
    memories is not mistaken for one that had nothing to remember. Thread-safe: sync libraries run in
    worker threads. Only the named loggers (and their children) are listened to.
    """

    def __init__(self, loggers: list[str] | tuple[str, ...], level: int = logging.WARNING) -> None:
        super().__init__(level)
        self._names = tuple(loggers)
        self._lock_records = threading.Lock()
        self._records: list[LogRecord] = []
        self._saved: list[tuple[logging.Logger, int]] = []

    @property
    def records(self) -> list[LogRecord]:
        with self._lock_records:
            return list(self._records)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a library's bad format string must not break its own call
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message}: {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        with self._lock_records:
            self._records.append(LogRecord(record.name, record.levelname, message))

    def __enter__(self) -> LibraryLog:
        for name in self._names:
            logger = logging.getLogger(name)
            self._saved.append((logger, logger.level))
            if logger.level == logging.NOTSET or logger.level > self.level:
                logger.setLevel(self.level)
            logger.addHandler(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for logger, level in self._saved:
            logger.removeHandler(self)
            logger.setLevel(level)
        self._saved.clear()
