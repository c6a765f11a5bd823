"""A stand-in server in its own process, killed as a crashed server would be, and the Mem0 run pointed at
it: shared by tests/test_unreachable.py and scripts/unreachable_stop.py."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

from devtools.e2e import REPO, TEST_KEY

__all__ = [
    "CONCURRENCY", "QUESTIONS", "SETTINGS", "WINDOW_S", "Relay", "kill_server", "run_args", "start_server",
]  # fmt: skip

WINDOW_S = 3
QUESTIONS = 4
CONCURRENCY = 4
# Calls would retry for a long time on their own (100 retries each with backoff up to 2 s: minutes per
# call, item after item): only the window can stop the run early.
SETTINGS = (
    f"llm.unreachable_after_s={WINDOW_S}", "llm.max_retries=100", f"llm.max_concurrency={CONCURRENCY}",
    "llm.backoff_base_s=0.5", "llm.backoff_max_s=2", "llm.timeout_s=5", "run.progress=false",
    f"eval.max_questions={QUESTIONS}", "judge.runs=1",
)  # fmt: skip


def run_args(dataset: Path, run_dir: Path) -> list[str]:
    return [
        "run", "+exp=mem0", f"dataset.path={dataset}", "dataset.conversations=[mini-1]",
        f"hydra.run.dir={run_dir}", *SETTINGS,
    ]  # fmt: skip


def start_server(port: int = 0) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "STANDIN_KEY": TEST_KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "devtools.standin.server", "--port", str(port), "--latency-ms", "20",
         "--api-key-env", "STANDIN_KEY"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None  # both piped above
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        proc.kill()
        raise AssertionError(f"the stand-in did not start: {proc.stderr.read()[-2000:]}")
    return proc, int(line)


def kill_server(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


class Relay:
    """A TCP relay on 127.0.0.1 in front of a server, that can go away and come back at once: `down()`
    refuses new connections and resets the open ones, as a crashed server's host does; `up()` listens on
    the same port again. An outage of exactly the length a test chooses (a restarted server process takes
    a loaded machine's time to start)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> Relay:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            open_, self._open = self._open, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close alone does not
            listener.close()
        for sock in open_:
            with contextlib.suppress(OSError):  # a reset, not a polite close: the peer is gone
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
