"""Whole-file writes that a crash cannot leave half done."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import numpy as np


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; done once, at import
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def file_mode() -> int:
    """The mode an ordinary new file gets (0o666 less the umask): every run file is made with it, so
    that the group reads all of them or none (mkstemp alone would make some 0600)."""
    return _FILE_MODE


def atomic_write(path: Path, data: bytes | str | Iterable[str]) -> None:
    """Replace `path` with `data` (str is written as UTF-8): readers see the old content or the new, never
    a part, and the new content is on disk (fsync) before it replaces the old. The parent folder is
    created if missing; the temporary file sits beside `path` so the rename stays on one file system.
    An iterable of strings is written part by part: a big file need not be one string in memory first."""
    parts: Iterable[bytes | str] = [data] if isinstance(data, (bytes, str)) else data
    with _replacing(path) as fh:
        for part in parts:
            fh.write(part.encode("utf-8") if isinstance(part, str) else part)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[BinaryIO]:
    """A temporary file beside `path`, written by the caller, synced, then renamed over `path` (removed
    instead if the caller raised)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_npy(path: Path, array: np.ndarray) -> None:
    """`atomic_write` of `array` in NumPy's .npy format, written straight to the file (through a buffer
    first, a 0.3 GB embedding matrix was held twice more while it was saved)."""
    import numpy as np  # here: `atomic_write` alone (`run`'s start) needs no numpy

    with _replacing(path) as fh:
        np.save(fh, array)
