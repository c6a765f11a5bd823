"""Reading JSON-lines files that an append-only writer may have been killed in the middle of.

The one policy for every JSONL file the project writes (run files, Mem0's operation logs):

* a missing file has no rows;
* a last line without its newline is a write cut short by a kill: it is skipped, even if it happens to
  parse (the writers end every row with a newline, so only the tail can be torn);
* a bad line anywhere else is damage, not a torn write: DamagedFileError naming the file and the line,
  which every command reports in one line (`mem0bench.cli.errors`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["DamagedFileError", "read_jsonl"]


class DamagedFileError(ValueError):
    """A file the harness wrote is damaged where no crash can have cut it: a line in the middle that is not
    JSON, bytes that are not UTF-8. A ValueError, as this module always raised, for the callers that catch
    one; `path` and `line` (None when the whole file is concerned) say where."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}: line {line}" if line is not None else str(path)
        super().__init__(
            f"{where} is damaged ({reason}): it was changed or corrupted outside the harness; restore it, "
            "or start a new run folder"
        )


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of `path`, in order, under the policy above."""
    if not path.exists():
        return
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise DamagedFileError(path, None, f"not UTF-8 text at byte {exc.start}") from None
    lines.pop()  # '' after a final newline, or the torn tail
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DamagedFileError(
                path, number, f"not valid JSON: {exc.msg.removesuffix(' starting at')}"
            ) from None
        except RecursionError:
            raise DamagedFileError(path, number, "JSON nested too deeply to read") from None
        if not isinstance(row, dict):
            raise DamagedFileError(path, number, f"a JSON {type(row).__name__}, not an object")
        yield row
