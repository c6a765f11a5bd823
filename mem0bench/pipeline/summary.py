"""The few lines a finished run prints on the console."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from mem0bench.common.text import one_line
from mem0bench.metrics.registry import per_question
from mem0bench.pipeline.advice import rerun_advice
from mem0bench.pipeline.aggregate import empty_context_warning
from mem0bench.pipeline.failures import FAILURE_STAGES
from mem0bench.pipeline.outcome import RunOutcome
from mem0bench.pipeline.stage_timing import timing_line
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.usage import cached_share_line, no_cached_rate_note

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient


def print_summary(
    outcome: RunOutcome,
    rundir: RunDirectory,
    file: TextIO = sys.stderr,
    examples: int = 5,
    *,
    retried: bool = False,
    client: LLMClient | None = None,
) -> None:
    """The headline numbers, what is still failed (and where) and how to retry it, the folder.
    `retried`: the run had run.retry_failed=true; `client`: the one that made the calls, for why the cost
    is $0 (`LLMSettings.price_note`) and the time spent waiting to stay under the rate budget
    (`LLMClient.pacing_summary`, over every model's pacer)."""
    m = outcome.metrics
    judge = (m.get("overall") or {}).get("judge") or {}

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{100 * v:.2f}"

    print(
        f"{m['method']}: {m['n_questions']} questions, J {pct(judge.get('mean'))} ± "
        f"{pct(judge.get('std'))} over {judge.get('runs')} runs ({judge.get('judgements', 0)} successful "
        f"judgements), "
        + "".join(
            f"{t.title} {pct(m['overall'][t.name])}, "
            for t in per_question()
            if t.table and t.name in m["overall"]
        )
        + f"cost ${m['cost_usd']:.4f}",
        file=file,
    )
    cached = cached_share_line((m.get("tokens") or {}).get("prompt_cache") or {})
    if cached:
        print(cached, file=file)
        no_rate = no_cached_rate_note(rundir)
        if no_rate:
            print(no_rate, file=file)
    if client is not None:
        for note in (client.settings.price_note(), client.pacing_summary()):
            if note:
                print(note, file=file)
    failures = {k: v for k, v in (m.get("failures") or {}).items() if v}
    if failures:
        counts = ", ".join(f"{stage} {failures[stage]}" for stage in FAILURE_STAGES if stage in failures)
        extra = failures.get("questions_without_prediction")
        tail = f" ({extra} questions without a prediction)" if extra else ""
        advice = rerun_advice(outcome.current_failures, retried=retried)
        print(f"failures: {counts}{tail}; {advice}", file=file)
        for failure in outcome.current_failures[:examples]:
            where = failure.qid or failure.conversation or ""
            if failure.run is not None:
                where += f" run {failure.run}"
            step = f"/{failure.step}" if failure.step else ""
            print(f"  {failure.stage}{step} {where}: {failure.kind}: {_short(failure.message)}", file=file)
        more = len(outcome.current_failures) - examples
        if more > 0:
            print(f"  ... and {more} more in {rundir.file('failures.jsonl')}", file=file)
    timing = timing_line(rundir.manifest().get("timing") or {})
    if timing:
        print(f"timing: {timing}", file=file)
    print(f"run directory: {rundir.path}", file=file)
    warning = empty_context_warning(m.get("empty_contexts") or {})
    if warning:
        print(warning, file=file)


def _short(text: str, limit: int = 160) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
