"""Where a run's time went, stage by stage: run.json `timing`, the end-of-run summary and `status`.

Stages overlap (a conversation's questions are answered while others still ingest), so a stage's wall time
is the span from the first start of its work to the last end in this process, and the stage walls do not
add up to the run's. Calls are the LLM calls the stage made (cached replies included; `cached` says how
many the cache answered).

Ingest also records its chain bound: a memory system whose stream must apply its pairs in order (Mem0's
update decisions) reports each step of that chain (`memory.ingest_progress.report_chain`) with the time a
request of the step was in flight; the longest stream's sum is `chain_bound_s`, the ingest wall no amount
of concurrency gets below with the latencies this run measured. An ingest wall near it is as fast as the
system's design allows; far above it, calls waited (for a slot, behind other stages' work).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mem0bench.llm.timing import measure

__all__ = ["STAGES", "StageTimes", "timing_line"]

STAGES = ("ingest", "answer", "judge", "latency")
"""The stages timed, in the order they are shown."""


@dataclass
class _Span:
    start: float
    end: float
    calls: int = 0
    cached: int = 0


class StageTimes:
    """Collects the spans and calls of each stage in this process, and the ingest chains."""

    def __init__(self) -> None:
        self._spans: dict[str, _Span] = {}
        self._chains: dict[str, list[float]] = {}
        """stream -> [seconds in flight, calls] of its chain."""

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time one unit of `name`'s work (one conversation's ingest, one answer, ...) and count its calls."""
        started = time.perf_counter()
        with measure() as scope:
            try:
                yield
            finally:
                ended = time.perf_counter()
                span = self._spans.setdefault(name, _Span(started, ended))
                span.start, span.end = min(span.start, started), max(span.end, ended)
                span.calls += sum(int(row[0]) for row in scope.usage.values())
                span.cached += scope.cached_calls

    def chain(self, stream: str, seconds: float, calls: int) -> None:
        """A `memory.ingest_progress.ChainListener`: one more step of `stream`'s sequential chain."""
        totals = self._chains.setdefault(stream, [0.0, 0])
        totals[0] += seconds
        totals[1] += calls

    def to_dict(self) -> dict[str, Any]:
        """run.json `timing`: {stage: {wall_s, calls, cached}}, ingest with its chain bound."""
        out: dict[str, Any] = {}
        for name in (*STAGES, *sorted(set(self._spans) - set(STAGES))):
            span = self._spans.get(name)
            if span is None:
                continue
            entry: dict[str, Any] = {
                "wall_s": round(span.end - span.start, 3),
                "calls": span.calls,
                "cached": span.cached,
            }
            if name == "ingest" and self._chains:
                stream, (seconds, calls) = max(self._chains.items(), key=lambda item: item[1][0])
                entry.update(chain_bound_s=round(seconds, 3), chain_calls=int(calls), chain_stream=stream)
            out[name] = entry
        return out


def timing_line(timing: Mapping[str, Any]) -> str | None:
    """'ingest 165.2 s (3,210 calls; chain bound 35.1 s), answer 12.0 s (1,986 calls), ...' from run.json
    `timing`; None when the run recorded none."""
    parts = []
    for name in (*STAGES, *sorted(set(timing) - set(STAGES))):
        entry = timing.get(name)
        if not isinstance(entry, Mapping) or "wall_s" not in entry:
            continue
        detail = f"{int(entry.get('calls', 0)):,} calls"
        if entry.get("cached"):
            detail += f", {int(entry['cached']):,} cached"
        if "chain_bound_s" in entry:
            detail += f"; chain bound {float(entry['chain_bound_s']):.1f} s"
        parts.append(f"{name} {float(entry['wall_s']):.1f} s ({detail})")
    return ", ".join(parts) or None
