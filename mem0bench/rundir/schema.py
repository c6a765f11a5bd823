"""The one shape of a run's results: a predictions.jsonl row and metrics.json, with a schema version.

Everything that writes or reads results goes through here (the runner's aggregate step, `import`, and the
readers of `report`, `judge`, `compare`, `judge-check`), so a file written by another version, or missing
a field the readers rely on, stops the command with one line naming the file and the field instead of
turning into a silent "-" in a table.

Version history: 1 = files written before this module existed (no `schema_version` key); 2 = adds
`answer_words` per row, and `stderr` / `ci95` per score block, `answer_length` and `judge_by_length`.
Fields other stages add (latencies, tokens, failures, ...) pass through in `extra`, untouched.

The score fields are the registered metrics' (`mem0bench.metrics.registry`): schema 2's own (f1, bleu1,
locomo_f1, judge) are required; a metric registered since is read where a file has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mem0bench.common.jsonfile import read_json_object
from mem0bench.common.jsonl import read_jsonl
from mem0bench.metrics.registry import METRICS, per_question
from mem0bench.rundir.directory import RunDirectory, write_json

__all__ = [
    "SCHEMA_VERSION",
    "Metrics",
    "PredictionRow",
    "SchemaError",
    "Scores",
    "by_category",
    "read_metrics",
    "read_predictions",
    "write_results",
]

SCHEMA_VERSION = 2


def score_names() -> list[str]:
    """The scores that carry a stderr and a 95% interval: the per-question metrics, J included."""
    return [m.name for m in per_question()]


def _row_scores() -> list[str]:
    """The per-question score fields of a row (J is the row's `judge` labels)."""
    return [m.name for m in per_question() if not m.from_judge]


class _InCategory(Protocol):
    @property
    def category(self) -> str: ...

    @property
    def category_id(self) -> int: ...


_Row = TypeVar("_Row", bound=_InCategory)


def by_category(rows: Sequence[_Row]) -> list[tuple[str, list[_Row]]]:
    """The rows grouped by category, as (official name, rows) in the order of the category ids: the
    `categories` blocks of metrics.json. Names come from the rows (their suite wrote them), so a category
    of a suite this process has not imported is grouped like any other."""
    ids = sorted({r.category_id for r in rows})
    groups = [[r for r in rows if r.category_id == cid] for cid in ids]
    return [(group[0].category, group) for group in groups]


class SchemaError(ValueError):
    """A results file of another schema version, or missing a field: one line naming file and field."""


def _need(row: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in row:
        raise SchemaError(f"{where}: missing field '{name}' (schema version {SCHEMA_VERSION})")
    return row[name]


@dataclass(frozen=True)
class PredictionRow:
    """One question's final row: what was asked, answered and expected, and its scores."""

    qid: str
    conversation: str
    question: str
    gold: str
    category: str
    category_id: int
    prediction: str
    scores: dict[str, float | None]
    """The per-question metrics' scores by name (f1, bleu1, locomo_f1, ...: the registry's order); None
    where a score does not apply (a suite without reference answers; LOCOMO F1 off LOCOMO)."""
    judge: tuple[str | None, ...]
    """One entry per judge run: CORRECT, WRONG, PARTIAL (graded suites) or None (the judge failed on it)."""
    answer_words: int
    extra: dict[str, Any] = field(default_factory=dict)

    HEAD = ("qid", "conversation", "question", "gold", "category", "category_id", "prediction")
    TAIL = ("judge", "answer_words")

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """A row's own fields, in the file's order: the scores of every registered metric included."""
        return (*cls.HEAD, *_row_scores(), *cls.TAIL)

    def score(self, name: str) -> float | None:
        """The score of metric `name` (None where it does not apply or the row does not have it)."""
        return self.scores.get(name)

    @property
    def judge_mean(self) -> float | None:
        """The mean score of this question's judge runs: the share that said CORRECT, a PARTIAL counting
        0.5 (failed runs left out)."""
        labels = [0.5 if x == "PARTIAL" else float(x == "CORRECT") for x in self.judge if x is not None]
        return sum(labels) / len(labels) if labels else None

    @property
    def judge_majority(self) -> bool | None:
        """The majority label (ties WRONG); None when no run labelled it."""
        mean = self.judge_mean
        return None if mean is None else mean > 0.5

    # The answer row's own fields, passed through in `extra`, that the aggregate reads.
    @property
    def failure(self) -> str | None:
        return self.extra.get("failure")

    @property
    def cached(self) -> bool | None:
        return self.extra.get("cached")

    @property
    def context_tokens(self) -> int | None:
        return self.extra.get("context_tokens")

    @property
    def context_items(self) -> int | None:
        return self.extra.get("context_items")

    @property
    def search_latency_s(self) -> float | None:
        return self.extra.get("search_latency_s")

    @property
    def total_latency_s(self) -> float | None:
        return self.extra.get("total_latency_s")

    @property
    def evidence_recall(self) -> float | None:
        return self.extra.get("evidence_recall")

    @property
    def session_recall(self) -> float | None:
        """Session-level evidence recall (LongMemEval's rows only)."""
        return self.extra.get("session_recall")

    @classmethod
    def from_dict(cls, row: Mapping[str, Any], where: str) -> PredictionRow:
        values = {name: _need(row, name, where) for name in (*cls.HEAD, *cls.TAIL)}
        values["judge"] = tuple(values["judge"])
        scores = {
            name: _need(row, name, where) if METRICS[name].schema else row[name]
            for name in _row_scores()
            if METRICS[name].schema or name in row
        }
        extra = {k: v for k, v in row.items() if k not in values and k not in scores}
        return cls(**values, scores=scores, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in self.HEAD}
        out.update((name, self.scores[name]) for name in _row_scores() if name in self.scores)
        out.update(judge=list(self.judge), answer_words=self.answer_words)
        return {**out, **self.extra}


@dataclass(frozen=True)
class Scores:
    """One score block of metrics.json (overall, or one category)."""

    values: dict[str, Any]
    """The registered metrics' figures by name, in the registry's order: f1, bleu1, locomo_f1 (a mean, or
    None where it does not apply), judge (J's block), and any metric registered since where it applies."""
    stderr: dict[str, float | None]
    ci95: dict[str, list[float] | None]
    extra: dict[str, Any] = field(default_factory=dict)

    def value(self, name: str) -> Any:
        """Metric `name`'s figure in this block (None: not applicable, or not in the block)."""
        return self.values.get(name)

    @property
    def judge(self) -> dict[str, Any] | None:
        """J's block: mean, std over judge runs, per-run accuracies, ..."""
        return self.values.get("judge")

    @property
    def n(self) -> int | None:
        """Questions in the block (a category's; the overall block leaves it to `Metrics.n_questions`)."""
        n = self.extra.get("n")
        return n if isinstance(n, int) and not isinstance(n, bool) else None

    @classmethod
    def from_dict(cls, block: Any, where: str) -> Scores:
        if not isinstance(block, Mapping):
            raise SchemaError(f"{where}: expected an object, got {type(block).__name__}")
        values = {
            name: _need(block, name, where) if m.schema else block[name]
            for name, m in METRICS.items()
            if m.schema or name in block
        }
        spread = {name: _need(block, name, where) for name in ("stderr", "ci95")}
        for name in ("stderr", "ci95"):
            for m in per_question():
                if m.schema:
                    _need(spread[name], m.name, f"{where}.{name}")
        extra = {k: v for k, v in block.items() if k not in values and k not in spread}
        return cls(values, spread["stderr"], spread["ci95"], extra=extra)

    def to_dict(self) -> dict[str, Any]:
        ordered = {name: self.values[name] for name in METRICS if name in self.values}
        return {**self.extra, **ordered, "stderr": self.stderr, "ci95": self.ci95}


@dataclass(frozen=True)
class Metrics:
    """metrics.json."""

    schema_version: int
    method: str
    n_questions: int
    overall: Scores
    categories: dict[str, Scores]
    extra: dict[str, Any] = field(default_factory=dict)

    REQUIRED = ("schema_version", "method", "n_questions", "overall", "categories")

    def scores(self, key: str) -> Scores | None:
        """The overall block ("overall") or a category's (None when the run has no question in it)."""
        return self.overall if key == "overall" else self.categories.get(key)

    # The blocks other stages add, passed through in `extra` (None or empty when a run has none).
    @property
    def judge_name(self) -> str | None:
        return self.extra.get("judge_name")

    @property
    def imported_judge(self) -> dict[str, Any] | None:
        return self.extra.get("imported_judge")

    @property
    def latency(self) -> dict[str, Any]:
        """`latency_s`: search and total p50/p95, n_uncached, n_cached."""
        return self.extra.get("latency_s") or {}

    @property
    def latency_isolated(self) -> dict[str, Any]:
        """`latency_isolated_s`: the isolated latency pass's search, total, local and server p50/p95 with
        n (searches), n_total and n_failed; empty for a run without the pass."""
        return self.extra.get("latency_isolated_s") or {}

    @property
    def tokens(self) -> dict[str, Any]:
        return self.extra.get("tokens") or {}

    @property
    def empty_contexts(self) -> dict[str, Any]:
        return self.extra.get("empty_contexts") or {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Metrics:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            found = "no schema_version (an older mem0bench)" if version is None else f"version {version}"
            raise SchemaError(
                f"{where}: results schema {found}, this mem0bench reads version {SCHEMA_VERSION}; "
                "rewrite it with `python -m mem0bench judge RUN_DIR`"
            )
        values = {name: _need(data, name, where) for name in cls.REQUIRED}
        values["overall"] = Scores.from_dict(values["overall"], f"{where}: overall")
        if not isinstance(values["categories"], Mapping):
            raise SchemaError(f"{where}: 'categories' must be an object")
        values["categories"] = {
            name: Scores.from_dict(block, f"{where}: categories.{name}")
            for name, block in values["categories"].items()
        }
        return cls(**values, extra={k: v for k, v in data.items() if k not in cls.REQUIRED})

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "method": self.method,
            "n_questions": self.n_questions,
            "overall": self.overall.to_dict(),
            "categories": {k: v.to_dict() for k, v in self.categories.items()},
            **self.extra,
        }


def read_predictions(path: Path) -> list[PredictionRow]:
    """predictions.jsonl as typed rows (the file's version is metrics.json's: read that first)."""
    if not path.is_file():
        raise SchemaError(f"{path}: not found")
    try:
        return [
            PredictionRow.from_dict(row, f"{path}: line {i}") for i, row in enumerate(read_jsonl(path), 1)
        ]
    except ValueError as exc:
        raise SchemaError(str(exc)) from None


def read_metrics(path: Path) -> Metrics:
    if not path.is_file():
        raise SchemaError(f"{path}: not found")
    try:
        data = read_json_object(path)
    except ValueError as exc:
        raise SchemaError(str(exc)) from None
    return Metrics.from_dict(data, str(path))


def write_results(
    rundir: RunDirectory, rows: Sequence[PredictionRow], metrics: dict[str, Any], subdir: str = ""
) -> Metrics:
    """Check the metrics against the schema, then write predictions.jsonl and metrics.json (in `subdir`
    of the run, for a judge other than the run's own). A writer that forgot a field fails here, before
    anything is written."""
    typed = Metrics.from_dict({**metrics, "schema_version": SCHEMA_VERSION}, "metrics")
    prefix = f"{subdir}/" if subdir else ""
    rundir.rewrite(f"{prefix}predictions.jsonl", [r.to_dict() for r in rows])
    write_json(rundir.file(f"{prefix}metrics.json"), typed.to_dict())
    return typed
