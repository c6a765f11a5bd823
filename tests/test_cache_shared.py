"""Runs that share one response cache (a parallel Hydra multirun, two terminals) open it together: a new
cache file must come up for all of them, never "database is locked"."""

from __future__ import annotations

import multiprocessing as mp
import traceback
from pathlib import Path

import pytest

from mem0bench.llm.cache import ResponseCache

OPENERS = 8


def _open(path: Path, barrier: mp.synchronize.Barrier, results: mp.Queue) -> None:
    barrier.wait()  # all at once: the race is in the first seconds of a new file
    try:
        ResponseCache(path).put_chat("k", {"v": 1})
        results.put("ok")
    except Exception:  # noqa: BLE001 - reported to the test, which fails on it
        results.put(traceback.format_exc(limit=3))


@pytest.mark.slow
def test_processes_opening_a_new_cache_together_all_get_it(tmp_path):
    context = mp.get_context("fork")
    failures = []
    for attempt in range(12):  # the race lost 4-9 of 160 openings before the fix
        path = tmp_path / f"cache-{attempt}" / "llm-cache.sqlite"
        path.parent.mkdir()
        barrier, results = context.Barrier(OPENERS), context.Queue()
        workers = [context.Process(target=_open, args=(path, barrier, results)) for _ in range(OPENERS)]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=120) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        failures += [o for o in outcomes if o != "ok"]
    assert failures == [], failures[0]
