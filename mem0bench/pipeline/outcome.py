"""What a finished run (or re-judging) hands back: its metrics and what is still failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mem0bench.rundir.records import FailureRecord


@dataclass(frozen=True)
class RunOutcome:
    metrics: dict[str, Any]
    """The metrics.json object."""
    failure_rates: dict[str, float]
    """Each stage's share of failed items."""
    current_failures: list[FailureRecord]
    """The failures.jsonl rows still unresolved, in file order."""

    @property
    def failure_rate(self) -> float:
        """The worst stage's failure rate (compared with run.max_failure_rate)."""
        return max(self.failure_rates.values(), default=0.0)
