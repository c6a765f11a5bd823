"""The one error type of the data layer: a problem with a dataset file, said in one line."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from mem0bench.common.text import one_line

__all__ = ["MAX_ID_CHARS", "DatasetError", "check_path_id", "check_values", "parse_json"]


class DatasetError(Exception):
    """A dataset file is missing, unreadable, malformed, or cannot be downloaded.

    Attributes:
        file: the file concerned, as the user named it (or a URL for download problems); may be None.
        sample: the sample's ``sample_id``, or its index in the file (an int, shown as ``#<index>``) when
            it has none; None when the problem is not about one sample.
        field: the path of the offending field inside the sample, e.g. ``qa[12].question``; may be None.
        message: what is wrong, without the location.

    ``str()`` gives one line, from the outside in, e.g.
    ``locomo10.json: sample conv-26: qa[12].question: missing field 'question'``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        sample: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.sample = sample
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file:
            parts.append(self.file)
        if isinstance(self.sample, int):
            parts.append(f"sample #{self.sample}")
        elif self.sample is not None:
            parts.append(f"sample {_shown(self.sample)}")
        if self.field:
            parts.append(self.field)
        parts.append(one_line(self.message))
        return ": ".join(parts)

    def __reduce__(self):  # keep the keyword-only fields when pickled (e.g. across processes)
        return (_rebuild, (self.message, self.file, self.sample, self.field))


def _rebuild(message: str, file: str | None, sample: str | int | None, field: str | None) -> DatasetError:
    return DatasetError(message, file=file, sample=sample, field=field)


def _shown(text: str) -> str:
    """`text` as is when it prints as itself; else its repr, so a control character or a lone surrogate in
    a file's id cannot break the one line (or the console's encoding)."""
    return text if text.isprintable() else repr(text)


# ---------------------------------------------------------------- identifiers that become paths

MAX_ID_CHARS = 200
"""An id becomes one folder name: longer, some file systems refuse it (255 bytes) in the middle of a run."""
_DRIVE = re.compile(r"[A-Za-z]:")


def check_path_id(value: str, *, file: str, sample: str | int, field: str) -> str:
    """`value`, an identifier from a dataset file that the harness puts in a path (a sample id, a speaker
    name, a question id), when it is one plain folder name; else a DatasetError naming file, sample and
    field. Checked once, at load, so that no system, store or cleanup ever sees a name that climbs out of
    the run's folder ('../x'), is absolute ('/x', 'C:x'), or holds a NUL or another control character.

    Every loader calls this for every such field: one rule, not each system's own sanitising."""
    problem = None
    if not value.strip():
        problem = "is empty"
    elif "/" in value or "\\" in value:
        problem = "holds a path separator"
    elif value in (".", ".."):  # with no separator allowed, the only names that walk the tree
        problem = "is a relative path ('.' or '..')"
    elif _DRIVE.match(value):
        problem = "starts like an absolute Windows path"
    elif not value.isprintable():  # NUL, newline, escape, bidi controls, lone surrogates
        problem = "holds a NUL, a control character or a lone surrogate"
    elif len(value) > MAX_ID_CHARS:
        problem = f"is longer than {MAX_ID_CHARS} characters"
    if problem is not None:
        raise DatasetError(
            f"{_shown(value)[:80]} {problem}: it names a folder of the run and must be a plain name",
            file=file,
            sample=sample,
            field=field,
        )
    return value


# ---------------------------------------------------------------- values a run cannot carry


def _bad_value(value: Any) -> str | None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone surrogate (an escape such as \\ud800 that is no character): not valid text"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a number a dataset can hold (NaN or Infinity)"
    return None


def check_values(data: Any, *, file: str, sample: str | int | None = None, where: str = "") -> None:
    """Every string and number inside `data`: a lone surrogate (which json accepts as a '\\ud800' escape and
    no request can send) or a NaN or Infinity (which json accepts and would become the text 'nan') is a
    DatasetError naming the field, e.g. ``conversation.session_1[3].text``. Walked without recursion, so a
    deeply nested file costs no stack."""
    stack: list[tuple[str, Any]] = [(where, data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for raw_key, item in reversed(value.items()):
                key = str(raw_key)  # (JSON's keys are text; a caller's own mapping may have others)
                key_problem = _bad_value(key)
                label = f"{path}.{key}" if path else key
                if not key.isprintable() or key_problem:
                    label = f"{path}[{key!r}]"
                if key_problem:
                    raise DatasetError(f"a key {key_problem}", file=file, sample=sample, field=label)
                stack.append((label, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))
        else:
            problem = _bad_value(value)
            if problem is not None:
                raise DatasetError(problem, file=file, sample=sample, field=path or None)


def parse_json(raw: bytes | str, *, file: str) -> Any:
    """json.loads of a whole dataset file, every failure one DatasetError line naming the file (the line and
    column of a syntax error; a nesting too deep for the parser, which would otherwise be a RecursionError
    traceback)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        what = e.msg.removesuffix(" starting at")
        # (an unterminated string can only run into the end of the file: strict JSON has no raw newlines)
        if e.pos >= len(e.doc.rstrip()) or what == "Unterminated string":
            what += "; the file ends early (truncated?)"
        raise DatasetError(f"invalid JSON at line {e.lineno}, column {e.colno}: {what}", file=file) from None
    except UnicodeDecodeError as e:
        raise DatasetError(f"not UTF-8 text (byte offset {e.start})", file=file) from None
    except RecursionError:
        raise DatasetError("JSON nested too deeply to read (not a dataset's shape)", file=file) from None
