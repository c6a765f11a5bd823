"""Pure scoring functions: lexical scores, LOCOMO's official F1, judge statistics, aggregates; and the
registry that declares each metric a run reports once (`registry`, README.md).

The lexical scores (`bleu1`, `f1`, `locomo_f1`) need NLTK, whose import costs ~0.4 s of CPU: they are
loaded on first use (PEP 562), so a run pays for NLTK when it scores, after its last model call, and not
before its first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mem0bench.metrics.aggregate import mean, percentile
from mem0bench.metrics.judge_stats import JudgeSummary, judge_summary, per_run_accuracy

if TYPE_CHECKING:
    from mem0bench.metrics.locomo import locomo_f1
    from mem0bench.metrics.text import bleu1, f1

_LEXICAL = {
    "bleu1": "mem0bench.metrics.text",
    "f1": "mem0bench.metrics.text",
    "locomo_f1": "mem0bench.metrics.locomo",
}

__all__ = [
    "JudgeSummary",
    "bleu1",
    "f1",
    "judge_summary",
    "locomo_f1",
    "mean",
    "per_run_accuracy",
    "percentile",
]


def __getattr__(name: str) -> Any:
    module = _LEXICAL.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
