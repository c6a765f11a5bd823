"""The real CLI in a pseudo-terminal: what a person at a terminal would see, frame by frame.

`PtyRun` starts `python -m mem0bench ...` with stdin/stdout/stderr on a pty (so `isatty()` is true and
tqdm draws bars, as in a real terminal) and collects everything written, with the time each chunk
arrived. `screen_lines` splits the byte stream at carriage returns and newlines: each piece is one state
of one line of the screen as it was drawn.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from devtools.e2e import REPO

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class PtyRun:
    def __init__(self, args: list[str], env: dict[str, str], *, cwd: Path = REPO, columns: int = 160) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mem0bench", *args],
            cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self._master = master
        self.chunks: list[tuple[float, bytes]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self._master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(self._master, 65536)
                except OSError:  # the child closed the terminal (EIO on Linux)
                    break
                if not data:
                    break
                with self._lock:
                    self.chunks.append((time.monotonic(), data))
            elif self.proc.poll() is not None:
                break

    def text(self) -> str:
        with self._lock:
            data = b"".join(chunk for _, chunk in self.chunks)
        return data.decode("utf-8", "replace")

    def wait(self, timeout: float = 300) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        os.close(self._master)
        return code


def screen_lines(text: str) -> list[str]:
    """Every drawn state of every line, escape sequences removed, in drawing order."""
    return [ANSI.sub("", part).rstrip() for part in re.split(r"[\r\n]", text) if ANSI.sub("", part).strip()]


def run_in_pty(args: list[str], env: dict[str, str], timeout: float = 300) -> tuple[int, str]:
    run = PtyRun(args, env)
    code = run.wait(timeout)
    return code, run.text()
