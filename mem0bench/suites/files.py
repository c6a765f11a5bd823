"""Reading a suite's JSON file: where it is (given, in the data folder, or fetched), its bytes and sha256."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from mem0bench.common.text import one_line
from mem0bench.data.download import download_file, file_sha256
from mem0bench.data.errors import DatasetError, check_values, parse_json
from mem0bench.suites.base import SourceFile

__all__ = ["fetch_source", "read_json", "resolve_source"]


def resolve_source(path: str | None, data_dir: Path, source: SourceFile) -> Path:
    """A given `path` as it is (it must be a file); else `data_dir/<filename>`, fetched there if missing."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise DatasetError("file not found" if not p.exists() else "not a file", file=str(path))
        return p
    held = data_dir / source.filename
    if held.is_file() and (source.sha256 is None or file_sha256(held) == source.sha256):
        return held
    return fetch_source(source, data_dir)


def fetch_source(source: SourceFile, data_dir: Path) -> Path:
    """Download `source` into `data_dir` (sha256-checked where the suite pins one)."""
    if source.hub_repo is None:
        return download_file(data_dir, source.filename, source.url, source.sha256)
    return _from_hub(source, data_dir)


def _from_hub(source: SourceFile, data_dir: Path) -> Path:
    """A file of a Hugging Face dataset repository, through huggingface_hub (the hub client `datasets` uses),
    checked against the hub's own sha256 of the file where the hub gives one (its LFS object id)."""
    try:
        from huggingface_hub import HfApi, hf_hub_download
        from huggingface_hub.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - installed with the harness's dependencies
        raise DatasetError(
            f"fetching from the Hugging Face hub needs huggingface_hub; or pass dataset.path=FILE "
            f"pointing at a copy of {source.filename}",
            file=source.url,
        ) from None
    assert source.hub_repo is not None
    # The client logs each retry of an unreachable hub as a warning: the failure is said once, below.
    hf_logging.set_verbosity_error()
    try:
        path = Path(
            hf_hub_download(
                repo_id=source.hub_repo, filename=source.filename, repo_type="dataset", local_dir=data_dir
            )
        )
        info = HfApi().get_paths_info(source.hub_repo, [source.filename], repo_type="dataset")
    except Exception as exc:  # any hub failure (offline, moved, rate limited): one line
        reason = one_line(exc) or type(exc).__name__
        if "cannot find the requested files in the local cache" in reason:  # the client's "no connection"
            reason = "the hub cannot be reached" + (" and HF_HUB_OFFLINE is set" if _hub_offline() else "")
        raise DatasetError(
            f"download from the hub failed ({reason}); without network, pass "
            f"dataset.path=FILE pointing at a copy of {source.filename}",
            file=source.url,
        ) from None
    lfs = getattr(info[0], "lfs", None) if info else None
    expected = getattr(lfs, "sha256", None)
    actual = file_sha256(path)
    if expected and actual != expected:
        path.unlink(missing_ok=True)
        raise DatasetError(f"downloaded file has sha256 {actual}, the hub says {expected}", file=source.url)
    return path


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def read_json(path: Path) -> tuple[Any, str]:
    """The parsed JSON of `path` and the sha256 of its bytes; a bad file is one DatasetError line."""
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"cannot read the file: {e.strerror or e}", file=file) from None
    data = parse_json(raw, file=file)
    # A lone surrogate or a NaN anywhere: refused here, naming the record (its index) and the field.
    if isinstance(data, list):
        for i, item in enumerate(data):
            check_values(item, file=file, sample=i)
    else:
        check_values(data, file=file)
    return data, hashlib.sha256(raw).hexdigest()
