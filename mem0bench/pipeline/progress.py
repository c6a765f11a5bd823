"""Progress per stage (ingest, answer, judge) with LLM calls, tokens and cost so far, and an ETA.

`run.progress` decides where it goes:

* `true` (default): live tqdm bars when stderr is a terminal; when it is not (a log file, CI, a batch job),
  one plain line per stage every `log_every_s` seconds and when a stage completes, so logs stay readable
  (no carriage-return redraws) yet show that the run is alive and what it has spent.
* `always`: tqdm bars even without a terminal (e.g. a pseudo-terminal that does not say it is one).
* `false`: nothing.

Calls and tokens are what the stage consumed (cached replies included); cost is what this process paid.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from tqdm import tqdm

# The client's accounting stages behind each progress stage (search is part of answering a question).
LEDGER_STAGES = {"ingest": ("ingest",), "answer": ("search", "answer"), "judge": ("judge",)}

ProgressMode = bool | str


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
        self._bars: dict[str, tqdm] = {}
        self._started = time.monotonic()
        self._first_advance: dict[str, float] = {}
        self._first_done: dict[str, int] = {}
        self._last_postfix = 0.0
        self._last_line = time.monotonic()
        self._closed = False
        if self.mode != "bars":
            return
        for position, (stage, total) in enumerate(totals.items()):
            self._bars[stage] = tqdm(
                total=total, desc=f"{stage:>6}", position=position, leave=True, file=self.stream,
                dynamic_ncols=True, mininterval=0.1 if tty else 1.0,
            )  # fmt: skip

    # -- numbers -------------------------------------------------------------------------------------
    def usage(self, stage: str) -> tuple[int, int, float]:
        """(calls, tokens, USD paid by this process) of the client stages behind a progress stage."""
        calls = tokens = 0
        cost = 0.0
        if not hasattr(self.ledger, "stage"):
            return calls, tokens, cost
        for name in LEDGER_STAGES.get(stage, (stage,)):
            u = self.ledger.stage(name)
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

    def line(self, stage: str) -> str:
        calls, tokens, cost = self.usage(stage)
        return (
            f"progress {stage}: {self.done.get(stage, 0)}/{self.totals.get(stage, 0)}, calls {calls:,}, "
            f"tokens {tokens:,}, cost ${cost:.4f}, eta {_eta(self.eta_s(stage))}"
        )

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
            if bar is not None:
                bar.update(n)
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

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _refresh_postfix(self) -> None:
        for stage, bar in self._bars.items():
            calls, tokens, cost = self.usage(stage)
            bar.set_postfix_str(f"calls {calls:,} tok {tokens:,} ${cost:.4f}", refresh=False)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bars:
            self._refresh_postfix()
        for bar in self._bars.values():
            bar.close()
