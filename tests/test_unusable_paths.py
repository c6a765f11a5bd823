"""A run folder or cache folder that cannot be written, and tiktoken's encoding missing offline: one
`error:` line naming the path and what to set, exit 2, and no empty run folder left behind (nor by a dry
run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.paths import cache_home, data_home


def _one_error_line(result) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
    return lines[0]


@pytest.fixture
def server():
    with StandinServer(api_key=TEST_KEY) as s:
        yield s


def _args(locomo: Path, *extra: str, exp: str = "rag") -> list[str]:
    return [
        "run",
        f"+exp={exp}",
        f"dataset.path={locomo}",
        "eval.max_questions=1",
        "judge.runs=1",
        *FAST,
        *extra,
    ]


def test_impossible_run_dir(tmp_path, server, locomo_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    run_dir = blocker / "run"
    line = _one_error_line(
        run_cli(_args(locomo_path, f"hydra.run.dir={run_dir}"), cli_env(server.base_url, tmp_path))
    )
    assert str(run_dir) in line and "hydra.run.dir=" in line
    assert server.count() == 0


def test_run_dir_that_is_a_file(tmp_path, server, locomo_path):
    # Hydra accepts an existing path; writing the run's files into it is what fails.
    run_dir = tmp_path / "taken"
    run_dir.write_text("a file where the run folder should be")
    line = _one_error_line(
        run_cli(_args(locomo_path, f"hydra.run.dir={run_dir}"), cli_env(server.base_url, tmp_path))
    )
    assert str(run_dir) in line and "hydra.run.dir=" in line


def test_unusable_cache_dir(tmp_path, server, locomo_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    run_dir = tmp_path / "run"
    env = cli_env(server.base_url, blocker / "cache")  # MEM0BENCH_CACHE_DIR under a file
    line = _one_error_line(run_cli(_args(locomo_path, f"hydra.run.dir={run_dir}"), env))
    assert str(blocker / "cache") in line and "cache.dir=" in line
    assert not run_dir.exists()  # nothing started: no empty run folder


@pytest.mark.parametrize("exp", ["rag", "mem0"])
def test_missing_tiktoken_encoding_offline(tmp_path, server, locomo_path, exp):
    # The run only checks tiktoken's cache file up front (the load comes later): a missing file is still
    # one line before any request, whether the system counts tokens in its ingest (rag) or not (mem0).
    run_dir = tmp_path / "run"
    env = {**cli_env(server.base_url, tmp_path / "cache"), "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty")}
    line = _one_error_line(run_cli(_args(locomo_path, f"hydra.run.dir={run_dir}", exp=exp), env))
    assert "cl100k_base" in line and "TIKTOKEN_CACHE_DIR" in line
    assert not run_dir.exists()
    assert server.count() == 0


def test_failed_and_dry_runs_leave_no_run_folder(tmp_path, server, locomo_path):
    env = cli_env(server.base_url, tmp_path / "cache")
    dry = tmp_path / "dry"
    result = run_cli(_args(locomo_path, f"hydra.run.dir={dry}", "run.dry_run=true"), env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not dry.exists()
    assert "calls, $0.00" in result.stdout  # a local server: OpenAI's prices do not apply
    unknown_model = tmp_path / "failed"
    result = run_cli(_args(locomo_path, f"hydra.run.dir={unknown_model}", "llm.model=no-such-model"), env)
    assert result.returncode == 2 and not unknown_model.exists()
    # A folder with other things in it is never removed.
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    result = run_cli(_args(locomo_path, f"hydra.run.dir={kept}", "run.dry_run=true"), env)
    assert result.returncode == 0 and (kept / "notes.txt").exists()


def test_default_folders_do_not_depend_on_the_current_folder(tmp_path, monkeypatch):
    for name in ("MEM0BENCH_CACHE_DIR", "MEM0BENCH_DATA_DIR", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    first = (cache_home(), data_home())
    monkeypatch.chdir(tmp_path)
    assert (cache_home(), data_home()) == first
    assert first == (tmp_path / "home/.cache/mem0bench", tmp_path / "home/.local/share/mem0bench")
    monkeypatch.setenv("MEM0BENCH_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert cache_home() == tmp_path / "c" and data_home() == tmp_path / "xdg/mem0bench"
    assert cache_home("~/elsewhere") == tmp_path / "home/elsewhere"
