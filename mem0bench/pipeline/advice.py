"""What to tell the user about the failures that still stand: which ones a rerun retries, which not.

A rerun of the same command asks again for everything still failed, but only transient failures (rate
limits, server errors, timeouts, lost connections) can come out differently: a malformed or empty reply
is in the cache, so the same request gets the same reply back, and a refused request (`bad_request`) is
refused again. Those need `run.retry_failed=true` (ask afresh, past the cache), or another setting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from mem0bench.llm.types import kind_traits
from mem0bench.pipeline.failures import SYSTEM_ERROR
from mem0bench.rundir.records import FailureRecord

__all__ = ["RETRY_FAILED_OVERRIDE", "rerun_advice"]

RETRY_FAILED_OVERRIDE = "run.retry_failed=true"


def _counts(failures: Sequence[FailureRecord]) -> str:
    tally = Counter(f.kind for f in failures)
    return ", ".join(f"{kind} {n}" for kind, n in sorted(tally.items()))


def rerun_advice(failures: Sequence[FailureRecord], *, retried: bool, above_rate: bool = False) -> str:
    """One sentence (no trailing period) on how the standing `failures` can be retried; what each kind
    allows comes from its properties (llm.types.FAILURE_KINDS).

    `retried`: this run already had run.retry_failed=true. `above_rate`: the run exceeded
    run.max_failure_rate, so also say how to accept the failures as they are.
    """
    transient = [f for f in failures if kind_traits(f.kind).transient]
    cached = [f for f in failures if kind_traits(f.kind).from_cache]
    crashed = [f for f in failures if f.kind == SYSTEM_ERROR]
    # The others, by what would put them right (kinds sharing a remedy share a sentence).
    other: dict[str, list[FailureRecord]] = {}
    for f in failures:
        traits = kind_traits(f.kind)
        if not (traits.transient or traits.from_cache or f.kind == SYSTEM_ERROR):
            other.setdefault(traits.remedy, []).append(f)
    parts: list[str] = []
    if transient:
        parts.append(
            f"rerun the same command to retry the {len(transient)} transient ones ({_counts(transient)})"
        )
    if cached and not retried:
        parts.append(
            f"the {len(cached)} malformed or empty replies ({_counts(cached)}) come back the same from "
            f"the cache: rerun with {RETRY_FAILED_OVERRIDE} to ask again past the cache"
        )
    elif cached:
        remedies = "; ".join(dict.fromkeys(kind_traits(f.kind).remedy for f in cached))
        parts.append(
            f"the {len(cached)} malformed or empty replies ({_counts(cached)}) failed again when asked "
            f"afresh: {remedies}"
        )
    if crashed:
        parts.append(
            f"the system's own code raised on {len(crashed)} question(s) ({_counts(crashed)}): "
            f"{kind_traits(SYSTEM_ERROR).remedy}"
        )
    for remedy, rows in other.items():
        parts.append(
            f"the {len(rows)} other failures ({_counts(rows)}) fail the same way on every attempt: {remedy}"
        )
    if not parts:
        parts.append("rerun the same command to retry them")
    if above_rate:
        parts.append("or accept them with a larger run.max_failure_rate")
    return "; ".join(parts)
