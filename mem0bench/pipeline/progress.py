"""Progress bars per stage, with calls, tokens and cost so far (tqdm on stderr)."""

from __future__ import annotations

import sys
import time
from typing import Any

from tqdm import tqdm


class StageProgress:
    def __init__(self, ledger: Any, totals: dict[str, int], *, enabled: bool = True):
        self.ledger = ledger
        self.enabled = enabled and sys.stderr.isatty() or enabled == "always"
        self._bars: dict[str, tqdm] = {}
        self._last_postfix = 0.0
        if not self.enabled:
            return
        for position, (stage, total) in enumerate(totals.items()):
            self._bars[stage] = tqdm(total=total, desc=f"{stage:>6}", position=position, leave=True,
                                     dynamic_ncols=True, file=sys.stderr)  # fmt: skip

    def advance(self, stage: str, n: int = 1) -> None:
        bar = self._bars.get(stage)
        if bar is None:
            return
        bar.update(n)
        now = time.monotonic()
        if now - self._last_postfix > 0.5:  # the ledger summary is cheap, but not free per call
            self._last_postfix = now
            self._refresh_postfix()

    def _refresh_postfix(self) -> None:
        for stage, bar in self._bars.items():
            usage = self.ledger.stage(stage) if hasattr(self.ledger, "stage") else None
            if usage is None:
                continue
            tokens = usage.prompt_tokens + usage.completion_tokens
            bar.set_postfix_str(f"calls {usage.calls} tok {tokens:,} ${usage.cost_usd:.3f}", refresh=False)

    def close(self) -> None:
        if self._bars:
            self._refresh_postfix()
        for bar in self._bars.values():
            bar.close()
