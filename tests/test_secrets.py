"""The API key is written nowhere: not in the run directory (run.json, config.yaml, stage files, state/,
Hydra's run.log), not in a sweep directory (multirun.yaml, each job's folder), not in the LLM cache, not on
the console; whether it comes from the environment or from `llm.api_key=...` on the command line.

The stand-in requires the key, so every run below proves the key did reach the server."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devtools.e2e import TEST_KEY, cli_env, files_containing, read_jsonl, run_cli
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
        args.append(f"llm.api_key={KEY}")
    return run_cli(args, env), out, cache


@pytest.mark.parametrize("multirun", [False, True], ids=["single", "multirun"])
def test_the_key_is_written_nowhere(tmp_path, locomo_mini, multirun):
    with StandinServer(api_key=KEY) as server, ThreadPoolExecutor(max_workers=2) as pool:
        runs = [
            pool.submit(_run, tmp_path, server, locomo_mini, via=via, multirun=multirun)
            for via in ("env", "argv")
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


def test_a_rejected_key_is_not_echoed(tmp_path):
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache", key=None)
        result = run_cli(
            ["run", "+exp=rag", f"hydra.run.dir={tmp_path / 'run'}", f"llm.api_key={KEY}"], env, timeout=60
        )
    assert result.returncode == 2
    assert "rejected the API key" in result.stderr and KEY not in result.stderr + result.stdout
    assert files_containing(tmp_path, KEY) == []
