"""Reading JSON-lines files that an append-only writer may have been killed in the middle of.

The one policy for every JSONL file the project writes (run files, Mem0's operation logs):

* a missing file has no rows;
* a last line without its newline is a write cut short by a kill: it is skipped, even if it happens to
  parse (the writers end every row with a newline, so only the tail can be torn);
* a bad line anywhere else is damage, not a torn write: ValueError naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["read_jsonl"]


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of `path`, in order, under the policy above."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").split("\n")
    lines.pop()  # '' after a final newline, or the torn tail
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None
