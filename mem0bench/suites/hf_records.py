"""A suite's JSON list of records, read through the Hugging Face `datasets` library.

Every top-level field is declared `datasets.Json()`. Arrow wants one type per column, and a suite file
need not give one: LongMemEval's `answer` is a string or a number, a turn carries `has_answer` or not.
Left to infer, `datasets` re-encodes a column whose type changes part-way as JSON text and then casts it to
the inferred type, so a wrong type in one record can silently change every other record's value. Declared
as JSON, each value comes back exactly as the file wrote it, and the suite's loader checks the types itself
with messages that name the record and the field. A field the caller did not name (a later version of the
file, one's own annotations) is read the same way and left to the caller to ignore.

Memory. Given a JSON list, `datasets` parses the whole file at once and converts it to JSON Lines in
memory: about 2.5 times a plain `json.load`'s peak (measured on a 90 MB file), which for LongMemEval_M's
2.7 GB is tens of GB. So the list is first copied to JSON Lines here one record at a time (its peak: one
record, ~5 MB in M), kept in `cache_dir` under the file's sha256, and `datasets` reads that in chunks. The
Arrow table it builds is kept in `cache_dir` too: a second load maps it instead of parsing anything.
Rows are decoded one at a time, so a caller that turns each into its own objects never holds every
record's decoded JSON at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mem0bench.common.errors import exception_chain
from mem0bench.common.text import one_line
from mem0bench.data.download import file_sha256
from mem0bench.data.errors import DatasetError, check_values

if TYPE_CHECKING:  # imported when a file is read: `datasets` (with pandas, pyarrow) takes seconds to import
    import datasets

__all__ = ["Records", "read_records"]

_CHUNK = 1 << 20
_MAX_RECORD = 512 << 20
"""Characters one record may take: beyond, the file is taken as broken rather than read whole."""
_SPACE = re.compile(r"\s*")


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

    def column(self, name: str) -> list[Any]:
        """One field of every record (only that column is decoded)."""
        return list(self.table[name])


def read_records(path: Path, fields: Sequence[str], cache_dir: Path) -> Records:
    """The JSON list of objects in `path`, through `datasets`, `fields` and any other top-level field as
    JSON values. Problems are one DatasetError line naming the file (and the record and field when the
    problem is in one)."""
    sha256 = _sha256(path)
    lines = _json_lines(path, sha256, cache_dir)
    import datasets

    datasets.disable_progress_bars()  # a one-line-per-problem command line, not a progress display
    datasets.logging.set_verbosity_error()
    names = list(fields)
    for _ in range(2):  # a second pass when the file has fields beyond `fields`
        try:
            table = datasets.load_dataset(
                "json",
                data_files=str(lines),
                features=datasets.Features({name: datasets.Json() for name in names}),
                cache_dir=str(cache_dir),
                split="train",
            )
            break
        except Exception as exc:  # any failure of the library: one line
            extra = _new_columns(exc, names)
            if not extra:
                inner = [c for c in exception_chain(exc) if str(c).strip()][-1:]
                reason = one_line(inner[0])[:300] if inner else type(exc).__name__
                raise DatasetError(
                    f"the datasets library could not read it ({reason})", file=str(path)
                ) from None
            logging.getLogger("mem0bench.suites").info(
                "%s: fields %s are not read by the harness", path, ", ".join(sorted(extra))
            )
            names += sorted(extra)
    else:  # pragma: no cover - the second pass declares every column the first one found
        raise DatasetError("the datasets library could not settle the file's columns", file=str(path))
    return Records(path=path, sha256=sha256, table=table)


def _sha256(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError as e:
        raise DatasetError(f"cannot read the file: {e.strerror or e}", file=str(path)) from None


def _json_lines(path: Path, sha256: str, cache_dir: Path) -> Path:
    """`cache_dir/<sha256>.jsonl`: the records of `path` one a line, written unless already there."""
    out = cache_dir / f"{sha256}.jsonl"
    if out.is_file():
        return out
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{sha256[:16]}.", suffix=".part", dir=cache_dir)
    except OSError as e:
        raise DatasetError(f"cannot write the cache: {e.strerror or e}", file=str(cache_dir)) from None
    try:
        with open(path, encoding="utf-8-sig") as f, os.fdopen(fd, "w", encoding="utf-8") as w:
            for index, record in enumerate(_ListReader(f, str(path))):
                # A lone surrogate (unwritable as UTF-8) or a NaN (which would become the text 'nan'):
                # refused here, before the copy that later loads reuse is made.
                check_values(record, file=str(path), sample=_label(record, index))
                w.write(json.dumps(record, ensure_ascii=False))
                w.write("\n")
        os.replace(tmp, out)  # only a complete copy is ever found under the final name
    except UnicodeDecodeError as e:
        raise DatasetError(f"not UTF-8 text ({e.reason})", file=str(path)) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return out


def _label(record: dict[str, Any], index: int) -> str | int:
    """How an error names a record: its question_id where it has a plain one, else its index."""
    qid = record.get("question_id")
    return qid if isinstance(qid, str) and qid.isprintable() and qid.strip() else index


class _ListReader:
    """The objects of a JSON list, decoded one at a time from a text stream."""

    def __init__(self, f: IO[str], file: str) -> None:
        self.f, self.file = f, file
        self.buf, self.pos, self.decoder = "", 0, json.JSONDecoder()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._peek() != "[":
            raise DatasetError("expected a JSON list of records at the top level", file=self.file)
        self.pos += 1
        if self._peek() == "]":
            raise DatasetError("the file holds no records", file=self.file)
        index = 0
        while True:
            record = self._value(index)
            if not isinstance(record, dict):
                raise DatasetError("expected an object", file=self.file, sample=index)
            yield record
            after = self._peek()
            self.pos += 1
            if after == "]":
                break
            if after != ",":
                raise DatasetError(f"invalid JSON after record #{index}: expected ',' or ']'", file=self.file)
            index += 1
        if self._peek() != "":
            raise DatasetError("invalid JSON: text after the list", file=self.file)

    def _more(self) -> bool:
        """Read on, dropping what is consumed; False at the end of the file."""
        chunk = self.f.read(max(_CHUNK, len(self.buf) - self.pos))  # doubling: a long record costs O(size)
        self.buf, self.pos = self.buf[self.pos :] + chunk, 0
        return bool(chunk)

    def _peek(self) -> str:
        """The next character that is not whitespace, not consumed ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def _value(self, index: int) -> Any:
        self._peek()
        while True:
            try:
                value, self.pos = self.decoder.raw_decode(self.buf, self.pos)
                return value
            except RecursionError:
                raise DatasetError(
                    f"record #{index} is JSON nested too deeply to read (not a record's shape)",
                    file=self.file,
                ) from None
            except json.JSONDecodeError as e:
                # Cut by the chunk's end, or broken: read on until it decodes, the file ends, or it is
                # too long to be a record.
                if len(self.buf) - self.pos > _MAX_RECORD or not self._more():
                    raise DatasetError(f"invalid JSON in record #{index}: {e.msg}", file=self.file) from None


def _new_columns(exc: BaseException, declared: list[str]) -> set[str]:
    """The top-level fields the table had beyond `declared`, when that is why `datasets` failed."""
    from datasets.table import CastError

    for cause in exception_chain(exc):
        if isinstance(cause, CastError):
            return set(cause.table_column_names) - set(declared)
    return set()
