"""Folders and files only their owner can open, whatever the umask: what holds conversations, memories or
LLM replies (the response cache, a run's `state/`, its FalkorDB data). On a shared machine a umask of 022
would leave them readable by every user. A run's outputs (metrics, tables, the report) are not made
private: they follow the user's umask, as any file they write.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["private_dir", "private_file"]


def private_dir(path: Path) -> Path:
    """`path` made (with its missing parents, which follow the umask) and set to 0700: also a folder
    made before (by an older version, or by a library) is tightened. A folder of another user's is left
    as it is (its owner decides)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    _tighten(path, 0o700)
    return path


def private_file(path: Path) -> None:
    """An existing file of ours set to 0600 (one made before this rule, or by a library)."""
    _tighten(path, 0o600)


def _tighten(path: Path, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        info = path.stat()
        if info.st_uid == os.geteuid() and info.st_mode & 0o777 != mode:
            path.chmod(mode)
