"""One process at a time in a folder: an exclusive `flock` on a lock file inside it.

Two processes writing one run folder interleave their appends and clear each other's state files, so a
run folder has one owner. The lock is the kernel's (`fcntl.flock`), so it is released when its process dies
however it dies; the file only carries who holds it (pid, host, since when) for the refusal message. A file
left behind by a killed process is not a lock: the next process takes it over and rewrites its contents.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from mem0bench.common.errors import ConfigurationError

LOCK_NAME = ".mem0bench.lock"
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS})

__all__ = ["LOCK_NAME", "FolderInUse", "folder_lock", "lock_owner"]


class FolderInUse(ConfigurationError):
    """Another live process holds the folder's lock."""


def lock_owner(folder: Path) -> str:
    """Who holds (or last held) the folder's lock, as 'pid N on host H since T', or '' when unknown."""
    try:
        data = json.loads((Path(folder) / LOCK_NAME).read_text(encoding="utf-8"))
        return f"pid {int(data['pid'])} on host {data['host']} since {data['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _open_locked(path: Path) -> int | None:
    """A descriptor on `path` holding its exclusive lock, or None when another process holds it.

    The file is removed on release, so a process may have opened it just before that and then lock an
    unlinked file; it checks after locking that the path still names the file it locked, and tries again
    if not.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the previous owner removed it between our open and our lock: take the new one


@contextlib.contextmanager
def folder_lock(folder: Path, *, what: str, advice: str) -> Iterator[None]:
    """Hold `folder`'s lock for the block; raise FolderInUse (one line: `what` is in use by whom, and
    `advice`) when another process holds it."""
    folder = Path(folder)
    path = folder / LOCK_NAME
    try:
        fd = _open_locked(path)
    except OSError as exc:
        if exc.errno in _NO_LOCKS:  # a file system without locks (some network mounts): go on, and say so
            print(
                f"warning: cannot lock {what} {folder} ({exc.strerror}): make sure no other process uses it",
                file=sys.stderr,
            )
            yield
            return
        raise ConfigurationError(f"cannot lock {what} {folder} ({exc.strerror or exc}): {advice}") from None
    if fd is None:
        owner = lock_owner(folder) or "another process"
        raise FolderInUse(f"{what} {folder} is in use by {owner}: {advice}")
    try:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        yield
    finally:
        # Removed while still locked, so no process can find it locked by us after this point.
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)
