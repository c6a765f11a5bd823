"""A run's files could not be written: a full disk, a quota, a read-only file system.

None of these is a bug (ours or a system's): the run stops with one line naming the file (or folder) and
the reason, run.json (when it can still be written) says `stopped`, and the same command continues once
there is room. Every reply already paid for is in the response cache and every finished row on disk.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

__all__ = ["STORAGE_ERRNOS", "StorageFull", "describe", "named", "storage_error_in"]

STORAGE_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EROFS) if code is not None
)


class StorageFull(Exception):
    """A run file (or the response cache) could not be written for lack of room or permission to write
    anywhere on its file system. Its message is the one line the user sees."""


def named(exc: OSError, path: Path | str) -> OSError:
    """`exc` with the file it was about (`os.write` on a descriptor does not say which file)."""
    if exc.filename:
        return exc
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def _is_storage(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in STORAGE_ERRNOS
    # SQLite says so in its own words (the response cache).
    return isinstance(exc, sqlite3.Error) and "disk is full" in str(exc).lower()


def storage_error_in(exc: BaseException) -> BaseException | None:
    """The storage error behind `exc`, if any: itself, what it wraps (a system's crash, a task group), or
    what it was raised while handling."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if _is_storage(current):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def describe(exc: BaseException, fallback: Path | str) -> str:
    """One line: what could not be written, why, and how to go on."""
    if isinstance(exc, OSError):
        where = exc.filename or fallback
        reason = (exc.strerror or "").lower() or "no space left on device"
    else:
        where, reason = (
            "the response cache (llm-cache.sqlite)",
            "no space left on device (database or disk is full)",
        )
    return (
        f"cannot write {where}: {reason}; make room (or choose a folder on another disk: hydra.run.dir=..., "
        "cache.dir=...), then rerun the same command to continue: finished rows and every paid reply are kept"
    )
