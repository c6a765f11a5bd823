"""What a rerun can fix, and what run.json says about a run that did not finish.

* Malformed replies are in the cache: a plain rerun gets them back and pays nothing, so the advice says
  `run.retry_failed=true`, and that rerun really asks again (recorded as fresh retries) and fixes them.
* SIGTERM and SIGINT leave run.json "interrupted", never "running"; the same command then finishes.
* A non-OpenAI server is priced 0 (unless llm.price_any_server=true) and run.json names its base URL.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.reliability import finish_cli, request_stage, small_sample, start_cli
from devtools.standin.server import StandinServer, ToolCall

pytestmark = pytest.mark.slow

QUESTIONS = 4


class _BrokenJudge:
    """Judge calls get arguments that are not JSON while `broken` is set (repairs included)."""

    def __init__(self) -> None:
        self.broken = True
        self.judge_requests = 0

    def __call__(self, endpoint: str, body: dict):
        if request_stage(endpoint, body) != "judge":
            return None
        self.judge_requests += 1
        return ToolCall("not JSON at all") if self.broken else None


def _args(dataset, run_dir, *extra):
    return [
        "run",
        "+exp=rag",
        f"dataset.path={dataset}",
        "judge.runs=2",
        f"hydra.run.dir={run_dir}",
        *FAST,
        *extra,
    ]


def test_malformed_failures_need_retry_failed_and_it_really_retries(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    judge = _BrokenJudge()
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(judge)
        env = cli_env(server.base_url, tmp_path / "cache")
        first = run_cli(_args(dataset, run_dir), env)
        assert first.returncode == 1 and "Traceback" not in first.stderr
        # The advice says which failures a plain rerun cannot fix, and the setting that does.
        assert "come back the same from the cache: rerun with run.retry_failed=true" in first.stderr
        assert "rerun the same command to retry them" not in first.stderr

        # The model is fine now, but a plain rerun is served the cached malformed replies: nothing asked.
        judge.broken = False
        asked = judge.judge_requests
        second = run_cli(_args(dataset, run_dir), env)
        assert second.returncode == 1 and judge.judge_requests == asked

        # run.retry_failed=true asks again past the cache, and the failures are gone.
        third = run_cli(_args(dataset, run_dir, "run.retry_failed=true"), env)
    assert third.returncode == 0, third.stderr[-3000:]
    assert judge.judge_requests == asked + 2 * QUESTIONS
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["overall"]["judge"]["judgements"] == 2 * QUESTIONS and metrics["failures"]["judge"] == 0
    sessions = json.loads((run_dir / "usage.json").read_text())["sessions"]
    assert sessions[-1]["stages"]["judge"]["fresh_retries"] == 2 * QUESTIONS
    assert all(row["resolved"] for row in read_jsonl(run_dir / "failures.jsonl"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_is_recorded_and_resumes(sig, tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=QUESTIONS)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY, latency_ms=300) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        args = _args(dataset, run_dir, "llm.max_concurrency=1")
        proc = start_cli(args, env)
        deadline = time.monotonic() + 120
        while not (run_dir / "answers.jsonl").exists():
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, sig)
        stopped = finish_cli(proc, timeout=60)
        assert stopped.returncode == 130, stopped.stderr[-3000:]
        assert "Traceback" not in stopped.stderr
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        resumed = run_cli(args, env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def test_local_server_is_not_priced_as_openai(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=2)
    with StandinServer(api_key=TEST_KEY) as server:
        base_url = server.base_url
        env = cli_env(base_url, tmp_path / "cache")
        free = run_cli(_args(dataset, tmp_path / "free"), env)
        priced = run_cli(
            _args(dataset, tmp_path / "priced", "llm.price_any_server=true"),
            {**env, "MEM0BENCH_CACHE_DIR": str(tmp_path / "c2")},
        )
    assert free.returncode == 0 and priced.returncode == 0, free.stderr[-2000:] + priced.stderr[-2000:]
    manifest = json.loads((tmp_path / "free" / "run.json").read_text())
    assert manifest["server"] == {"base_url": base_url, "priced": False}
    assert json.loads((tmp_path / "free" / "metrics.json").read_text())["cost_usd"] == 0
    usage = json.loads((tmp_path / "free" / "usage.json").read_text())["sessions"][0]
    assert usage["unpriced_models"] == [] and usage["total"]["calls"] > 0
    assert json.loads((tmp_path / "priced" / "metrics.json").read_text())["cost_usd"] > 0
    assert json.loads((tmp_path / "priced" / "run.json").read_text())["server"]["priced"] is True
