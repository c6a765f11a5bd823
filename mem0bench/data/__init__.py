"""LOCOMO data: the typed model, loading with validation, download, and summary statistics."""

from typing import Any

from mem0bench.data.download import (
    LOCOMO_FILENAME,
    LOCOMO_SHA256,
    LOCOMO_URL,
    download_locomo,
    file_sha256,
    resolve_dataset_path,
)
from mem0bench.data.errors import DatasetError
from mem0bench.data.loader import fold_caption, load_dataset, parse_session_date
from mem0bench.data.model import Category, Conversation, Dataset, Question, Session, Turn

__all__ = [
    "LOCOMO_FILENAME",
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "Category",
    "Conversation",
    "Dataset",
    "DatasetError",
    "Question",
    "Session",
    "Turn",
    "dataset_stats",
    "download_locomo",
    "file_sha256",
    "fold_caption",
    "format_stats_table",
    "load_dataset",
    "parse_session_date",
    "resolve_dataset_path",
]


def __getattr__(name: str) -> Any:
    """The statistics (`data stats`) on first use: they bring tabulate (~45 ms with data.stats), which a run
    never needs, and every run imports this package before its first request (PEP 562)."""
    if name in ("dataset_stats", "format_stats_table"):
        from mem0bench.data import stats

        return getattr(stats, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
