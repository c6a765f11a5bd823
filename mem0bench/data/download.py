"""Fetch the released locomo10.json (checked against its sha256), or find the file the user named."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from mem0bench.common.text import one_line
from mem0bench.data.errors import DatasetError

__all__ = [
    "LOCOMO_URL",
    "LOCOMO_SHA256",
    "LOCOMO_FILENAME",
    "download_file",
    "download_locomo",
    "resolve_dataset_path",
]

LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
LOCOMO_FILENAME = "locomo10.json"

_CHUNK = 1 << 16


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, as lowercase hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def download_locomo(
    dest_dir: Path,
    url: str = LOCOMO_URL,
    timeout: float = 30,
    *,
    sha256: str = LOCOMO_SHA256,
    option: str = "dataset.path=FILE",
) -> Path:
    """Make sure ``dest_dir/locomo10.json`` holds the released file, downloading it if needed.

    If the file is already there with the expected sha256 nothing is fetched. Otherwise it is downloaded
    into a temporary file beside the destination, checked, and renamed into place atomically, so an
    interrupted or corrupted download never leaves a bad ``locomo10.json`` behind.

    Args:
        dest_dir: the folder to hold the file (created if missing).
        url: where to fetch it from.
        timeout: socket timeout in seconds.
        sha256: the expected hash (the released file's by default).
        option: how the calling command takes a dataset file (`--dataset FILE` for `import`), named in
            the error message.

    Returns:
        The path of the verified file.

    Raises:
        DatasetError: the download failed (e.g. no network; the message says to pass
            `option` instead) or the bytes do not have the expected sha256.
    """
    return download_file(Path(dest_dir), LOCOMO_FILENAME, url, sha256, timeout=timeout, option=option)


def download_file(
    dest_dir: Path,
    filename: str,
    url: str,
    sha256: str | None,
    *,
    timeout: float = 30,
    option: str = "dataset.path=FILE",
) -> Path:
    """`dest_dir/filename`, downloaded from `url` unless already there with the expected sha256 (with
    `sha256` None, a file already there is kept as it is and a download is taken as it comes)."""
    dest = dest_dir / filename
    if dest.is_file() and (sha256 is None or file_sha256(dest) == sha256):
        return dest
    created = not dest_dir.exists()
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DatasetError(f"cannot create the folder: {e.strerror or e}", file=str(dest_dir)) from None
    try:
        return _fetch(dest, url, timeout, sha256, option)
    except DatasetError:
        if created:  # leave no empty folder behind a failed first download
            with contextlib.suppress(OSError):
                dest_dir.rmdir()
        raise


def _fetch(dest: Path, url: str, timeout: float, sha256: str | None, option: str) -> Path:
    """Download ``url`` into a temporary file beside ``dest``, check it, rename it to ``dest``."""
    dest_dir = dest.parent

    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest_dir)
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                for block in iter(lambda: resp.read(_CHUNK), b""):
                    h.update(block)
                    out.write(block)
        except (TimeoutError, urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            raise DatasetError(
                f"download failed ({_one_line(reason)}); without network, pass {option} pointing at a "
                f"copy of {dest.name} instead",
                file=url,
            ) from None
        actual = h.hexdigest()
        if sha256 is not None and actual != sha256:
            raise DatasetError(
                f"downloaded file has sha256 {actual}, expected {sha256}; the upstream file may have "
                f"changed: pass {option} to use a copy you trust",
                file=url,
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def resolve_dataset_path(path: str | None, data_dir: Path, *, option: str = "dataset.path=FILE") -> Path:
    """The dataset file to load.

    A given ``path`` is used as is (it must exist). Without one, ``data_dir/locomo10.json`` is used if it
    holds the released file (sha256-checked), and downloaded there otherwise. `option`: how the calling
    command takes a dataset file, for the message of a failed download.

    Raises:
        DatasetError: the given path does not exist, or the download failed.
    """
    if path is not None:
        p = Path(path).expanduser()
        if not p.exists():
            raise DatasetError("file not found", file=str(path))
        if not p.is_file():
            raise DatasetError("not a file", file=str(path))
        return p
    return download_locomo(Path(data_dir), option=option)


def _one_line(reason: object) -> str:
    return one_line(reason) or type(reason).__name__
