"""What to tell the user about the failures that still stand: which ones a rerun retries, which not.

A rerun of the same command asks again for everything still failed, but only transient failures (rate
limits, server errors, timeouts, lost connections) can come out differently: a malformed or empty reply
is in the cache, so the same request gets the same reply back, and a refused request (`bad_request`) is
refused again. Those need `run.retry_failed=true` (ask afresh, past the cache), or another setting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from mem0bench.rundir.records import FailureRecord

__all__ = ["RETRY_FAILED_OVERRIDE", "rerun_advice"]

RETRY_FAILED_OVERRIDE = "run.retry_failed=true"

_TRANSIENT = frozenset({"rate_limit", "server_error", "timeout", "connection"})
_FROM_CACHE = frozenset({"malformed", "empty"})


def _counts(failures: Sequence[FailureRecord], kinds: frozenset[str] | None) -> str:
    tally = Counter(f.kind for f in failures if kinds is None or f.kind in kinds)
    return ", ".join(f"{kind} {n}" for kind, n in sorted(tally.items()))


def rerun_advice(failures: Sequence[FailureRecord], *, retried: bool, above_rate: bool = False) -> str:
    """One sentence (no trailing period) on how the standing `failures` can be retried.

    `retried`: this run already had run.retry_failed=true. `above_rate`: the run exceeded
    run.max_failure_rate, so also say how to accept the failures as they are.
    """
    transient = [f for f in failures if f.kind in _TRANSIENT]
    cached = [f for f in failures if f.kind in _FROM_CACHE]
    other = [f for f in failures if f.kind not in _TRANSIENT and f.kind not in _FROM_CACHE]
    parts: list[str] = []
    if transient:
        parts.append(
            f"rerun the same command to retry the {len(transient)} transient ones ({_counts(transient, None)})"
        )
    if cached and not retried:
        parts.append(
            f"the {len(cached)} malformed or empty replies ({_counts(cached, None)}) come back the same from "
            f"the cache: rerun with {RETRY_FAILED_OVERRIDE} to ask again past the cache"
        )
    elif cached:
        parts.append(
            f"the {len(cached)} malformed or empty replies ({_counts(cached, None)}) failed again when asked "
            "afresh: try another llm.model (or judge.model), a larger llm.max_tokens, or llm.repair_attempts=2"
        )
    if other:
        parts.append(
            f"the {len(other)} other failures ({_counts(other, None)}) fail the same way on every attempt: "
            "change the setting they name (see failures.jsonl)"
        )
    if not parts:
        parts.append("rerun the same command to retry them")
    if above_rate:
        parts.append("or accept them with a larger run.max_failure_rate")
    return "; ".join(parts)
