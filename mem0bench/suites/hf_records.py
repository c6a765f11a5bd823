"""A suite's JSON list of records, read through the Hugging Face `datasets` library.

Every top-level field is declared `datasets.Json()`. Arrow wants one type per column, and a suite file
need not give one: LongMemEval's `answer` is a string or a number, a turn carries `has_answer` or not.
Left to infer, `datasets` re-encodes a column whose type changes part-way as JSON text and then casts it to
the inferred type, so a wrong type in one record can silently change every other record's value. Declared
as JSON, each value comes back exactly as the file wrote it, and the suite's loader checks the types itself
with messages that name the record and the field. A field the caller did not name (a later version of the
file, one's own annotations) is read the same way and left to the caller to ignore.

The Arrow table `datasets` builds is kept under `cache_dir` (keyed by `datasets` on the file's path and
modification time; the sha256 a run records is always of the file itself): a second load of a large file maps the table instead of parsing the JSON again.
Rows are decoded one at a time, so a caller that turns each into its own objects never holds every
record's decoded JSON at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mem0bench.common.text import one_line
from mem0bench.data.download import file_sha256
from mem0bench.data.errors import DatasetError
from mem0bench.suites.files import read_json

if TYPE_CHECKING:  # imported when a file is read: `datasets` (with pandas, pyarrow) takes seconds to import
    import datasets

__all__ = ["Records", "read_records"]


@dataclass(frozen=True)
class Records:
    """The records of one file, each a dict of its top-level fields (a field a record lacks is None)."""

    path: Path
    sha256: str
    """Of the file's bytes: what a run records."""
    table: datasets.Dataset

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return dict(self.table[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (dict(row) for row in self.table)

    def column(self, name: str) -> list[Any]:
        """One field of every record (only that column is decoded)."""
        return list(self.table[name])


def read_records(path: Path, fields: Sequence[str], cache_dir: Path) -> Records:
    """The JSON list of objects in `path`, through `datasets`, `fields` and any other top-level field as
    JSON values. Problems are one DatasetError line naming the file (and the record and field when the
    problem is in one)."""
    # `datasets` reads a top-level object, or JSON Lines, as records of their own, and a list of strings as
    # records with a `text` field: the file must open a list of objects.
    opening = _opening(path)
    if opening != b"[{":
        data, _ = read_json(path)  # the one-line error of a file that is not JSON at all
        if not isinstance(data, list):
            raise DatasetError("expected a JSON list of records at the top level", file=str(path))
        if not data:
            raise DatasetError("the file holds no records", file=str(path))
        raise DatasetError("expected an object", file=str(path), sample=0)
    import datasets

    datasets.disable_progress_bars()  # a one-line-per-problem command line, not a progress display
    datasets.logging.set_verbosity_error()
    names = list(fields)
    for _ in range(2):  # a second pass when the file has fields beyond `fields`
        try:
            table = datasets.load_dataset(
                "json",
                data_files=str(path),
                features=datasets.Features({name: datasets.Json() for name in names}),
                cache_dir=str(cache_dir),
                split="train",
            )
            break
        except Exception as exc:  # any failure of the library: said in one line below
            extra = _new_columns(exc, names)
            if not extra:
                raise _diagnose(path, exc) from None
            logging.getLogger("mem0bench.suites").info(
                "%s: fields %s are not read by the harness", path, ", ".join(sorted(extra))
            )
            names += sorted(extra)
    else:  # pragma: no cover - the second pass declares every column the first one found
        raise DatasetError("the datasets library could not settle the file's columns", file=str(path))
    if len(table) == 0:
        raise DatasetError("the file holds no records", file=str(path))
    return Records(path=path, sha256=file_sha256(path), table=table)


def _opening(path: Path) -> bytes:
    """The file's first two bytes that are not whitespace (after any BOM): b"[{" opens a list of objects."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise DatasetError(f"cannot read the file: {e.strerror or e}", file=str(path)) from None
    return bytes(b for b in head.removeprefix(b"\xef\xbb\xbf") if b not in b" \t\r\n")[:2]


def _new_columns(exc: BaseException, declared: list[str]) -> set[str]:
    """The top-level fields the table had beyond `declared`, when that is why `datasets` failed."""
    from datasets.table import CastError

    for cause in _chain(exc):
        if isinstance(cause, CastError):
            return set(cause.table_column_names) - set(declared)
    return set()


def _diagnose(path: Path, exc: BaseException) -> DatasetError:
    """Why `datasets` could not read `path`, in one line: the file's own problem where a plain JSON read
    finds one, else the library's innermost message."""
    if isinstance(exc, ValueError) and "corresponds to no data" in str(exc):
        return DatasetError("the file holds no records", file=str(path))
    data, _ = read_json(path)  # raises the one-line error of a file that is not JSON
    if not isinstance(data, list):
        return DatasetError("expected a JSON list of records at the top level", file=str(path))
    if not data:
        return DatasetError("the file holds no records", file=str(path))
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            return DatasetError("expected an object", file=str(path), sample=i)
    inner = [c for c in _chain(exc) if str(c).strip()][-1:]
    reason = one_line(inner[0]) if inner else type(exc).__name__
    return DatasetError(f"the datasets library could not read the file ({reason[:300]})", file=str(path))


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen
