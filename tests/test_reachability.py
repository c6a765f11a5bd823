"""The watch behind `llm.unreachable_after_s`, on a fake clock: a streak of connection failures and
timeouts longer than the window marks the server down; any reply ends the streak."""

from __future__ import annotations

import asyncio
import io

import pytest

from mem0bench.llm.reachability import ReachabilityWatch, ServerUnreachable

URL = "http://127.0.0.1:1/v1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _watch(window: float = 60.0) -> tuple[ReachabilityWatch, Clock, io.StringIO]:
    clock, out = Clock(), io.StringIO()
    return ReachabilityWatch(URL, window, warn_every_s=30.0, clock=clock, out=out), clock, out


def test_a_long_streak_marks_the_server_down():
    watch, clock, out = _watch()
    watch.failed("connection error: refused")
    watch.check()  # one failure is not an outage
    clock.now += 6
    watch.failed("connection error: refused")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: calls to {URL} have been failing since ")
    assert (
        "(6 s; last error: connection error: refused)" in lines[0]
        and "60 s (llm.unreachable_after_s)" in lines[0]
    )
    clock.now += 20
    watch.failed("timeout")
    assert len(out.getvalue().splitlines()) == 1  # at most one line every warn_every_s
    clock.now += 40
    watch.failed("request timed out after 60 s")
    with pytest.raises(ServerUnreachable) as info:
        watch.check()
    text = str(info.value)
    assert (
        URL in text
        and "(66 s of failed calls)" in text
        and "last error: request timed out after 60 s" in text
    )
    watch.reply()  # a late reply does not undo the decision: every stage is stopping
    with pytest.raises(ServerUnreachable):
        watch.check()


def test_a_reply_ends_the_streak():
    watch, clock, out = _watch()
    watch.failed("refused")
    clock.now += 50
    watch.failed("refused")
    watch.reply()
    assert "answered again" in out.getvalue().splitlines()[-1]
    clock.now += 50
    watch.failed("refused")  # a new streak starts here
    watch.check()
    assert watch.failing


def test_backoff_sleep_stops_at_the_window_edge_and_when_the_server_goes_down():
    async def go() -> None:
        watch, clock, out = _watch(window=0.2)
        clock.now = 0.0
        watch._clock = lambda: asyncio.get_running_loop().time()  # a real clock for the sleeps
        watch.failed("refused")
        loop = asyncio.get_running_loop()
        start = loop.time()
        await watch.sleep(30.0)  # capped where the first warning is due (half the window here)
        watch.failed("refused")
        assert not watch.down and "failing since" in out.getvalue()
        await watch.sleep(30.0)  # capped at the window's end
        assert loop.time() - start < 5
        watch.failed("refused")
        with pytest.raises(ServerUnreachable):
            watch.check()
        start = loop.time()
        await watch.sleep(30.0)  # down already: no waiting at all
        assert loop.time() - start < 5

    asyncio.run(go())
