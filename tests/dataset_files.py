"""Dataset files for the loaders' tests: a fixture with one item changed, a suite loaded from a file, and the
one-line error a bad file must give."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mem0bench.suites import DatasetRequest, get_suite

DATA = Path(__file__).parent / "data"
LOCOMO_MINI = DATA / "locomo_mini.json"
LME_S = DATA / "longmemeval_s_mini.json"
PLUS = DATA / "locomo_plus_mini.json"


def edited(source: Path, dest: Path, item: int, change: Callable[[dict[str, Any]], Any]) -> Path:
    """`dest`: the JSON list in `source` with `change` applied to its item `item`. A lone surrogate is
    written as the escape '\\ud800', as a file would have it."""
    data = json.loads(source.read_text())
    change(data[item])
    dest.write_text(json.dumps(data))
    return dest


def load_suite(name: str, path: Path, tmp_path: Path, **kw: Any):
    return get_suite(name).load(
        DatasetRequest(path=str(path), data_dir=tmp_path, cache_dir=tmp_path / "hf", **kw)
    )


def one_line(err: BaseException, file: Path) -> str:
    """The error's text, checked to be one printable line that starts with the file's name."""
    text = str(err)
    assert "\n" not in text and "\r" not in text and "\x00" not in text, text
    assert text.startswith(f"{file}: "), text
    text.encode("utf-8")  # printable on any console: a lone surrogate is shown escaped
    return text
