"""Every score a run reports, declared once: its name, its function, the suites it applies to, and
whether it is scored per question or over a whole run.

What reads the registry: the aggregate (predictions.jsonl's score fields, metrics.json's blocks and their
`not_applicable`), the bootstrap intervals (`stderr`, `ci95`), `compare` (paired differences), the report's
tables and report.html, and the results schema (which fields a row and a block must have). A new metric is
its function in a small module of this package plus one `Metric(...)` in `BUILT_IN` below (or a
`register_metric(...)` call in a module of one's own, such as a suite's: examples/pantry_suite).

Functions are named as 'module:attribute' and imported on first use: the lexical scores import NLTK, which
only scoring needs (see `mem0bench.metrics`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "BUILT_IN",
    "METRICS",
    "Metric",
    "applicable",
    "metric",
    "per_question",
    "per_run",
    "register_metric",
]

Per = Literal["question", "run"]


@dataclass(frozen=True)
class Metric:
    name: str
    """The key in predictions.jsonl's rows (per question) and in metrics.json's score blocks."""
    title: str
    """The column heading of tables and report.html ("F1", "BLEU-1")."""
    per: Per
    """question: a score per answer, averaged (micro) over a block's questions, with a bootstrap interval;
    run: one figure computed from a whole run's rows (an aggregate beyond the micro mean), overall only."""
    function: Callable[..., float | None] | str | None
    """per question: (prediction, gold) -> score, or (prediction, gold, category_id) with `by_category`;
    per run: (rows) -> figure, where a row offers `category`, `category_id`, `judge_mean` and
    `score(name)`. 'module:attribute' is imported on first use. None: the judge's J, whose labels come from
    the judge stage (`from_judge`)."""
    by_category: bool = False
    """The function takes the question's category id too (LOCOMO's F1 scores each category its own way)."""
    suites: frozenset[str] | None = None
    """The suite families (a `Category.suite`: locomo, locomo_plus, longmemeval, ...) it applies to; None:
    every suite."""
    needs_reference: bool = False
    """Applies only where the suite has a short reference answer (`Suite.lexical`)."""
    table: bool = False
    """A column per category in the report's Table 1, in `compare`'s table and in the run's closing line."""
    html: bool = False
    """Shown beside each answer on report.html."""
    schema: bool = False
    """One of results schema 2's own fields: written in every row and block (null where it does not apply,
    listed in `not_applicable`) and required when a file is read. Any other metric is written only where it
    applies, so registering one leaves other suites' files as they were."""

    @property
    def from_judge(self) -> bool:
        """J: its per-question value is the mean of the judge runs' labels."""
        return self.function is None

    def _function(self) -> Callable[..., float | None]:
        function = self.function
        if function is None:
            raise TypeError(f"metric {self.name!r} is computed from the judge's labels, not called")
        if isinstance(function, str):
            module, _, attribute = function.partition(":")
            function = getattr(importlib.import_module(module), attribute)
        return function

    def score(self, prediction: str, gold: str, category_id: int) -> float | None:
        """A per-question metric's score of one answer."""
        function = self._function()
        return function(prediction, gold, category_id) if self.by_category else function(prediction, gold)

    def over_run(self, rows: Sequence[Any]) -> float | None:
        """A per-run metric's figure over a run's rows."""
        return self._function()(rows)


METRICS: dict[str, Metric] = {}


def register_metric(m: Metric) -> Metric:
    """Add `m` to the registry; a name already registered (to another definition) is a ValueError."""
    held = METRICS.get(m.name)
    if held is not None and held != m:
        raise ValueError(f"metric {m.name!r} is registered twice")
    METRICS[m.name] = m
    return m


def metric(name: str) -> Metric:
    return METRICS[name]


def per_question() -> list[Metric]:
    """The per-question metrics in registry order (J included): the fields of a row, the scores of a block."""
    return [m for m in METRICS.values() if m.per == "question"]


def per_run() -> list[Metric]:
    return [m for m in METRICS.values() if m.per == "run"]


def applicable(m: Metric, suite: str, lexical: bool) -> bool:
    """Whether `m` applies to a question of suite family `suite` whose suite has (`lexical`) or has not a
    short reference answer."""
    return (m.suites is None or suite in m.suites) and (lexical or not m.needs_reference)


# The built-in metrics, in the order their fields appear in predictions.jsonl and metrics.json.
BUILT_IN: Sequence[Metric] = (
    Metric("f1", "F1", "question", "mem0bench.metrics.text:f1", needs_reference=True, table=True, html=True,
           schema=True),
    Metric("bleu1", "BLEU-1", "question", "mem0bench.metrics.text:bleu1", needs_reference=True, table=True,
           schema=True),
    Metric("locomo_f1", "LOCOMO F1", "question", "mem0bench.metrics.locomo:locomo_f1", by_category=True,
           suites=frozenset({"locomo"}), needs_reference=True, schema=True),
    Metric("judge", "J", "question", None, schema=True),
)  # fmt: skip
for _m in BUILT_IN:
    register_metric(_m)
