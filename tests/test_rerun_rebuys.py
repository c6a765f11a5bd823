"""What a rerun after failed ingestion steps buys again (issue 32, item 8; the README says the same).

A conversation whose ingestion had a step fail for good is ingested again from its start. Every request
the first attempt was answered is answered from the response cache: none is bought twice. What the rerun
buys is the failed step, and the later calls of its stream whose prompts differ because that step now
succeeds (they hold the memories it changes): new requests, not the old ones again. A failure near the end
of a stream costs the rerun that one call.

This pins what the README promises; it does not test a fix: the response cache behaved so before issue 32
too, and the test passes on that code.
"""

from __future__ import annotations

import hashlib
import json
import threading

import pytest

from devtools.e2e import TEST_KEY
from devtools.reliability import env_for, finish_cli, request_stage, run_args, small_sample, start_cli
from devtools.standin.server import HTTPError, StandinServer

pytestmark = pytest.mark.slow


class _FailOnce:
    """Fails the n-th ingestion request, and every retry of it, for good (HTTP 500) while `on`; records
    the body of every request answered 200."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ingest = 0
        self.failed: str | None = None
        self.on = True
        self.answered: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, endpoint: str, body: dict):
        if endpoint not in ("chat", "embeddings"):
            return None
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            if self.on and request_stage(endpoint, body) == "ingest":
                self.ingest += 1
                if self.ingest == self.n:
                    self.failed = key
            if self.on and key == self.failed:
                return HTTPError(500)
            self.answered.append(key)
        return None


@pytest.mark.parametrize("fail_at", [4, 40])
def test_a_rerun_after_a_failed_ingest_step_buys_nothing_twice(fail_at, tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=2)
    args = run_args(
        "mem0", dataset, tmp_path / "run", "judge.runs=1", "llm.max_retries=1", "llm.max_concurrency=4",
        # The isolated latency pass times a rebuilt memory's searches again, live by design (its query
        # embeddings are bought again): the README says so; here only the cache's part is checked.
        "eval.latency=inline",
        # Request 40 is late in its stream when the pairs go one by one; with extraction running ahead
        # (the default lookahead) it is an early pair's extraction, whose retry changes what follows.
        *(["method.lookahead=0"] if fail_at == 40 else []),
    )  # fmt: skip
    handler = _FailOnce(fail_at)
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(handler)
        env = env_for(server, tmp_path / "cache")
        first = finish_cli(start_cli(args, env))
        assert first.returncode == 0 and "failures: ingest 1" in first.stderr, first.stderr[-3000:]
        assert handler.failed is not None
        bought = list(handler.answered)
        handler.on = False
        handler.answered.clear()
        rerun = finish_cli(start_cli(args, env))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    again = handler.answered
    assert not set(again) & set(bought), "a request answered before was bought again"
    assert again.count(handler.failed) == 1  # the failed step, asked again once
    if fail_at == 40:  # late in its stream: what follows it does not read what it changes
        assert len(again) <= 3, len(again)
