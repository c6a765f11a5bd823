"""The paper's tables from run summaries: Table 1 (scores per category), Table 2 (tokens and latency)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from tabulate import tabulate

from mem0bench.metrics.registry import per_question, per_run
from mem0bench.report.collect import (
    RunSummary,
    format_value,
    short_key,
    short_names,
    varying_hyperparameters,
)
from mem0bench.report.judge_checks import JudgeCheck, judge_check_for
from mem0bench.report.published import MARK, PublishedResult
from mem0bench.rundir.schema import Metrics
from mem0bench.suites import SUITES, all_categories

__all__ = [
    "OFFICIAL_CATEGORIES",
    "PAPER_CAPTION",
    "PAPER_CATEGORIES",
    "SETTINGS_CAPTION",
    "categories_in",
    "fmt_judge",
    "fmt_pct",
    "bound_kind",
    "settings_table",
    "suite_title",
    "table1",
    "table1_caption",
    "table2",
    "table2_latency",
    "write_table",
]

Labels = Literal["official", "paper"]
MISSING = "-"
NOT_APPLICABLE = "n/a"

# (metrics key, column label) in LOCOMO's official order (categories 1..4).
OFFICIAL_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("multi_hop", "multi_hop"),
    ("temporal", "temporal"),
    ("open_domain", "open_domain"),
    ("single_hop", "single_hop"),
)
# The Mem0 paper's columns: its labels are not LOCOMO's (BRIEF section 2).
PAPER_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("multi_hop", "single-hop (LOCOMO cat 1)"),
    ("open_domain", "multi-hop (LOCOMO cat 3)"),
    ("single_hop", "open-domain (LOCOMO cat 4)"),
    ("temporal", "temporal (LOCOMO cat 2)"),
)
ADVERSARIAL = ("adversarial", "adversarial")
OVERALL = ("overall", "overall")
PAPER_CAPTION = (
    "Table 1 in the Mem0 paper's category labels, NOT LOCOMO's: paper single-hop = LOCOMO category 1 "
    "(multi_hop), multi-hop = category 3 (open_domain), open-domain = category 4 (single_hop), "
    "temporal = category 2. Scores in %."
)
TABLE1_CAPTION_TEMPLATE = (
    "Table 1: F1, BLEU-1 and LLM-as-judge J in %, {categories}. 'J' is the mean ± std over judge "
    "runs (the population std, ddof 0: the judge's own noise); 'J 95% CI' is the 95% interval over questions (cluster bootstrap: "
    "conversations, then questions), the sampling error that decides whether two runs differ."
)
TABLE1_CAPTION = TABLE1_CAPTION_TEMPLATE.format(categories="LOCOMO's categories")
TABLE2_CAPTION = (
    "Table 2: context and memory tokens (cl100k_base), latency in seconds over the questions answered "
    "without a cached reply ('(n=...)': a percentile over fewer than 20 such questions; 'cached': none), "
    "overall J in %. Where a run has an isolated latency pass (each search timed again alone, its calls "
    "live), its latencies are that pass's and the 'latency' column says so, with the n they rest on; "
    "'inline': as timed while the run answered every question at once."
)
SETTINGS_CAPTION = (
    "Settings: the hyperparameters that differ between the runs ('-': the run's method has no such "
    "setting); 'run' is the name the tables and plots use."
)
# What a bound row is (run.json's `bound`, declared by the system that made the run).
BOUND_ROWS = {
    "ceiling": "bound: ceiling (evidence turns only)",
    "floor": "bound: floor (no context)",
}
# Folders written before run.json recorded the declaration: the two bound classes, by name.
_LEGACY_BOUND_CLASSES = {"Oracle": "ceiling", "NoMemory": "floor"}
ROW_KIND = "row"
ORIGINAL_KEY_NOTE = (
    "LOCOMO's original answer key caps J: the locomo-audit found 99 wrong gold answers among the scored "
    "questions, so a right answer to one of them is judged against a wrong key and no system (the oracle "
    "included) reaches 100; `dataset.answer_key=...` scores against a corrected key."
)
# A p95 over fewer rows than this is close to the maximum of a handful of values: shown with its n.
LATENCY_MIN_UNCACHED = 20


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def _get(tree: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(key)
    return tree


def fmt_pct(value: Any) -> str:
    """A fraction as a percentage with 2 decimals ('38.72'); a {'mean','std'} dict as 'mean ± std'."""
    if isinstance(value, dict):
        return fmt_judge(value)
    num = _num(value)
    return MISSING if num is None else f"{100 * num:.2f}"


NO_JUDGEMENT = "n/a"
"""A judge figure that stands on no successful judgement (every judge call failed)."""


def fmt_judge(judge: Any) -> str:
    """J as 'mean ± std' in % (std omitted when unknown or from a single run); 'n/a' when the run was
    judged but no judgement succeeded, '-' when there is no judge figure at all."""
    mean = _num(_get(judge, "mean"))
    if mean is None:
        return NO_JUDGEMENT if isinstance(judge, dict) else MISSING
    std = _num(_get(judge, "std"))
    runs = _get(judge, "runs")
    if std is None or (isinstance(runs, int) and runs < 2):
        return f"{100 * mean:.2f}"
    return f"{100 * mean:.2f} ± {100 * std:.2f}"


def fmt_interval(interval: Any) -> str:
    """A [lo, hi] fraction interval as '[lo, hi]' in %."""
    if not isinstance(interval, (list, tuple)) or len(interval) != 2:
        return MISSING
    lo, hi = (_num(v) for v in interval)
    return MISSING if lo is None or hi is None else f"[{100 * lo:.2f}, {100 * hi:.2f}]"


def _fmt_seconds(value: Any) -> str:
    num = _num(value)
    return MISSING if num is None else f"{num:.3f}"


def _fmt_latency(latency: Any, stage: str, q: str) -> str:
    """A latency percentile, marked when it rests on few uncached rows; 'cached' when on none. Metrics
    written before `n_uncached` existed are shown as they are."""
    n = _get(latency, "n_uncached")
    if isinstance(n, int) and not isinstance(n, bool):
        if n == 0:
            return "cached" if _get(latency, "n_cached") else MISSING
        text = _fmt_seconds(_get(latency, stage, q))
        return f"{text} (n={n})" if n < LATENCY_MIN_UNCACHED and text != MISSING else text
    return _fmt_seconds(_get(latency, stage, q))


def _latency_mode(isolated: Any, inline: Any) -> str:
    """Which timing a row's latencies come from, with the questions they rest on."""
    if isolated:
        n, n_total = _get(isolated, "n"), _get(isolated, "n_total")
        total = "" if n_total == n else f", total n={n_total}"
        return f"isolated (n={n}{total})"
    n = _get(inline, "n_uncached")
    return "inline" if n is None else f"inline (n={n})"


def table2_latency(metrics: Metrics, stage: str, q: str) -> float | None:
    """The latency Table 2 shows for a run (and the latency plot places it at), in seconds: the isolated
    pass's where the run has one (each search timed again alone, its calls live), else the inline one
    over the uncached rows (None when every answer came from the cache)."""
    isolated = metrics.latency_isolated
    return _num(_get(isolated, stage, q) if isolated else _get(metrics.latency, stage, q))


def _fmt_tokens(value: Any) -> str:
    num = _num(value)
    return MISSING if num is None else f"{num:,.0f}"


def categories_in(runs: Sequence[RunSummary], labels: Labels = "official") -> list[tuple[str, str]]:
    """(metrics key, column label) of the categories to show: 1..4 (in the chosen order), then
    adversarial if any run has it. Runs of another suite only (Locomo-Plus, LongMemEval): their own
    categories, in the suites' order, under their official names."""
    if labels not in ("official", "paper"):
        raise ValueError(f"labels must be 'official' or 'paper', got {labels!r}")
    present = {key for r in runs for key in r.metrics.categories}
    registered = all_categories()
    locomo = {c.label for c in registered if c.suite == "locomo"}
    if present and not present & locomo:
        known = [c.label for c in registered if c.label in present]
        # A suite this process has not imported (a user's own): its categories in the runs' order.
        others = dict.fromkeys(k for r in runs for k in r.metrics.categories if k not in known)
        return [(label, label) for label in (*known, *others)]
    cats = list(OFFICIAL_CATEGORIES if labels == "official" else PAPER_CATEGORIES)
    if any(r.metrics.scores(ADVERSARIAL[0]) is not None for r in runs):
        cats.append(ADVERSARIAL)
    return cats


def _in_any(runs: Sequence[RunSummary], name: str) -> bool:
    """Some run has a figure of metric `name` in some block."""
    return any(
        block.value(name) is not None
        for r in runs
        for block in (r.metrics.overall, *r.metrics.categories.values())
    )


def _lead_columns(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """The run's short name and its method: the scores come next, the hyperparameters are in the settings
    table (with several methods they are the union of all their settings, mostly '-', and pushed every
    score off the screen)."""
    return [{"run": name, "method": run.method} for name, run in zip(short_names(runs), runs, strict=True)]


def settings_table(runs: Sequence[RunSummary]) -> pd.DataFrame:
    """One row per run: its short name (as in the tables and plots), method, and every hyperparameter
    that differs between the runs ('-' where a run's method has no such setting)."""
    hyper = varying_hyperparameters(runs)
    rows = _lead_columns(runs)
    for row, run in zip(rows, runs):
        for key in hyper:
            row[short_key(key)] = format_value(run.config[key]) if key in run.config else MISSING
    return pd.DataFrame(rows)


def _pct_number(value: Any) -> float | None:
    num = _num(value)
    return None if num is None else round(100 * num, 4)


def _judge_cells(row: dict[str, Any], label: str, judge: Any, numeric: bool) -> None:
    """J as one 'mean ± std' cell, or (numeric) as separate mean and std columns in %."""
    if not numeric:
        row[label] = fmt_judge(judge)
        return
    row[f"{label} mean"] = _pct_number(_get(judge, "mean"))
    row[f"{label} std"] = _pct_number(_get(judge, "std"))


def bound_kind(run: RunSummary) -> str | None:
    """'bound: ceiling ...' / 'bound: floor ...' for a run whose system declared itself a bound (run.json),
    else None. A folder from before the declaration was recorded: by its class name."""
    declared = run.manifest.get("bound")
    if "bound" not in run.manifest:
        target = str(run.config.get("method._target_") or "")
        declared = _LEGACY_BOUND_CLASSES.get(target.rsplit(".", 1)[-1])
    return BOUND_ROWS.get(str(declared)) if declared else None


def uses_original_key(runs: Sequence[RunSummary]) -> bool:
    """Some run was scored against LOCOMO's own answer key (no `dataset.answer_key`)."""
    return any(not run.config.get("dataset.answer_key") for run in runs)


def suite_title(run: RunSummary) -> str:
    """The title of the suite a run answered (run config's `dataset.suite`; LOCOMO when not set)."""
    name = str(run.config.get("dataset.suite") or "locomo")
    suite = SUITES.get(name)
    return suite.title if suite is not None else name


def table1_caption(runs: Sequence[RunSummary], caption: str | None = None, *, published: bool = False) -> str:
    """Table 1's caption (whose categories: the runs' suites'), with what the bound and published rows mean
    when there are any."""
    if caption is None:
        titles = list(dict.fromkeys(suite_title(run) for run in runs)) or ["LOCOMO"]
        caption = TABLE1_CAPTION_TEMPLATE.format(categories=f"{' and '.join(titles)}'s categories")
    notes = [caption]
    if any(bound_kind(run) for run in runs):
        notes.append(
            "Bound rows: the same answer model and judge given only the question's evidence turns (ceiling) "
            "or no context at all (floor)."
        )
        if uses_original_key(runs):
            notes.append(ORIGINAL_KEY_NOTE)
    if published:
        notes.append(
            f"Rows marked '{MARK}' are other sources' figures (J only, in LOCOMO's category names, each "
            "source's labels mapped): other answer prompts, models and judges, so not comparable as they "
            "stand; no interval or comparison uses them."
        )
    return " ".join(notes)


def table1(
    runs: Sequence[RunSummary],
    labels: Labels = "official",
    *,
    numeric: bool = False,
    published: Sequence[PublishedResult] = (),
    judge_checks: Sequence[JudgeCheck] | None = None,
) -> pd.DataFrame:
    """One row per run: run name, method, then per category and overall F1,
    BLEU-1 and J (mean ± std), all in %. `numeric`: numbers instead of display strings (for CSV), J as
    separate mean and std columns, missing values empty. With bound runs (oracle, no memory) or
    `published` results, a `row` column says what each row is; published rows come last, J only, with no
    interval (there are no per-question data behind them). With `judge_checks` (results of `judge-check`),
    a column beside overall J gives the vague-answer false-accept rate of each run's judge, where one was
    measured."""
    pct = _pct_number if numeric else fmt_pct
    cats = categories_in(runs, labels)
    rows = _lead_columns(runs)
    # The registry's table metrics (F1, BLEU-1, ...: one registered since only where some run has it), then
    # J; the per-run metrics in the overall columns, where some run has them.
    columns = [
        m for m in per_question()
        if m.table and not m.from_judge and (m.schema or _in_any(runs, m.name))
    ]  # fmt: skip
    figures = [m for m in per_run() if m.table and _in_any(runs, m.name)]
    for row, run in zip(rows, runs):
        for key, label in [*cats, OVERALL]:
            scores = run.metrics.scores(key)
            # no reference answer: "n/a", never a 0 or a gap
            absent = (None if scores is None else scores.extra.get("not_applicable")) or ()
            for m in columns:
                value = None if scores is None else scores.value(m.name)
                row[f"{label} {m.title}"] = NOT_APPLICABLE if m.name in absent and not numeric else pct(value)
            _judge_cells(row, f"{label} J", None if scores is None else scores.judge, numeric)
            if key == "overall" and judge_checks is not None:
                _vague_cells(row, judge_check_for(run, judge_checks), numeric)
            ci = None if scores is None else (scores.ci95 or {}).get("judge")
            _interval_cells(row, f"{label} J 95% CI", ci, numeric)
            if key == "overall":
                for m in figures:
                    row[f"overall {m.title}"] = pct(None if scores is None else scores.value(m.name))
        row["judge"] = run.metrics.judge_name or (None if numeric else MISSING)
        imported = run.metrics.imported_judge
        if imported:  # the file's own judge, kept apart once ours has labelled the same answers
            _judge_cells(row, f"overall J by {imported.get('name')}", _get(imported, "overall"), numeric)
    kinds = [bound_kind(run) for run in runs]
    if published or any(kinds):
        for row, kind in zip(rows, kinds):
            row[ROW_KIND] = kind or "measured"
        rows += [_published_row(result, cats, numeric) for result in published]
    return pd.DataFrame(rows) if numeric else pd.DataFrame(rows).fillna(MISSING)


VAGUE_COLUMN = "judge accepts vague wrong answers (%)"


def _vague_cells(row: dict[str, Any], check: JudgeCheck | None, numeric: bool) -> None:
    """The run judge's vague-answer false-accept rate from judge-check: the ceiling of how much of J can be
    the judge being generous rather than the system being right."""
    if numeric:
        row[VAGUE_COLUMN] = None if check is None else round(100 * check.vague_rate, 4)
        return
    if check is None:
        row[VAGUE_COLUMN] = MISSING
        return
    interval = (
        ""
        if check.vague_ci95 is None
        else f" [{100 * check.vague_ci95[0]:.1f}, {100 * check.vague_ci95[1]:.1f}]"
    )
    row[VAGUE_COLUMN] = f"{100 * check.vague_rate:.1f}{interval} (n={check.vague_n})"


def _published_row(result: PublishedResult, cats: Sequence[tuple[str, str]], numeric: bool) -> dict[str, Any]:
    """A published figure in Table 1's columns: J per LOCOMO category where the source gives it."""
    row: dict[str, Any] = {"run": f"published: {result.system}", "method": result.system}

    def judge(value: float | None, std: float | None) -> dict[str, Any] | None:
        if value is None:
            return None
        runs = 2 if std is not None else 1  # fmt_judge shows a std only for several runs
        return {"mean": value / 100, "std": None if std is None else std / 100, "runs": runs}

    for key, label in [*cats, OVERALL]:
        value = result.j if key == "overall" else result.categories.get(key)
        std = result.j_std if key == "overall" else None
        figure = judge(value, std)
        if figure is not None:
            _judge_cells(row, f"{label} J", figure, numeric)
    row["judge"] = f"{result.judge}; answers by {result.answer_model}"
    when = f", {result.date}" if result.date else ""
    row[ROW_KIND] = f"{MARK} ({result.source}{when}; {result.how_known}; category 5 {result.category5})"
    return row


def _interval_cells(row: dict[str, Any], label: str, interval: Any, numeric: bool) -> None:
    """A 95% interval as one '[lo, hi]' cell, or (numeric) as separate low and high columns in %."""
    if not numeric:
        row[label] = fmt_interval(interval)
        return
    lo, hi = interval if isinstance(interval, (list, tuple)) and len(interval) == 2 else (None, None)
    row[f"{label} low"] = _pct_number(lo)
    row[f"{label} high"] = _pct_number(hi)


def _memory_mean(tokens: Any) -> float | None:
    mean = _num(_get(tokens, "memory_store_mean"))
    per_conv = _get(tokens, "memory_store_per_conversation")
    if mean is None and isinstance(per_conv, dict):
        values = [v for v in map(_num, per_conv.values()) if v is not None]
        mean = sum(values) / len(values) if values else None
    return mean


def table2(runs: Sequence[RunSummary], *, numeric: bool = False) -> pd.DataFrame:
    """One row per run: run name, method, context tokens and items, empty
    contexts (n/answered), memory tokens, search and total latency p50/p95 (s), overall J (mean ± std, %).
    `numeric`: numbers, as for `table1`."""
    tokens = _num if numeric else _fmt_tokens
    seconds = _num if numeric else _fmt_seconds
    rows = _lead_columns(runs)
    for row, run in zip(rows, runs):
        m = run.metrics
        row["context tokens (mean)"] = tokens(_get(m.tokens, "context_mean"))
        items = _num(_get(m.tokens, "context_items_mean"))
        row["context items (mean)"] = items if numeric else ("n/a" if items is None else f"{items:.1f}")
        empty, answered = _num(_get(m.empty_contexts, "n")), _num(_get(m.empty_contexts, "of"))
        row["empty contexts"] = (
            empty
            if numeric
            else ("n/a" if empty is None or answered is None else f"{empty:.0f}/{answered:.0f}")
        )
        row["memory tokens (mean / conversation)"] = tokens(_memory_mean(m.tokens))
        isolated = m.latency_isolated
        for stage in ("search", "total"):
            for q in ("p50", "p95"):
                if isolated or numeric:
                    row[f"{stage} {q} (s)"] = seconds(table2_latency(m, stage, q))
                else:
                    row[f"{stage} {q} (s)"] = (
                        seconds(_get(m.latency, stage, q)) if numeric else _fmt_latency(m.latency, stage, q)
                    )
        if any(r.metrics.latency_isolated for r in runs):
            # Only when some run has the pass: tables of earlier runs keep their columns.
            row["latency"] = _latency_mode(isolated, m.latency)
        _judge_cells(row, "overall J (%)", m.overall.judge, numeric)
    return pd.DataFrame(rows)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters (underscores included); '±' becomes $\\pm$."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(df: pd.DataFrame, caption: str | None = None, label: str | None = None) -> str:
    """A booktabs table (needs \\usepackage{booktabs}); every cell and header escaped."""
    spec = "l" * min(len(df.columns), 1) + "r" * max(len(df.columns) - 1, 0)
    lines = ["\\begin{table}[ht]", "\\centering", "\\small"]
    if caption:
        lines.append(f"\\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(f"\\label{{{label}}}")
    lines += [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    lines.append(" & ".join(latex_escape(str(c)) for c in df.columns) + " \\\\")
    lines.append("\\midrule")
    for row in df.itertuples(index=False):
        lines.append(" & ".join(latex_escape(str(v)) for v in row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)


def to_markdown(df: pd.DataFrame, title: str | None = None) -> str:
    """A pipe table, preceded by a bold title line when given."""
    align = (
        ["left" if not any(ch.isdigit() for ch in str(df[c].iloc[0])) else "right" for c in df.columns]
        if len(df)
        else None
    )
    body = tabulate(
        df.values.tolist(), headers=list(df.columns), tablefmt="pipe", disable_numparse=True, colalign=align
    )
    return f"**{title}**\n\n{body}\n" if title else f"{body}\n"


def write_table(
    df: pd.DataFrame,
    out_dir: str | Path,
    stem: str,
    title: str | None = None,
    *,
    numbers: pd.DataFrame | None = None,
) -> list[Path]:
    """Write `stem`.md (pipe table), .csv and .tex to out_dir; return the paths written. The CSV holds
    `numbers` (the same table with `numeric=True`: plain numbers, J mean and std apart) when given."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.md", out / f"{stem}.csv", out / f"{stem}.tex"]
    paths[0].write_text(to_markdown(df, title), encoding="utf-8")
    (df if numbers is None else numbers).to_csv(paths[1], index=False)
    paths[2].write_text(to_latex(df, caption=title, label=f"tab:{stem}"), encoding="utf-8")
    return paths
