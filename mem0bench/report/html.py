"""`DIR/report.html`: one self-contained page with the tables, the plots and a per-question browser.

Nothing on the page is fetched: the CSS and the script are inline (from `report_template.html`), the
plots are base64 PNGs and the per-question data is a JSON block the script renders. Each question is an
element carrying `data-qid`; the browser filters by run, category, correct/wrong, disagreement between runs
and free text, and shows for every run its answer, its judge labels and the retrieved context with the
lines holding a gold evidence turn marked.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from mem0bench.metrics.registry import per_question
from mem0bench.report.collect import ReportError, RunSummary, short_names

__all__ = ["QuestionView", "RunAnswer", "collect_questions", "write_html"]

PREDICTIONS = "predictions.jsonl"


@dataclass(frozen=True)
class RunAnswer:
    """One run's answer to one question, as the page shows it."""

    prediction: str
    judge: list[str | None]
    verdict: bool | None
    """Majority of the judge labels (ties WRONG, as metrics.json); None when no run gave a label."""
    scores: dict[str, float] = field(default_factory=dict)
    """The registry's metrics shown beside an answer (`Metric.html`: F1), by title, where the row has one."""
    failure: str | None = None
    context: str | None = None
    context_dia_ids: list[str] = field(default_factory=list)


@dataclass
class QuestionView:
    """One question with every run's answer."""

    qid: str
    conversation: str
    category: str
    question: str
    gold: str
    evidence: list[str]
    evidence_text: dict[str, str] = field(default_factory=dict)
    """dia_id -> 'speaker: text' of the gold evidence turns, when the dataset file could be read."""
    answers: dict[int, RunAnswer] = field(default_factory=dict)
    """Run index (in the report's run order) -> that run's answer."""


def _verdict(labels: Sequence[str | None]) -> bool | None:
    given = [lab for lab in labels if lab is not None]
    if not given:
        return None
    return sum(lab == "CORRECT" for lab in given) > len(given) / 2


def _read_predictions(run: RunSummary) -> list[dict[str, Any]]:
    path = run.path / PREDICTIONS
    if not path.is_file():
        return []
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReportError(f"{path}:{number}: not a JSON row ({exc.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("qid"), str):
                raise ReportError(f"{path}:{number}: a row without a 'qid' string")
            rows.append(row)
    return rows


def _evidence_texts(runs: Sequence[RunSummary]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """sample_id -> dia_id -> 'speaker: text' from each run's dataset file (run.json); and notes on files
    that could not be read (the page then shows evidence ids without their text)."""
    from mem0bench.data import load_dataset  # only the HTML report needs the dataset itself

    texts: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    seen: set[str] = set()
    for run in runs:
        try:
            manifest = json.loads((run.path / "run.json").read_text(encoding="utf-8"))
            path = str(manifest["dataset"]["path"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if path in seen:
            continue
        seen.add(path)
        try:
            dataset = load_dataset(path)
        except Exception as exc:  # any unreadable dataset: the page still works, without evidence text
            notes.append(f"evidence text unavailable from {path}: {' '.join(str(exc).split())}")
            continue
        for conv in dataset.conversations:
            turns = texts.setdefault(conv.sample_id, {})
            for turn in conv.turns:
                turns.setdefault(turn.dia_id, f"{turn.speaker}: {turn.text}")
    return texts, notes


def collect_questions(runs: Sequence[RunSummary]) -> tuple[list[QuestionView], list[str]]:
    """Every question any run answered (first-seen order), with each run's answer; and notes for the page."""
    texts, notes = _evidence_texts(runs)
    questions: dict[str, QuestionView] = {}
    shown = [m for m in per_question() if m.html]
    for index, run in enumerate(runs):
        rows = _read_predictions(run)
        if not rows:
            notes.append(f"{run.path}: no {PREDICTIONS} rows: its answers are not in the question browser")
        for row in rows:
            qid = row["qid"]
            view = questions.get(qid)
            if view is None:
                conv = str(row.get("conversation") or "")
                evidence = [str(e) for e in row.get("evidence") or []]
                known = texts.get(conv, {})
                view = QuestionView(
                    qid=qid,
                    conversation=conv,
                    category=str(row.get("category") or ""),
                    question=str(row.get("question") or ""),
                    gold=str(row.get("gold") or ""),
                    evidence=evidence,
                    evidence_text={e: known[e] for e in evidence if e in known},
                )
                questions[qid] = view
            judge = [lab if lab in ("CORRECT", "WRONG") else None for lab in row.get("judge") or []]
            view.answers[index] = RunAnswer(
                prediction=str(row.get("prediction") or ""),
                judge=judge,
                verdict=_verdict(judge),
                scores={m.title: v for m in shown if (v := row.get(m.name)) is not None},
                failure=row.get("failure"),
                context=row.get("context"),
                context_dia_ids=[str(d) for d in row.get("context_dia_ids") or []],
            )
    return list(questions.values()), notes


def _png(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}"></figure>'


def _table(caption: str, df: pd.DataFrame) -> str:
    body = df.to_html(index=False, escape=True, border=0, classes="tbl", na_rep="")
    return f'<section class="table"><h3>{html.escape(caption)}</h3>{body}</section>'


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element (no '</script>' or '<!--' can end it early)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def write_html(
    runs: Sequence[RunSummary],
    out_dir: Path,
    tables: Sequence[tuple[str, pd.DataFrame]],
    plots: Sequence[Path],
    *,
    warnings: Sequence[str] = (),
) -> Path:
    """Write `out_dir/report.html` and return its path. `warnings`: what the CLI warned about
    (`notices.report_warnings`), shown above the tables."""
    labels = short_names(runs)
    questions, notes = collect_questions(runs)
    data = {
        "runs": [
            {"label": label, "path": str(run.path), "status": run.status}
            for label, run in zip(labels, runs, strict=True)
        ],
        "questions": [
            {**asdict(q), "answers": {str(i): asdict(a) for i, a in q.answers.items()}} for q in questions
        ],
    }
    template = (
        resources.files("mem0bench.report").joinpath("report_template.html").read_text(encoding="utf-8")
    )
    parts = {
        "@TITLE@": html.escape(f"mem0bench report: {len(runs)} run(s), {len(questions)} questions"),
        "@GENERATED@": html.escape(datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        "@WARNINGS@": "".join(f'<p class="warn">warning: {html.escape(w)}</p>' for w in warnings),
        "@NOTES@": "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes),
        "@TABLES@": "".join(_table(caption, df) for caption, df in tables),
        "@PLOTS@": "".join(_png(p) for p in plots),
        "@DATA@": _script_json(data),
    }
    # One pass, so a placeholder-like string inside the data is never replaced.
    page = re.sub(r"@[A-Z]+@", lambda m: parts.get(m.group(0), m.group(0)), template)
    out = out_dir / "report.html"
    out_dir.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
