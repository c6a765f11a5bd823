"""Helpers for end-to-end tests: the real CLI in a subprocess against the stand-in server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEST_KEY = "test-fake-key-DO-NOT-LEAK-0123456789abcdef"

# Fast retries: the stand-in's 429s ask for short waits, and backoff need not be realistic here.
FAST = ["llm.backoff_base_s=0.01", "llm.backoff_max_s=0.05", "llm.timeout_s=5", "run.progress=false"]


def cli_env(base_url: str, cache_dir: Path, *, key: str | None = TEST_KEY) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(OPENAI_BASE_URL=base_url, MEM0BENCH_CACHE_DIR=str(cache_dir), HYDRA_FULL_ERROR="0")
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return env


def run_cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mem0bench", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def files_containing(root: Path, needle: str) -> list[Path]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(path)
    return hits


def assert_ingest_failures_stay_open(run_dir: Path, rerun: subprocess.CompletedProcess[str]) -> None:
    """A rerun of the same command restored the saved state: it made no new ingest record, so every ingest
    failure row the first run wrote is still unresolved, and `status` counts them all open."""
    from mem0bench.status.reader import read_status

    rows = [r for r in read_jsonl(run_dir / "failures.jsonl") if r.get("stage") == "ingest"]
    assert rows, "the first run recorded no ingest failure: the test proves nothing"
    assert all(r.get("resolved") is False for r in rows), [r for r in rows if r.get("resolved")][:3]
    open_ingest = sum(n for (stage, _), n in read_status(run_dir).open_failures.items() if stage == "ingest")
    assert open_ingest == len(rows), (open_ingest, len(rows), rerun.stdout[-2000:])
