"""Pure scoring functions: lexical scores, LOCOMO's official F1, judge statistics, aggregates."""

# First: NLTK without the heavy libraries it only wraps (see _nltk); locomo and text import from it.
from mem0bench.metrics import _nltk  # noqa: F401
from mem0bench.metrics.aggregate import mean, percentile
from mem0bench.metrics.judge_stats import JudgeSummary, judge_summary, per_run_accuracy
from mem0bench.metrics.locomo import locomo_f1
from mem0bench.metrics.text import bleu1, f1

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
