"""`status` on runs made with options beyond overrides: the resume command keeps `--config-dir`, the
failure line says which failures a plain rerun can fix, and a custom system whose module cannot be
imported here does not crash it."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import yaml

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.cli.status import render
from mem0bench.status.reader import read_status


def test_status_resume_keeps_config_dir_and_survives_an_unimportable_system(tmp_path, locomo_mini):
    configs = tmp_path / "my-configs"
    (configs / "exp").mkdir(parents=True)
    (configs / "exp" / "my_rag.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /method: rag\n"
    )
    run_dir = tmp_path / "run"
    args = ["run", "--config-dir", str(configs), "+exp=my_rag", f"dataset.path={locomo_mini}",
            "dataset.conversations=[mini-1]", "eval.max_questions=2", "judge.runs=1", f"hydra.run.dir={run_dir}",
            *FAST]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        first = run_cli(args, env)
        assert first.returncode == 0, first.stderr[-3000:]
        status = read_status(run_dir)
        assert status.resume is not None
        assert f"--config-dir {configs}" in status.resume and "+exp=my_rag" in status.resume
        # The command as printed works (without --config-dir, +exp=my_rag would not be found).
        again = subprocess.run(
            status.resume, shell=True, env=env, capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr[-3000:]

    # Open failures: a transient one is retried by the resume command, a malformed (cached) one is not.
    text = render(replace(status, open_failures={("answer", "malformed"): 2, ("judge", "rate_limit"): 1}))
    line = next(line for line in text.splitlines() if line.strip().startswith("failures"))
    assert "a rerun retries them" not in line
    assert "rerun the same command to retry the 1 transient ones (rate_limit 1)" in line
    assert "the 2 malformed or empty replies (malformed 2) come back the same" in line
    assert "run.retry_failed=true" in line

    # A custom system whose module this process cannot import: status still reports, in plain lines.
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["method"]["_target_"] = "my_team_memory.system.TeamMemory"
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    manifest = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    result = run_cli(["status", str(run_dir)], env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert (
        "no estimate: the system class my_team_memory.system.TeamMemory cannot be imported here"
        in result.stdout
    )
    assert f"--config-dir {configs}" in result.stdout
    assert Path(run_dir).is_dir()
