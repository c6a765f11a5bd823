"""Failed steps of an ingestion: failures.jsonl rows, and which failures a replay of the stream can fix.

A failed call is recorded and its pair or fact skipped; the stream goes on. A *transient* failure (rate limit,
timeout, connection, server error) withholds the stream's done marker, so the next ingest replays the stream:
the response cache makes the successful calls free and the failed ones are retried. Deterministic failures
(malformed output, bad request) would fail again, so they do not block the marker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from mem0bench.llm.types import TRANSIENT_KINDS, FailureKind, LLMCallError, as_failure_kind
from mem0bench.memory.base import StepFailure

if TYPE_CHECKING:
    from mem0bench.memory.stream import PairContext
    from mem0bench.systems.methods.mem0.streams import StreamState

__all__ = ["DeferredFailures", "RecordFailure", "describe", "failure_row", "has_transient"]


def has_transient(rows: Iterable[StepFailure]) -> bool:
    """True if any failure is of a kind that a replay could get past."""
    return any(row.kind in TRANSIENT_KINDS for row in rows)


def describe(error: LLMCallError) -> tuple[FailureKind, str]:
    """(kind, message) of a failed call."""
    failure = getattr(error, "failure", None)
    return as_failure_kind(getattr(failure, "kind", None)), getattr(failure, "message", str(error))


def failure_row(
    *,
    system: str,
    sample_id: str,
    speaker: str,
    ctx: PairContext | None,
    stage: str,
    kind: FailureKind,
    message: str,
    fact: str | None = None,
    pair_index: int | None = None,
) -> StepFailure:
    """One failed ingestion step; `ctx` (the failed pair) supplies the pair index and dia_ids when known."""
    return StepFailure(
        system=system,
        sample_id=ctx.sample_id if ctx else sample_id,
        stage=stage,
        kind=kind,
        message=message,
        speaker=speaker,
        pair_index=ctx.index if ctx else pair_index,
        dia_ids=tuple(t.dia_id for t in ctx.pair) if ctx else (),
        fact=fact,
    )


class RecordFailure(Protocol):
    """`Mem0.record_failure`: what the ingestion steps call when a step fails."""

    def __call__(
        self,
        key: str,
        ctx: PairContext | None,
        stage: str,
        kind: FailureKind,
        message: str,
        *,
        fact: str | None = None,
        state: StreamState | None = None,
        pair_index: int | None = None,
    ) -> StepFailure: ...


class DeferredFailures:
    """A RecordFailure that holds its rows until `replay`: the steps that run ahead of a stream's update
    chain (extraction) record through it, and the chain replays them when it reaches their pair, so the
    failures come in the order the sequential ingestion would record them, whatever the lookahead."""

    def __init__(self, record: RecordFailure, system: str) -> None:
        self._record = record
        self._system = system
        self._held: list[Callable[[], StepFailure]] = []

    def __call__(
        self,
        key: str,
        ctx: PairContext | None,
        stage: str,
        kind: FailureKind,
        message: str,
        *,
        fact: str | None = None,
        state: StreamState | None = None,
        pair_index: int | None = None,
    ) -> StepFailure:
        self._held.append(
            partial(
                self._record, key, ctx, stage, kind, message, fact=fact, state=state, pair_index=pair_index
            )
        )
        # The row as it will be recorded (the recorder itself stamps the system's name the same way).
        return failure_row(
            system=self._system,
            sample_id=state.sample_id if state else "",
            speaker=key,
            ctx=ctx,
            stage=stage,
            kind=kind,
            message=message,
            fact=fact,
            pair_index=pair_index,
        )

    def replay(self) -> None:
        """Record the held failures, in the order they happened."""
        held, self._held = self._held, []
        for record in held:
            record()
