"""How a measured scope splits its wall time when its calls overlap (mem0bench/llm/timing.py)."""

from __future__ import annotations

import pytest

from mem0bench.llm.timing import CallTiming, _union_s


def test_union_counts_overlapping_intervals_once() -> None:
    assert _union_s([]) == 0.0
    assert _union_s([(0.0, 1.0), (2.0, 3.0)]) == 2.0
    assert _union_s([(0.0, 2.0), (1.0, 3.0)]) == 3.0
    assert _union_s([(1.0, 3.0), (0.0, 4.0), (2.0, 2.5)]) == 4.0


def scope(
    elapsed: float, waits: list[tuple[float, float]], requests: list[tuple[float, float]]
) -> CallTiming:
    return CallTiming(elapsed_s=elapsed, waits=waits, requests=requests)


def test_forty_parallel_requests_leave_the_local_part_and_the_latency_standing() -> None:
    # A reranker's 40 requests of 0.1 s, all at once, inside a 0.5 s search: their sum is 4 s.
    t = scope(0.5, [], [(0.2, 0.3)] * 40)
    assert t.network_s == pytest.approx(4.0) and t.server_s == pytest.approx(0.1)
    assert t.local_s == pytest.approx(0.4) and t.latency_s == pytest.approx(0.5)


def test_a_wait_counts_as_queueing_only_while_none_of_the_scopes_requests_is_in_flight() -> None:
    # Request A runs 0-1 s; request B waits for a slot 0-1.5 s, then runs 1.5-2 s; the scope ends at 2.5 s.
    t = scope(2.5, [(0.0, 1.5)], [(0.0, 1.0), (1.5, 2.0)])
    assert t.queued_only_s == pytest.approx(0.5)  # 1.0-1.5: waiting, nothing of its own being served
    assert t.latency_s == pytest.approx(2.0) and t.server_s == pytest.approx(1.5)
    assert t.local_s == pytest.approx(0.5)


def test_sequential_calls_split_as_before() -> None:
    t = scope(1.0, [(0.0, 0.2)], [(0.2, 0.5)])
    assert t.latency_s == pytest.approx(1.0 - 0.2) and t.local_s == pytest.approx(1.0 - 0.2 - 0.3)
