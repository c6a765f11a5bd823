"""Which run is which: the table that tells a report's runs apart, and a warning when they differ in scope.

Two runs with the same method and hyperparameters can still differ in what they measured: the number of
conversations and questions, the dataset file, the answer key, the judge. The runs table shows all of it,
one row per run (named as in Table 1 and 2), so identical-looking rows can be told apart; figures from
runs of different scope are not comparable, and `scope_differences` says where they differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from mem0bench.common.jsonl import read_jsonl
from mem0bench.report.collect import RunSummary

__all__ = ["RUNS_CAPTION", "RunScope", "run_scope", "runs_table", "scope_differences"]

RUNS_CAPTION = "Runs: what each row of Tables 1 and 2 measured (scope, dataset, answer key, judge)."

RunScope = dict[str, Any]


def _conversations(run: RunSummary) -> int | None:
    scope = run.manifest.get("scope") or {}
    if isinstance(scope.get("conversations"), int):
        return scope["conversations"]
    try:  # runs made before run.json had a scope: count them in the predictions
        rows = list(read_jsonl(run.path / "predictions.jsonl"))
    except (OSError, ValueError):
        return None
    return len({r.get("conversation") for r in rows}) if rows else None


def run_scope(run: RunSummary) -> RunScope:
    """What a run measured, from its run.json, metrics.json and config.yaml."""
    dataset = run.manifest.get("dataset") or {}
    scope = run.manifest.get("scope") or {}
    key = scope.get("answer_key") if scope else None
    if key is None and run.config.get("dataset.answer_key"):
        key = {"path": run.config.get("dataset.answer_key"), "sha256": None}
    return {
        "questions": run.metrics.n_questions,
        "conversations": _conversations(run),
        "dataset": dataset.get("path") or run.config.get("dataset.path"),
        "dataset_sha256": dataset.get("sha256"),
        "answer_key": (key or {}).get("path"),
        "answer_key_sha256": (key or {}).get("sha256"),
        "judge_model": run.config.get("judge.model"),
        "judge_prompt": run.config.get("judge.prompt"),
        "judge_runs": run.config.get("judge.runs"),
        "judgements": (run.metrics.overall.judge or {}).get("judgements"),
    }


def _short_sha(sha: Any) -> str:
    return str(sha)[:12] if sha else "-"


def _file(path: Any) -> str:
    return str(path).replace("\\", "/").rsplit("/", 1)[-1] if path else "-"


def runs_table(runs: Sequence[RunSummary], *, numeric: bool = False) -> pd.DataFrame:
    """One row per run: its name and folder, method, status, scope, dataset, answer key and judge (with
    the number of successful judgements its J stands on)."""
    rows = []
    for run in runs:
        s = run_scope(run)
        rows.append(
            {
                "run": run.name,
                "folder": str(run.path),
                "method": run.method,
                "status": run.status or "-",
                "conversations": s["conversations"] if numeric else _text(s["conversations"]),
                "questions": s["questions"] if numeric else _text(s["questions"]),
                "dataset": _file(s["dataset"]),
                "dataset sha256": s["dataset_sha256"] if numeric else _short_sha(s["dataset_sha256"]),
                "answer key": _file(s["answer_key"]) if s["answer_key"] else "LOCOMO's",
                "judge": f"{s['judge_model'] or '-'} / {s['judge_prompt'] or '-'}",
                "judge runs": s["judge_runs"] if numeric else _text(s["judge_runs"]),
                "judgements": s["judgements"] if numeric else _text(s["judgements"]),
            }
        )
    return pd.DataFrame(rows)


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


_COMPARED = (
    ("questions", "questions"),
    ("conversations", "conversations"),
    ("dataset_sha256", "dataset (sha256)"),
    ("answer_key_sha256", "answer key"),
    ("answer_key", "answer key"),
    ("judge_model", "judge model"),
    ("judge_prompt", "judge prompt"),
)


def scope_differences(runs: Sequence[RunSummary]) -> list[str]:
    """How the runs differ in what they measured, e.g. 'questions: 1540 (3 runs), 20 (1 run)'; empty
    when they all measured the same thing (or there is only one run)."""
    if len(runs) < 2:
        return []
    scopes = [run_scope(r) for r in runs]
    out: list[str] = []
    said: set[str] = set()
    for key, label in _COMPARED:
        values = Counter(
            _text(s[key]) if key not in ("dataset_sha256",) else _short_sha(s[key]) for s in scopes
        )
        if len(values) > 1 and label not in said:
            said.add(label)
            parts = [f"{value} ({n} run{'s' if n > 1 else ''})" for value, n in values.most_common()]
            out.append(f"{label}: {', '.join(parts)}")
    return out
