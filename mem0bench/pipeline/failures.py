"""Failures of a run: recording them in failures.jsonl as they happen, counting the ones that stand, and
marking each row of the file resolved or not when the run finishes.

A call that fails for good (after the client's bounded retries) never stops the run unless run.strict=true;
the item is recorded, scored as failed and retried by the next run of the same command. Only the items
failed *now* are counted: an earlier failure that a later attempt fixed stays in failures.jsonl as history
(`resolved: true`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mem0bench.llm.types import CallFailure, FailureKind
from mem0bench.memory.base import MemorySystem, StepFailure
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.records import AnswerRecord, FailureRecord, IngestRecord
from mem0bench.rundir.schema import PredictionRow

FAILURE_STAGES = ("ingest", "search", "answer", "judge")


class RunAborted(Exception):
    """run.strict=true and a call failed for good."""


class SystemCrashed(Exception):
    """A memory system's `ingest` raised something other than a failed LLM call: a bug in the system (or
    the library it wraps). The message is one line naming the system, the exception and where it was
    raised; the run stops, since every conversation would likely fail the same way."""


SYSTEM_ERROR: FailureKind = "system_error"
"""The failure kind of a question whose context the system's `retrieve` raised on (not an LLM failure)."""


class FailureLog:
    """Appends this process's failures to failures.jsonl; with run.strict=true the first one ends the run."""

    def __init__(self, rundir: RunDirectory, attempt: str, *, strict: bool) -> None:
        self.rundir = rundir
        self.attempt = attempt
        self.strict = strict
        # Only the first failure raises: calls failing while the run is torn down are recorded as usual.
        self._aborting = False

    def abort_on_call_failure(self, failure: CallFailure) -> None:
        """The LLM client's `on_failure` hook under run.strict=true: stops the run wherever the call was."""
        if self._aborting:
            return
        self._aborting = True
        self._append(FailureRecord(failure.stage, failure.kind, failure.message))
        raise RunAborted(f"a {failure.stage} call failed ({failure.kind}): {failure.message}")

    def record(self, failure: FailureRecord) -> None:
        self._append(failure)
        if self.strict and not self._aborting:
            self._aborting = True
            where = failure.qid or failure.conversation or ""
            raise RunAborted(f"{failure.stage} failed ({failure.kind}) {where}: {failure.message}".strip())

    def _append(self, failure: FailureRecord) -> None:
        self.rundir.appender("failures.jsonl").append(replace(failure, session=self.attempt).to_dict())


class SystemFailures:
    """Hands out the rows a memory system adds to its `failures` list, each row once."""

    def __init__(self, system: MemorySystem) -> None:
        self.system = system
        self._taken: set[int] = set()  # by identity: two failures may have equal contents

    def take(self, match: Callable[[StepFailure], bool]) -> list[StepFailure]:
        """The rows not taken yet that `match` accepts."""
        taken = []
        for row in list(self.system.failures):
            if id(row) in self._taken or not match(row):
                continue
            self._taken.add(id(row))
            taken.append(row)
        return taken


def ingest_step_failure(row: StepFailure, sample_id: str) -> FailureRecord:
    """A step that failed inside a system's ingestion, as a failures.jsonl record."""
    return FailureRecord(
        stage="ingest",
        kind=row.kind,
        message=row.message,
        conversation=sample_id,
        step=row.stage,
        detail=row.detail(),
    )


def search_step_failure(row: StepFailure, sample_id: str, qid: str) -> FailureRecord:
    """A step the system got past while building a question's context, as a failures.jsonl record."""
    return FailureRecord(
        stage="search",
        kind=row.kind,
        message=row.message,
        conversation=sample_id,
        qid=qid,
        step=row.stage,
    )


@dataclass(frozen=True)
class FailureTally:
    counts: dict[str, int]
    """Items failed now, per stage (metrics.json `failures`)."""
    rates: dict[str, float]
    """Each stage's share of failed items (compared with run.max_failure_rate)."""


def count_failures(
    answers: Sequence[AnswerRecord],
    rows: Sequence[PredictionRow],
    ingests: Mapping[str, IngestRecord],
    runs: int,
) -> FailureTally:
    """Items failed now, per stage, and the failure rate of each stage (`rows`: predictions.jsonl rows)."""
    failed_conversations = sum(1 for row in ingests.values() if row.failed)
    ingest_steps = sum(row.failures for row in ingests.values() if not row.failed)
    stage_of = Counter(a.failed_stage for a in answers if a.failure)
    degraded = sum(len(a.degraded) for a in answers if not a.failure)
    missing_labels = sum(1 for r in rows if not r.failure for v in r.judge if v is None)
    counts = {
        "ingest": ingest_steps + failed_conversations,
        "search": stage_of.get("search", 0) + degraded,
        "answer": stage_of.get("answer", 0),
        "judge": missing_labels,
        "questions_without_prediction": sum(stage_of.values()),
    }
    answered = sum(1 for a in answers if not a.failure)
    # Every call an ingest row's usage holds was made while ingesting, whatever its stage is called (a
    # third-party library's calls are served under its own stages, e.g. "graphiti_ingest").
    ingest_calls = sum(calls for row in ingests.values() for calls, _, _ in (row.usage or {}).values())
    rates = {
        "ingest": ingest_steps / max(ingest_calls + ingest_steps, 1) if ingest_steps else 0.0,
        "answer": counts["questions_without_prediction"] / max(len(answers), 1),
        "judge": missing_labels / max(answered * runs, 1),
    }
    return FailureTally(counts, rates)


def settle_failures_file(
    rundir: RunDirectory,
    *,
    answers: Sequence[AnswerRecord],
    labels: Mapping[str, list[bool | float | None]],
    ingests: Mapping[str, IngestRecord],
    runs: int,
    attempt: str,
) -> list[FailureRecord]:
    """Mark every failures.jsonl row resolved or not (the file is rewritten whole); -> the unresolved."""
    if not rundir.file("failures.jsonl").exists():
        return []
    by_qid = {a.qid: a for a in answers}
    history = rundir.rows("failures.jsonl")
    # A question's failure is current only in its latest row: earlier rows for it are history.
    latest_for_item: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(history):
        if row.get("stage") in ("search", "answer", "judge") and row.get("qid"):
            latest_for_item[(row["stage"], row["qid"], row.get("run"))] = i
    settled = []
    for i, row in enumerate(history):
        stage = row.get("stage")
        current = False
        if stage == "ingest" and row.get("conversation") in ingests:
            standing = ingests[row["conversation"]]
            current = standing.has_failures and standing.session == row.get("session")
        elif stage in ("search", "answer") and row.get("qid") in by_qid:
            a = by_qid[row["qid"]]
            latest = latest_for_item.get((stage, row["qid"], row.get("run"))) == i
            current = latest and a.session == row.get("session") and bool(a.failure or a.degraded)
        elif stage == "judge" and row.get("qid") in by_qid and row.get("run") is not None:
            a = by_qid[row["qid"]]
            run = int(row["run"])
            label = labels.get(row["qid"], [None] * runs)
            latest = latest_for_item.get(("judge", row["qid"], row.get("run"))) == i
            current = latest and not a.failure and run < len(label) and label[run] is None
        elif stage not in FAILURE_STAGES:
            current = row.get("session") == attempt  # e.g. the call that stopped a strict run
        settled.append({**row, "resolved": not current})
    rundir.rewrite("failures.jsonl", settled)
    return [FailureRecord.from_dict(row) for row in settled if not row["resolved"]]
