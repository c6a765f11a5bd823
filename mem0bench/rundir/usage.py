"""Token and cost accounting of a run: usage.json (what each process paid) and per-stage token sums.

usage.json holds one entry per process that worked on the run, so a rerun adds to what earlier (possibly
killed) processes paid instead of forgetting it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.sampling import merge_sampling
from mem0bench.rundir.directory import RunDirectory, write_json

UsageSession = dict[str, Any]
"""One usage.json entry: a process's session id and its ledger snapshot (stages, total, cost_usd)."""

StageUsage = dict[str, list[int]]
"""A row's LLM use: stage -> [calls, prompt tokens, completion tokens]."""

SAVE_EVERY_S = 2.0


def read_usage_sessions(rundir: RunDirectory) -> list[UsageSession]:
    """The entries usage.json holds; none when it is missing or unreadable (a kill mid-write)."""
    path = rundir.file("usage.json")
    if not path.exists():
        return []
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("sessions", [])
    except (OSError, ValueError):
        return []


def paid_cost_usd(rundir: RunDirectory) -> float:
    """USD actually paid for this run, over every process that worked on it (cache hits cost nothing)."""
    return round(sum(float(s.get("cost_usd", 0.0)) for s in read_usage_sessions(rundir)), 6)


def sum_usage(rows: Iterable[StageUsage | None]) -> dict[str, dict[str, int]]:
    """Add up per-stage [calls, prompt, completion] triples into {stage: {calls, prompt, completion}}."""
    total: dict[str, dict[str, int]] = {}
    for usage in rows:
        for stage, (calls, prompt, completion) in (usage or {}).items():
            entry = total.setdefault(stage, {"calls": 0, "prompt": 0, "completion": 0})
            entry["calls"] += calls
            entry["prompt"] += prompt
            entry["completion"] += completion
    return dict(sorted(total.items()))


class UsageFile:
    """Keeps this process's entry in usage.json current, after the entries of earlier processes."""

    def __init__(
        self, rundir: RunDirectory, attempt: str, ledger: UsageLedger, earlier: list[UsageSession]
    ) -> None:
        self.rundir = rundir
        self.attempt = attempt
        self.ledger = ledger
        self.earlier = earlier
        self._last_save = time.monotonic()

    def save_if_due(self) -> None:
        """Called after each row: saved every few seconds, so a kill loses little of what was paid."""
        now = time.monotonic()
        if now - self._last_save >= SAVE_EVERY_S:
            self._last_save = now
            self.save()

    def sampling(self) -> dict[str, list[dict[str, Any]]]:
        """The sampling parameters every process that worked on the run sent, per stage (a restored
        ingest made no call in this process: its parameters are in the entry of the one that did)."""
        return merge_sampling([*(s.get("sampling") for s in self.earlier), self.ledger.sampling()])

    def save(self) -> None:
        snapshot = {"session": self.attempt, **self.ledger.snapshot()}
        write_json(self.rundir.file("usage.json"), {"sessions": [*self.earlier, snapshot]})
