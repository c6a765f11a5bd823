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
from mem0bench.report.collect import RunSummary, UnfinishedRun, short_names

__all__ = ["RUNS_CAPTION", "RunScope", "profile_text", "run_scope", "runs_table", "scope_differences"]

RUNS_CAPTION = (
    "Runs: what each row of Tables 1 and 2 measured (scope, dataset, answer key, judge), and the published "
    "profile it was started from, with the pinned values it changed."
)

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


def runs_table(
    runs: Sequence[RunSummary], *, numeric: bool = False, unfinished: Sequence[UnfinishedRun] = ()
) -> pd.DataFrame:
    """One row per run: its short name (as in the tables and plots), folder name and folder, method,
    status, scope, dataset, answer key and judge (with the number of successful judgements its J stands
    on). `unfinished` runs (no metrics.json: failed before their end) follow, with their status and
    nothing measured, so a report lists every run it was given."""
    rows = []
    for name, run in zip(short_names(runs), runs, strict=True):
        s = run_scope(run)
        rows.append(
            {
                "run": name,
                "name": run.name,
                "folder": str(run.path),
                "method": run.method,
                "status": run.status or "-",
                "profile": profile_text(run),
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
    for job in unfinished:
        measured = dict.fromkeys(_MEASURED, None if numeric else "-")
        rows.append(
            {"run": job.name, "name": job.name, "folder": str(job.path), "method": job.method or "-"}
            | {"status": job.status, "profile": "-"}
            | measured
        )
    # object columns: a count column with an unfinished run's empty cell stays integers (not 40.0)
    return pd.DataFrame(rows, dtype=object)


_MEASURED = (
    "conversations", "questions", "dataset", "dataset sha256", "answer key", "judge", "judge runs", "judgements",
)  # fmt: skip
"""The runs table's columns that only a finished run fills."""


def profile_text(run: RunSummary) -> str:
    """'paper/mem0', or 'paper/mem0, departs: judge.runs=2 (profile: 10)' when the run changed what the
    profile pins (run.json `profile`, pipeline/profile.py); '-' when the run was not started from one."""
    profile = run.manifest.get("profile")
    if not isinstance(profile, dict) or not profile.get("name"):
        return "-"
    overrides = [str(o) for o in profile.get("overrides") or []]
    return f"{profile['name']}, departs: {'; '.join(overrides)}" if overrides else str(profile["name"])


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


def _question_ids(run: RunSummary) -> frozenset[str] | None:
    try:
        return frozenset(str(r.get("qid")) for r in read_jsonl(run.path / "predictions.jsonl"))
    except (OSError, ValueError):
        return None


def question_set_difference(runs: Sequence[RunSummary]) -> str | None:
    """How the runs' question sets differ (as `compare` checks, by question id), e.g. 'question sets:
    18 questions in every run; not in every run: a 2, b 2'; None when every run answered the same ones
    (or a run's predictions.jsonl cannot be read)."""
    sets = [_question_ids(r) for r in runs]
    known = [(run, qids) for run, qids in zip(runs, sets, strict=True) if qids is not None]
    if len(known) < 2 or len({qids for _, qids in known}) == 1:
        return None
    common = frozenset.intersection(*(qids for _, qids in known))
    others = ", ".join(f"{run.name} {len(qids - common)}" for run, qids in known if qids - common)
    return f"question sets: {len(common)} questions in every run; not in every run: {others}"


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
    questions = question_set_difference(runs)
    if questions is not None:
        out.append(questions)
    return out
