"""LOCOMO data: the typed model, loading with validation, download, and summary statistics."""

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
from mem0bench.data.stats import dataset_stats, format_stats_table

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
