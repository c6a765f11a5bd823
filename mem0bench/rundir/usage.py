"""Token and cost accounting of a run: usage.json (what each process paid) and per-stage token sums.

usage.json holds one entry per process that worked on the run, so a rerun adds to what earlier (possibly
killed) processes paid instead of forgetting it. Every paid reply is also appended to usage.jsonl as it
comes (one row, one `write(2)`): a process killed between two saves of usage.json (a long ingestion saves
nothing until its conversation is done) has its spend rebuilt from those rows by the next reader
(`read_usage_sessions`: a rerun, `status`). An entry's `journal_rows` says how many of its process's rows
it already holds.
"""

from __future__ import annotations

import contextlib
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
JOURNAL = "usage.jsonl"
_PAID_FIELDS = (
    "calls", "prompt_tokens", "completion_tokens", "paid_prompt_tokens", "paid_completion_tokens",
    "cached_prompt_tokens", "paid_cached_prompt_tokens",
)  # fmt: skip


def _saved_sessions(rundir: RunDirectory) -> list[UsageSession]:
    path = rundir.file("usage.json")
    if not path.exists():
        return []
    try:
        sessions = json.loads(path.read_text(encoding="utf-8")).get("sessions", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [s for s in sessions if isinstance(s, dict)] if isinstance(sessions, list) else []


def read_usage_sessions(rundir: RunDirectory) -> list[UsageSession]:
    """The entries usage.json holds (none when it is missing or unreadable: a kill mid-write), each with
    the journal's rows it lacks added, and an entry rebuilt from the journal for a process that never
    saved one."""
    sessions = _saved_sessions(rundir)
    journal: dict[str, list[dict[str, Any]]] = {}
    try:
        rows = rundir.rows(JOURNAL)
    except (OSError, ValueError, UnicodeDecodeError):  # unreadable: usage.json as saved is all there is
        rows = []
    for row in rows:
        if isinstance(row, dict):
            journal.setdefault(str(row.get("session")), []).append(row)
    if not journal:
        return sessions
    out = []
    for entry in sessions:
        rows = journal.pop(str(entry.get("session")), [])
        held = int(entry.get("journal_rows", len(rows)))  # an entry from before the journal holds them all
        out.append(_with_rows(entry, rows[held:], len(rows)) if len(rows) > held else entry)
    for session, rows in journal.items():  # a process killed before it ever saved usage.json
        out.append(
            _with_rows({"session": session, "stages": {}, "total": {}, "cost_usd": 0.0}, rows, len(rows))
        )
    return out


def _with_rows(entry: UsageSession, rows: list[dict[str, Any]], journal_rows: int) -> UsageSession:
    """`entry` plus the paid replies in `rows` (calls, tokens, cost per stage and in total)."""
    entry = json.loads(json.dumps(entry))  # a deep copy: the caller's entry stays as read
    stages = entry.setdefault("stages", {})
    total = entry.setdefault("total", {})
    for row in rows:
        stage = stages.setdefault(str(row.get("stage")), {})
        calls = int(row.get("calls", 1))  # a row for what was paid before the journal began holds several
        prompt, completion = int(row.get("prompt", 0)), int(row.get("completion", 0))
        cached = int(row.get("cached", 0))  # rows written before cached prompt tokens were counted: none
        cost = float(row.get("cost_usd", 0.0))
        for target in (stage, total):
            for name, value in zip(
                _PAID_FIELDS, (calls, prompt, completion, prompt, completion, cached, cached), strict=True
            ):
                target[name] = int(target.get(name, 0)) + value
            target["cost_usd"] = float(target.get("cost_usd", 0.0)) + cost
            if "model" in row:
                models = target.setdefault("models", {})
                models[str(row["model"])] = int(models.get(str(row["model"]), 0)) + calls
    entry["cost_usd"] = round(float(total.get("cost_usd", 0.0)), 10)
    entry["journal_rows"] = journal_rows
    entry["rebuilt_from"] = JOURNAL
    return entry


def paid_cost_usd(sessions: Iterable[UsageSession]) -> float:
    """USD actually paid, over these entries (`read_usage_sessions`: every process that worked on the run;
    cache hits cost nothing)."""
    return round(sum(float(s.get("cost_usd", 0.0)) for s in sessions), 6)


def cached_prompt_by_stage(sessions: Iterable[UsageSession]) -> dict[str, dict[str, int]]:
    """{stage: {prompt, cached_prompt}}: the prompt tokens paid for per stage over these entries, and how
    many of them the server served from its prompt cache (entries from before they were counted: 0)."""
    out: dict[str, dict[str, int]] = {}
    for session in sessions:
        for stage, totals in (session.get("stages") or {}).items():
            if not isinstance(totals, dict):
                continue
            entry = out.setdefault(str(stage), {"prompt": 0, "cached_prompt": 0})
            entry["prompt"] += int(totals.get("paid_prompt_tokens", 0) or 0)
            entry["cached_prompt"] += int(totals.get("paid_cached_prompt_tokens", 0) or 0)
    return dict(sorted(out.items()))


def no_cached_rate_note(rundir: RunDirectory) -> str | None:
    """The line naming the models whose cached prompt tokens were priced at the full prompt rate (no
    `cached_prompt` rate in llm.prices), over every process; None when there were none."""
    models = sorted({str(m) for s in _saved_sessions(rundir) for m in s.get("no_cached_rate_models") or []})
    if not models:
        return None
    return (
        f"note: no cached_prompt rate in llm.prices for {', '.join(models)}: its cached prompt tokens were "
        "priced at the full prompt rate"
    )


def cached_shares(by_stage: dict[str, dict[str, int]]) -> str | None:
    """E.g. "answer 47,616 of 60,346 (79%)" for each stage with cached prompt tokens, else None."""
    parts = [
        f"{stage} {e['cached_prompt']:,} of {e['prompt']:,} ({e['cached_prompt'] / e['prompt']:.0%})"
        for stage, e in by_stage.items()
        if e["cached_prompt"] > 0 and e["prompt"] > 0
    ]
    return ", ".join(parts) if parts else None


def cached_share_line(by_stage: dict[str, dict[str, int]]) -> str | None:
    """The summary's line on the prompt tokens the server served from its cache (None when none were)."""
    shares = cached_shares(by_stage)
    return f"cached prompt tokens (billed at the cached rate): {shares}" if shares else None


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
        ledger.attach_journal(self._journal)

    def _journal(self, row: dict[str, Any]) -> None:
        """One paid reply, in usage.jsonl at once (the ledger calls this under its lock)."""
        # A full disk must not cost the reply itself: the client caches some replies (embeddings) after
        # recording them. The run stops on its next row or usage.json, which fail the same way.
        with contextlib.suppress(OSError):
            self.rundir.appender(JOURNAL).append({"session": self.attempt, **row})

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
