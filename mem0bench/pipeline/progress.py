"""Progress per stage (ingest, answer, judge) with LLM calls, tokens and cost so far, and an ETA.

`run.progress` decides where it goes:

* `true` (default): live tqdm bars when stderr is a terminal; when it is not (a log file, CI, a batch job),
  one plain line per stage every `log_every_s` seconds and when a stage completes, so logs stay readable
  (no carriage-return redraws) yet show that the run is alive and what it has spent.
* `always`: tqdm bars even without a terminal (e.g. a pseudo-terminal that does not say it is one).
* `false`: nothing.

Calls and tokens are what the stage consumed (cached replies included); cost is what this process paid.

Units: ingest counts message pairs processed (per speaker's stream for Mem0 and Mem0^g, over every
conversation), so its bar moves during a single conversation; answer counts questions, judge counts
labels (questions x judge runs).

The run ETA (the `run` line) covers every stage still to come, not only the one moving: the LLM calls left
(items left x calls per item, measured on the stage once it has moved, else the dry-run plan's figure)
divided by this process's call rate over the last minute. LLM calls are the unit because the client's
concurrency limit is what paces every stage, and stages overlap (a conversation's questions are answered
while others still ingest). Cached replies come back fast, so right after a resume the ETA is optimistic
until paid calls dominate (the one-minute window makes that short).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, TextIO

from tqdm import tqdm

from mem0bench.llm.ledger import pipeline_stage
from mem0bench.rundir.heartbeat import ProgressSnapshot

# The client's accounting stages behind each progress stage (search is part of answering a question). A
# library's stage behind the bridge counts with its pipeline stage (`ledger.pipeline_stage`).
# The isolated latency pass (`latency`) has no client stage of its own: its calls count as search calls
# (which answering makes too), so its line shows questions done and an ETA, not calls.
LEDGER_STAGES: dict[str, tuple[str, ...]] = {
    "ingest": ("ingest",), "answer": ("search", "answer"), "judge": ("judge",), "latency": (),
}  # fmt: skip

ProgressMode = bool | str

UNITS = {"ingest": "pair", "answer": "question", "judge": "label", "latency": "question"}

# Calls per item when neither a measurement nor a plan is available (one answer call and one query
# embedding per question; one call per judge label).
DEFAULT_CALLS_PER_ITEM = {"answer": 2.0, "judge": 1.0, "latency": 1.0}

RATE_WINDOW_S = 60.0
"""The run ETA uses the call rate of the last minute."""


def parse_mode(value: Any) -> ProgressMode:
    """`run.progress` as given in the config: true, false or 'always' (strings from the command line too)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1", "auto"):
        return True
    if text in ("false", "no", "off", "0", "none", "null"):
        return False
    if text == "always":
        return "always"
    raise ValueError(f"run.progress must be true, false or always, not {value!r}")


class _Bar(tqdm):
    """A tqdm bar that can be frozen when its stage is done: every later drawing (another bar's refresh,
    the close at the end of the run) shows it as it finished, not with a rate and elapsed time that go on
    changing after the work stopped."""

    _frozen: dict[str, Any] | None = None

    @property
    def format_dict(self) -> dict[str, Any]:
        return self._frozen if self._frozen is not None else super().format_dict

    def freeze(self) -> None:
        if self._frozen is not None:
            return
        self._ema_dt = lambda: None  # the stage's overall rate (tqdm's own choice when it closes a bar)
        self._frozen = dict(super().format_dict)
        self.refresh()

    @property
    def frozen(self) -> bool:
        return self._frozen is not None


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class StageProgress:
    def __init__(
        self,
        ledger: Any,
        totals: dict[str, int],
        *,
        enabled: ProgressMode = True,
        stream: TextIO | None = None,
        log_every_s: float = 30.0,
    ):
        self.ledger = ledger
        self.stream = stream if stream is not None else sys.stderr
        self.totals = dict(totals)
        self.done = dict.fromkeys(totals, 0)
        mode = parse_mode(enabled)
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.mode = "bars" if mode == "always" or (mode and tty) else "lines" if mode else "off"
        self.enabled = self.mode != "off"
        self.log_every_s = log_every_s
        self._bars: dict[str, _Bar] = {}
        self._started = time.monotonic()
        self._first_advance: dict[str, float] = {}
        self._first_done: dict[str, int] = {}
        self._last_postfix = 0.0
        self._last_line = time.monotonic()
        self._closed = False
        self.planned_calls_per_item: dict[str, float] = {}
        self._rate_samples: deque[tuple[float, int]] = deque()
        self._rate_lock = threading.Lock()
        self._run_line: tqdm | None = None
        self._mininterval = 0.1 if tty else 1.0
        if self.mode != "bars":
            return
        for position, (stage, total) in enumerate(totals.items()):
            self._bars[stage] = self._bar(stage, total, position)
        # One text line under the bars: the ETA of everything left and what this process has paid.
        self._run_line = tqdm(
            total=0, bar_format="{desc}", desc=f"{'run':>6}: eta ? (all stages)", position=len(totals),
            leave=True, file=self.stream,
        )  # fmt: skip

    def _bar(self, stage: str, total: int, position: int) -> _Bar:
        return _Bar(
            total=total, desc=f"{stage:>6}", unit=UNITS.get(stage, "it"), position=position, leave=True,
            file=self.stream, dynamic_ncols=True, mininterval=self._mininterval,
        )  # fmt: skip

    def add_stage(self, stage: str, total: int) -> None:
        """A stage whose size is known only once the run is under way (the isolated latency pass, after
        the answers): a bar below the others, or its lines, from now on."""
        if stage in self.totals or self._closed:
            return
        self.totals[stage] = total
        self.done[stage] = 0
        if self.mode == "bars":
            self._bars[stage] = self._bar(stage, total, len(self._bars) + 1)  # below the run line
        elif self.mode == "lines":
            self._print(self.line(stage))

    def plan(self, planned_calls: Mapping[str, float]) -> None:
        """The dry-run plan's LLM calls per client stage (ingest, search, answer, judge), for the run ETA
        of stages that have not moved yet."""
        for stage, total in self.totals.items():
            calls = sum(float(planned_calls.get(name, 0.0)) for name in LEDGER_STAGES.get(stage, (stage,)))
            if total > 0 and calls > 0:
                self.planned_calls_per_item[stage] = calls / total

    # -- numbers -------------------------------------------------------------------------------------
    def usage(self, stage: str) -> tuple[int, int, float]:
        """(calls, tokens, USD paid by this process) of the client stages behind a progress stage."""
        calls = tokens = 0
        cost = 0.0
        if not hasattr(self.ledger, "stages"):
            return calls, tokens, cost
        behind = LEDGER_STAGES.get(stage, (stage,))
        for name, u in self.ledger.stages.items():
            if pipeline_stage(name) not in behind:
                continue
            calls += u.calls
            tokens += u.prompt_tokens + u.completion_tokens
            cost += u.cost_usd
        return calls, tokens, cost

    def eta_s(self, stage: str) -> float | None:
        """Seconds left at this process's pace on the stage (None before any progress)."""
        remaining = self.totals.get(stage, 0) - self.done.get(stage, 0)
        if remaining <= 0:
            return 0.0
        started = self._first_advance.get(stage)
        if started is None:
            return None
        made = self.done[stage] - self._first_done[stage]
        elapsed = time.monotonic() - started
        if made <= 0 or elapsed <= 0:
            return None
        return remaining * elapsed / made

    def _calls_per_item(self, stage: str) -> float | None:
        started = self._first_advance.get(stage)
        made = self.done.get(stage, 0) - self._first_done.get(stage, 0) if started is not None else 0
        calls = self.usage(stage)[0]
        if made > 0 and calls > 0:
            return calls / made
        return self.planned_calls_per_item.get(stage, DEFAULT_CALLS_PER_ITEM.get(stage))

    def calls_so_far(self) -> int:
        return sum(self.usage(stage)[0] for stage in self.totals)

    def run_eta_s(self) -> float | None:
        """Seconds left for every stage still to come, at this process's LLM call rate so far."""
        remaining_calls = 0.0
        for stage, total in self.totals.items():
            left = total - self.done.get(stage, 0)
            if left <= 0:
                continue
            per_item = self._calls_per_item(stage)
            if per_item is None:
                return None
            remaining_calls += left * per_item
        if remaining_calls == 0:
            return 0.0
        rate = self._call_rate()
        return None if rate is None else remaining_calls / rate

    def _call_rate(self) -> float | None:
        """LLM calls per second over the last RATE_WINDOW_S (since the start while the window is short):
        a slow start (a model loading, a cold server) or a burst of cached replies fades out of it."""
        with self._rate_lock:  # the heartbeat thread asks too
            return self._call_rate_locked()

    def _call_rate_locked(self) -> float | None:
        now, calls = time.monotonic(), self.calls_so_far()
        samples = self._rate_samples
        if not samples or now - samples[-1][0] >= 1.0:
            samples.append((now, calls))
        while len(samples) > 2 and now - samples[1][0] >= RATE_WINDOW_S:
            samples.popleft()
        since, calls_then = samples[0]
        if now - since < RATE_WINDOW_S / 2:
            since, calls_then = self._started, 0
        elapsed, made = now - since, calls - calls_then
        if made <= 0 or elapsed <= 0:
            return None
        return made / elapsed

    def snapshot(self) -> ProgressSnapshot:
        return ProgressSnapshot(
            done=dict(self.done), totals=dict(self.totals), units={k: UNITS.get(k, "item") for k in self.totals},
            eta_s=self.run_eta_s(), calls=self.calls_so_far(), cost_usd=self._paid(),
        )  # fmt: skip

    def _paid(self) -> float:
        """USD this process paid over every client stage (embeddings and preflight included)."""
        total = getattr(self.ledger, "total_cost", None)
        return float(total()) if callable(total) else sum(self.usage(s)[2] for s in self.totals)

    def run_line(self) -> str:
        snap = self.snapshot()
        return f"eta {_eta(snap.eta_s)} (all stages), calls {snap.calls:,}, paid ${snap.cost_usd:.4f}"

    def line(self, stage: str) -> str:
        count = f"progress {stage}: {self.done.get(stage, 0)}/{self.totals.get(stage, 0)}"
        if not LEDGER_STAGES.get(stage, (stage,)):
            return f"{count}, eta {_eta(self.eta_s(stage))}"
        calls, tokens, cost = self.usage(stage)
        return f"{count}, calls {calls:,}, tokens {tokens:,}, cost ${cost:.4f}, eta {_eta(self.eta_s(stage))}"

    # -- updates -------------------------------------------------------------------------------------
    def advance(self, stage: str, n: int = 1) -> None:
        if stage not in self.done:
            return
        if stage not in self._first_advance:
            self._first_advance[stage] = time.monotonic()
            self._first_done[stage] = self.done[stage]
        self.done[stage] += n
        if self.mode == "bars":
            bar = self._bars.get(stage)
            if bar is not None and not bar.frozen:
                bar.update(n)
                if self.done[stage] >= self.totals.get(stage, 0):
                    self._finish(stage, bar)
            now = time.monotonic()
            if now - self._last_postfix > 0.5:  # the ledger summary is cheap, but not free per call
                self._last_postfix = now
                self._refresh_postfix()
        elif self.mode == "lines":
            now = time.monotonic()
            finished = self.done[stage] >= self.totals.get(stage, 0)
            if finished and self.done[stage] - n < self.totals.get(stage, 0):
                self._print(self.line(stage))
            elif now - self._last_line >= self.log_every_s:
                self._last_line = now
                for name in self.totals:
                    if self.done[name] < self.totals[name]:
                        self._print(self.line(name))
                self._print(f"progress run: {self.run_line()}")

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _postfix(self, stage: str, bar: _Bar) -> None:
        if LEDGER_STAGES.get(stage, (stage,)):  # else no calls of its own to show
            calls, tokens, cost = self.usage(stage)
            bar.set_postfix_str(f"calls {calls:,} tok {tokens:,} ${cost:.4f}", refresh=False)

    def _finish(self, stage: str, bar: _Bar) -> None:
        """A stage is done: its bar shows its final calls and overall rate, and stays so."""
        self._postfix(stage, bar)
        bar.freeze()

    def _refresh_postfix(self) -> None:
        for stage, bar in self._bars.items():
            if not bar.frozen:
                self._postfix(stage, bar)
        if self._run_line is not None:
            self._run_line.set_description_str(f"{'run':>6}: {self.run_line()}", refresh=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bars:
            self._refresh_postfix()
        # Top to bottom: tqdm draws each closing bar on the cursor's line and moves down one, so closing a
        # late stage's bar (below the run line) before the run line drew each on the other's line, the
        # shorter over the longer, leaving its tail behind.
        lines: list[tqdm] = [*self._bars.values(), *([self._run_line] if self._run_line is not None else [])]
        for line in sorted(lines, key=lambda bar: abs(bar.pos)):
            line.close()
