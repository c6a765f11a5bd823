"""The API key is written nowhere: not in the run directory (run.json, config.yaml, stage files, state/,
Hydra's run.log), not in a sweep directory (multirun.yaml, each job's folder), not in the LLM cache, not on
the console; whether it comes from the environment or from a file (`llm.api_key_file=PATH`). A key on the
command line (`llm.api_key=...`), which every user sees in `ps` while the run lasts, is refused.

The stand-in requires the key, so every run below proves the key did reach the server."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devtools.e2e import REPO, TEST_KEY, cli_env, files_containing, read_jsonl, run_cli
from devtools.standin.server import StandinServer

pytestmark = pytest.mark.slow

# Not the shared test key: a value no other test writes, so a hit can only be a leak from here.
KEY = "sk-secret-" + "9f8e7d6c5b4a3210" * 2


def _args(locomo: Path, out: Path, multirun: bool) -> list[str]:
    common = [
        "+exp=rag", f"dataset.path={locomo}", "dataset.conversations=[mini-1]", "eval.max_questions=2",
        "judge.runs=1", "run.progress=false", "llm.backoff_base_s=0.01",
    ]  # fmt: skip
    if multirun:
        return ["run", "-m", *common, "method.k=1,2", f"hydra.sweep.dir={out}"]
    return ["run", *common, f"hydra.run.dir={out}"]


def _run(tmp_path: Path, server: StandinServer, locomo: Path, *, via: str, multirun: bool):
    name = f"{via}-{'multi' if multirun else 'single'}"
    out = tmp_path / name
    cache = tmp_path / f"cache-{name}"
    args = _args(locomo, out, multirun)
    if via == "env":
        env = cli_env(server.base_url, cache, key=KEY)
    else:
        env = cli_env(server.base_url, cache, key=None)
        key_file = tmp_path / f"key-{name}"
        key_file.write_text(KEY + "\n")
        key_file.chmod(0o600)
        args.append(f"llm.api_key_file={key_file}")
    return run_cli(args, env), out, cache


@pytest.mark.parametrize("multirun", [False, True], ids=["single", "multirun"])
def test_the_key_is_written_nowhere(tmp_path, locomo_mini, multirun):
    with StandinServer(api_key=KEY) as server, ThreadPoolExecutor(max_workers=2) as pool:
        runs = [
            pool.submit(_run, tmp_path, server, locomo_mini, via=via, multirun=multirun)
            for via in ("env", "file")
        ]
        results = [r.result() for r in runs]
        assert server.count("chat", 401) == 0 and server.count("chat", 200) > 0
    for result, out, cache in results:
        assert result.returncode == 0, result.stderr[-3000:]
        assert KEY not in result.stdout and KEY not in result.stderr
        run_dirs = [out] if not multirun else sorted(p for p in out.iterdir() if p.is_dir())
        assert run_dirs and all(len(read_jsonl(d / "predictions.jsonl")) == 2 for d in run_dirs)
        for d in run_dirs:
            assert (d / "run.log").exists() and (d / "config.yaml").exists()
            assert "api_key" not in (d / "config.yaml").read_text()
        if multirun:
            assert (out / "multirun.yaml").exists()
            assert len(run_dirs) == 2
        assert (cache / "llm-cache.sqlite").exists()
        assert files_containing(out, KEY) == []
        assert files_containing(cache, KEY) == []
    assert files_containing(tmp_path, KEY) == sorted(tmp_path.glob("key-*"))  # the key files alone


def test_a_rejected_key_is_not_echoed(tmp_path):
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache", key=None)
        env["OPENAI_API_KEY"] = KEY
        result = run_cli(["run", "+exp=rag", f"hydra.run.dir={tmp_path / 'run'}"], env, timeout=60)
    assert result.returncode == 2
    assert "rejected the API key" in result.stderr and KEY not in result.stderr + result.stdout
    assert files_containing(tmp_path, KEY) == []


@pytest.mark.parametrize("command", [["run", "+exp=rag"], ["run", "-m", "+exp=rag"], ["judge", "RUN"]])
@pytest.mark.parametrize("prefix", ["", "+", "++"])
def test_a_key_on_the_command_line_is_refused_before_anything_is_sent_or_written(tmp_path, command, prefix):
    """`ps` shows every user a process's arguments: a key there is refused in one line that names the two
    places a key goes, without echoing it; nothing is sent and no folder is made."""
    with StandinServer(api_key=KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache", key=None)
        args = [*command, f"{prefix}llm.api_key={KEY}", f"hydra.run.dir={tmp_path / 'run'}"]
        result = run_cli([a.replace("RUN", str(tmp_path / "run")) for a in args], env, timeout=60)
        assert len(server.requests) == 0
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0] and "llm.api_key_file=" in lines[0], lines
    assert KEY not in result.stderr + result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_a_key_file_others_can_read_is_refused(tmp_path, mode):
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    key_file.chmod(mode)
    with StandinServer(api_key=KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache", key=None)
        args = ["run", "+exp=rag", f"llm.api_key_file={key_file}", f"hydra.run.dir={tmp_path / 'run'}"]
        result = run_cli(args, env, timeout=60)
        assert len(server.requests) == 0
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(key_file) in lines[0] and "chmod 600" in lines[0], lines
    assert KEY not in result.stderr + result.stdout and not (tmp_path / "run").exists()


def test_a_key_from_a_file_is_not_in_the_running_process_arguments(tmp_path, locomo_mini):
    """What another user's `ps` shows of a running run given its key in a file: the file's path only."""
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    with StandinServer(api_key=KEY, latency_ms=200) as server:
        env = cli_env(server.base_url, tmp_path / "cache", key=None)
        args = [*_args(locomo_mini, tmp_path / "run", False), f"llm.api_key_file={key_file}"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "mem0bench", *args], cwd=REPO, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while server.count("chat", 200) == 0 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.count("chat", 200) > 0, "the key from the file reached the server"
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            assert str(key_file).encode() in cmdline and KEY.encode() not in cmdline
        finally:
            _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]


@pytest.mark.falkordb
def test_the_bridge_token_and_the_falkordb_password_are_written_nowhere(tmp_path, locomo_mini):
    """zep_graphiti uses both run-local credentials (the bridge's token, its own FalkorDB's password). With
    the random source fixed to a known value, that value is in no file of the run folder (the FalkorDB
    data included) or the cache, nor on the console."""
    known = "runlocal-credential-" + "Zq8" * 8
    start = (
        "import atexit, runpy, secrets, sys\n"
        "made = []\n"
        f"secrets.token_urlsafe = lambda nbytes=None: made.append(1) or {known!r}\n"
        "atexit.register(lambda: print(f'credentials made: {len(made)}', file=sys.stderr))\n"
        "sys.argv = ['mem0bench', *sys.argv[1:]]\n"
        "runpy.run_module('mem0bench', run_name='__main__')\n"
    )
    run_dir = tmp_path / "run"
    args = ["run", "+exp=zep_graphiti", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-3]",
            "eval.max_questions=1", "judge.runs=1", "eval.latency=inline", f"hydra.run.dir={run_dir}",
            "run.progress=false"]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        env.pop("FALKORDB_PASSWORD", None)
        result = subprocess.run(
            [sys.executable, "-c", start, *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert server.count("chat", 200) > 0
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir / "falkordb").is_dir() and (run_dir / "state").is_dir()
    assert "credentials made: 2" in result.stderr  # the bridge's token and the server's password
    assert known not in result.stdout + result.stderr
    assert files_containing(tmp_path, known) == []
