"""Every output file of a run directory gets the same permissions: those of an ordinary new file under the
process's umask (before, atomically written files were 0600 and appended ones 0644). What holds the
conversations' content (the response cache, the run's state/) is private whatever the umask."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

from devtools.e2e import FAST, REPO, TEST_KEY, cli_env
from devtools.standin.server import StandinServer

SCRIPT = """
import json, os, stat, sys
os.umask(0o027)
from pathlib import Path
from mem0bench.rundir.directory import RunDirectory, write_json
run = RunDirectory(Path(sys.argv[1]))
run.start(config_yaml="a: 1\\n", method="rag", dataset_path="x", dataset_sha256="y")
run.appender("answers.jsonl").append({"qid": "q"})
run.rewrite("predictions.jsonl", [{"qid": "q"}])
write_json(run.file("metrics.json"), {})
run.finish("complete")
run.close()
print(json.dumps({p.name: stat.S_IMODE(p.stat().st_mode) for p in Path(sys.argv[1]).iterdir()}))
"""


def test_run_files_share_one_mode(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "run")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    modes = json.loads(out.stdout)
    assert modes.pop("state") == 0o700  # the memories: the user's alone (see below)
    assert set(modes) == {"run.json", "config.yaml", "answers.jsonl", "predictions.jsonl", "metrics.json"}
    assert set(modes.values()) == {0o640}, {k: oct(v) for k, v in modes.items()}
    assert all(v & stat.S_IRGRP for v in modes.values())


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


def test_a_run_under_umask_022_keeps_its_cache_and_state_private_and_its_outputs_readable(
    tmp_path, locomo_mini
):
    """On a shared machine, with the common umask 022: the response cache (every reply: the conversations'
    content) is the user's alone, a cache folder an older version left open is closed, the run's state/
    (the memories) is 0700; run.json, config.yaml, the stage files and metrics follow the umask (0644)."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)  # as an older version left it
    old = cache / "llm-cache.sqlite"
    sqlite3.connect(old).close()  # a database an older version made, world-readable
    old.chmod(0o644)
    run_dir = tmp_path / "run"
    args = ["run", "+exp=mem0", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            "eval.max_questions=2", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as llm:
        result = subprocess.run(
            [sys.executable, "-m", "mem0bench", *args], cwd=REPO, env=cli_env(llm.base_url, cache),
            capture_output=True, text=True, timeout=300, preexec_fn=lambda: os.umask(0o022),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]

    cached = _modes(cache)
    assert cached["."] == 0o700 and cached["llm-cache.sqlite"] == 0o600, {
        k: oct(v) for k, v in cached.items()
    }
    assert all(cached[name] == 0o600 for name in cached if name.startswith("llm-cache.sqlite"))

    run = _modes(run_dir)
    assert run["state"] == 0o700 and any(name.startswith("state/mini-1") for name in run), run
    outputs = {name: mode for name, mode in run.items() if name != "." and not name.startswith("state")}
    assert {"run.json", "config.yaml", "metrics.json", "predictions.jsonl"} <= set(outputs)
    files = {name: mode for name, mode in outputs.items() if (run_dir / name).is_file()}
    assert set(files.values()) == {0o644}, {k: oct(v) for k, v in files.items()}


def test_the_response_cache_files_are_private_while_it_is_open_whatever_the_umask(tmp_path):
    """SQLite's -wal and -shm files exist while the cache is open (a run's whole length): they hold the
    latest replies, and get the database's 0600; a new cache folder is 0700."""
    script = """
import json, os, stat, sys
from pathlib import Path
os.umask(0o002)
from mem0bench.llm.cache import ResponseCache
path = Path(sys.argv[1]) / "nested" / "llm-cache.sqlite"
cache = ResponseCache(path)
cache.put_chat("k", {"content": "Ann lives in Oslo"})
assert cache.get_chat("k")
modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [path.parent, *path.parent.iterdir()]}
cache.close()
print(json.dumps(modes))
"""
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    modes = json.loads(out.stdout)
    assert set(modes) == {"nested", "llm-cache.sqlite", "llm-cache.sqlite-wal", "llm-cache.sqlite-shm"}
    assert modes.pop("nested") == 0o700 and set(modes.values()) == {0o600}, modes
