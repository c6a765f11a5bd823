"""Reading a whole-file JSON object (metrics.json, run.json) with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mem0bench.common.text import one_line


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; ValueError with one line naming the file when it cannot be read or is
    not an object (callers re-raise it as their own error type)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read JSON ({one_line(exc) or type(exc).__name__})") from None
    except RecursionError:  # a damaged (or planted) file nested deeper than the parser goes
        raise ValueError(f"{path}: cannot read JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data
