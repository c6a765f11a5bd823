"""The report's figures: J per category (grouped bars) and J against total p95 latency.

Uses matplotlib's object-oriented API (Figure + Agg canvas), never pyplot's global state, so it is safe
in headless runs and does not change the caller's backend.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

from mem0bench.report.collect import RunSummary, short_names
from mem0bench.report.tables import Labels, categories_in, suite_title, table2_latency
from mem0bench.rundir.schema import Scores

__all__ = [
    "judge_by_category_figure",
    "judge_vs_latency_figure",
    "legend_labels",
    "plot_judge_by_category",
    "plot_judge_vs_latency",
]

MAX_POINT_LABELS = 8
LEGEND_WRAP = 42
"""Characters per legend line: long hyperparameter lists wrap instead of running off the figure."""
CI_CAPTION = (
    "bar: J, mean over judge runs; thin capped whisker: ± std over judge runs (population, ddof 0); "
    "wide grey band: 95% interval over questions (cluster bootstrap)"
)


def _judge(scores: Scores | None) -> tuple[float, float]:
    """(mean, std) of J in %, NaN where missing."""
    judge = scores.judge if scores is not None else None
    if not isinstance(judge, dict):
        return math.nan, math.nan
    mean, std = judge.get("mean"), judge.get("std")
    to_pct = lambda v: 100 * float(v) if isinstance(v, (int, float)) else math.nan  # noqa: E731
    return to_pct(mean), to_pct(std)


def _ci_errors(
    run: RunSummary, cats: Sequence[tuple[str, str]], means: Sequence[float]
) -> tuple[list[float], list[float]]:
    """Distances from each bar's mean to the ends of its 95% interval over questions (0 where missing)."""
    lows: list[float] = []
    highs: list[float] = []
    for (key, _), mean in zip(cats, means):
        block = run.metrics.scores(key)
        ci = (block.ci95 or {}).get("judge") if block is not None else None
        if not ci or math.isnan(mean) or None in ci:
            lows.append(0.0)
            highs.append(0.0)
            continue
        lows.append(max(0.0, mean - 100 * ci[0]))
        highs.append(max(0.0, 100 * ci[1] - mean))
    return lows, highs


def _save(fig: Figure, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(out, dpi=150, bbox_inches="tight")
    return out


def plot_judge_by_category(runs: Sequence[RunSummary], path: str | Path, labels: Labels = "official") -> Path:
    """Grouped bars: one group per category (and overall), one bar per run; J mean with std error bars."""
    return _save(judge_by_category_figure(runs, labels), path)


@dataclass(frozen=True)
class _Cell:
    """One bar: a run's J in one category, and how many questions it stands on."""

    mean: float
    std: float
    n: int | None
    """Questions in the category (None when the run's metrics do not say)."""

    @property
    def missing(self) -> bool:
        return self.n == 0 or math.isnan(self.mean)


def _cell(run: RunSummary, key: str) -> _Cell:
    """A run's J in one category, or overall (whose n is the run's question count); n 0 when the run has
    no question in the category."""
    scores = run.metrics.scores(key)
    mean, std = _judge(scores)
    if scores is None:
        return _Cell(mean, std, 0)
    return _Cell(mean, std, run.metrics.n_questions if key == "overall" else scores.n)


def _n_text(ns: Sequence[int | None]) -> str:
    """The n of a category across runs: 'n=282' when every run has the same, else the range."""
    known = sorted({n for n in ns if n is not None})  # 0 included: a run with none is part of the range
    if not known:
        return "n=?"
    return f"n={known[0]:,}" if len(known) == 1 else f"n={known[0]:,}-{known[-1]:,}"


def judge_by_category_figure(runs: Sequence[RunSummary], labels: Labels = "official") -> Figure:
    """The figure of `plot_judge_by_category`. Under each category its number of questions; a run with no
    question (or no J) in a category gets a hatched placeholder marked "no questions" (or "no J"), never an
    empty slot that reads as 0%; a J of exactly 0% is written out."""
    cats = [*categories_in(runs, labels), ("overall", "overall")]
    names = legend_labels(runs)
    n_runs, n_cats = len(runs), len(cats)
    width = 0.8 / max(n_runs, 1)
    x = np.arange(n_cats)
    fig = Figure(figsize=(min(14.0, max(8.0, 1.1 * n_cats + 0.35 * n_cats * n_runs)), 5.2))
    ax = fig.add_subplot()
    colors = _colors(n_runs)
    cells = [[_cell(run, key) for key, _ in cats] for run in runs]
    for i, (run, row, name) in enumerate(zip(runs, cells, names)):
        xs = x - 0.4 + width * (i + 0.5)
        means = [c.mean for c in row]
        stds = [0.0 if math.isnan(c.std) else c.std for c in row]
        ax.bar(
            xs,
            means,
            width * 0.92,
            yerr=stds,
            capsize=3 if n_runs < 8 else 0,
            label=name,
            color=colors[i],
            error_kw={"elinewidth": 1, "ecolor": "0.25"},
        )
        # The 95% interval over questions: a wide translucent grey band over the bar's top.
        lows, highs = _ci_errors(run, cats, means)
        ax.errorbar(
            xs, means, yerr=[lows, highs], fmt="none",
            ecolor="0.15", alpha=0.3, elinewidth=max(2.0, 60 * width), zorder=3,
        )  # fmt: skip
        for xpos, cell in zip(xs, row):
            if cell.missing:
                _mark_missing(ax, xpos, width * 0.92, colors[i], "no questions" if cell.n == 0 else "no J")
            elif cell.mean == 0:
                ax.text(xpos, 1, "0%", ha="center", va="bottom", fontsize="x-small", color=colors[i])
    ticks = [
        f"{label.replace(' (', chr(10) + '(')}\n{_n_text([row[j].n for row in cells])}"
        for j, (_, label) in enumerate(cats)
    ]
    ax.set_xticks(x, ticks)
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    ax.set_ylabel("LLM-as-judge J (% correct)")
    fig.text(0.5, 1.0, CI_CAPTION, ha="center", va="bottom", fontsize="small")
    suites = " and ".join(dict.fromkeys(suite_title(run) for run in runs)) or "LOCOMO"
    ax.set_xlabel(
        "question category"
        + (" (Mem0 paper's labels)" if labels == "paper" else f" ({suites})")
        + ", n = questions"
    )
    ax.set_title("LLM-as-judge score by question category")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    _legend_below(fig, ax, names, offset=0.2 if labels == "official" else 0.26, title="run")
    return fig


def _mark_missing(ax: Any, x: float, width: float, color: Any, text: str) -> None:
    """A hatched outline over the whole height and a vertical note: 'this run has nothing here'."""
    ax.bar(x, 100, width, fill=False, hatch="///", edgecolor=color, linewidth=0.6, alpha=0.45)
    ax.text(x, 50, text, rotation=90, ha="center", va="center", fontsize="x-small", color="0.2")


def legend_labels(runs: Sequence[RunSummary]) -> list[str]:
    """Each run's short name (the settings table maps it to the run's hyperparameters), wrapped so no
    line is long."""
    return [_wrap(name) for name in short_names(runs)]


def _wrap(label: str, width: int = LEGEND_WRAP) -> str:
    """'mem0g (a=1, b=2, ...)' on lines of at most `width` characters, broken between hyperparameters
    (a single value longer than that keeps a line of its own, whole)."""
    lines = textwrap.wrap(
        label, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )
    return "\n".join(lines) or label


def _legend_below(fig: Figure, ax: Any, names: Sequence[str], *, offset: float, title: str | None) -> None:
    """A legend under the axes with as many columns as fit the figure's width."""
    if not names:
        return
    longest = max(len(line) for name in names for line in name.split("\n"))
    chars_per_inch = 13.0  # 'small' text (about 8 pt)
    ncol = max(1, min(len(names), int(fig.get_figwidth() * chars_per_inch // (longest + 6))))
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -offset),
        ncol=ncol,
        frameon=False,
        fontsize="small",
        title=title,
    )


def plot_judge_vs_latency(runs: Sequence[RunSummary], path: str | Path) -> Path:
    """Overall J (mean ± std, %) against total p95 latency (s), the figure Table 2 shows (the isolated
    pass's where a run has one); runs without latency are skipped and listed in the legend."""
    return _save(judge_vs_latency_figure(runs), path)


def judge_vs_latency_figure(runs: Sequence[RunSummary]) -> Figure:
    """The figure of `plot_judge_vs_latency`. Points are labelled with the run's name, or, when names run
    over several lines, with a number that the legend repeats ("3: mem0g (...)")."""
    names = legend_labels(runs)
    numbered = any("\n" in name for name in names)
    tags = [f"{i + 1}" if numbered else name for i, name in enumerate(names)]
    if numbered:
        names = [f"{i + 1}: {name}" for i, name in enumerate(names)]
    fig = Figure(figsize=(8.0, 5.6))
    ax = fig.add_subplot()
    colors = _colors(len(runs))
    points: list[tuple[float, float, str, Any]] = []
    skipped: list[str] = []
    cached: list[str] = []  # every answer from the cache and no isolated pass: no latency was measured
    for i, (run, name) in enumerate(zip(runs, names)):
        # Table 2's figure: a run answered from the cache has one when its isolated pass ran.
        p95 = table2_latency(run.metrics, "total", "p95")
        mean, std = _judge(run.metrics.overall)
        if p95 is None or p95 <= 0 or math.isnan(mean):
            latency = run.metrics.latency
            from_cache = latency.get("n_uncached") == 0 and bool(latency.get("n_cached"))
            (cached if from_cache and not math.isnan(mean) else skipped).append(name)
            continue
        ax.errorbar(
            p95,
            mean,
            yerr=0 if math.isnan(std) else std,
            fmt="o",
            ms=7,
            capsize=3,
            color=colors[i],
            label=name,
        )
        (low,), (high,) = _ci_errors(run, [("overall", "overall")], [mean])
        ax.errorbar(p95, mean, yerr=[[low], [high]], fmt="none", ecolor="0.15", alpha=0.3, elinewidth=6)
        points.append((float(p95), mean, tags[i], colors[i]))
    if points:
        _label_points(ax, points)
    else:
        ax.text(0.5, 0.5, "no run has both J and latency", ha="center", va="center", transform=ax.transAxes)
    for names_left, why in (
        (cached, "answers from the cache, no isolated pass"),
        (skipped, "no latency or J"),
    ):
        if names_left:
            flat = ", ".join(" ".join(name.split()) for name in names_left)
            ax.plot([], [], " ", label=_wrap(f"skipped ({why}): " + flat))
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    ax.set_ylabel("overall LLM-as-judge J (% correct)")
    fig.text(0.5, 1.0, CI_CAPTION.replace("bar:", "point:"), ha="center", va="bottom", fontsize="small")
    log_note = ", log scale" if ax.get_xscale() == "log" else ""
    ax.set_xlabel(
        f"total latency per question, p95 (s{log_note}; Table 2's: the isolated pass where there is one)"
    )
    ax.set_title("Answer quality vs latency")
    ax.grid(alpha=0.3)
    _legend_below(fig, ax, ax.get_legend_handles_labels()[1], offset=0.13,
                  title=None)  # fmt: skip
    return fig


def _label_points(ax: Any, points: Sequence[tuple[float, float, str, Any]]) -> None:
    """Set a padded x range (log when latencies span > 8x) and label each point in its colour, trying
    offsets until the label overlaps no earlier label or point (else leaving it to the legend); labels
    of points in the right half go to their left so they stay inside the axes. Crowded plots (more than
    MAX_POINT_LABELS points) rely on the legend alone."""
    xs = [p[0] for p in points]
    lo, hi = min(xs), max(xs)
    if hi / lo > 8:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.6, hi * 1.6)
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        pad = 0.15 * (hi - lo) if hi > lo else 0.5 * hi
        ax.set_xlim(max(0.0, lo - pad), hi + pad)
    ax.set_ylim(0, 100)  # transforms below need the final limits
    if len(points) > MAX_POINT_LABELS:
        return
    scale = ax.figure.dpi / 72.0  # display pixels per typographic point
    ordered = sorted(points, key=lambda p: (p[0], -p[1]))
    dots = [ax.transData.transform((x, y)) for x, y, _, _ in ordered]
    placed = [(px - 6, py - 6, px + 6, py + 6) for px, py in dots]
    middle = ax.bbox.x0 + 0.5 * ax.bbox.width
    for (x, y, name, color), (px, py) in zip(ordered, dots):
        right = px > middle
        dx = -8 if right else 8
        rows = name.split("\n")
        width, height = 4.6 * max(map(len, rows)) * scale, 9 * len(rows) * scale
        for dy in (6, -14, 18, -26, 30, -38):
            x0 = px + dx * scale - (width if right else 0)
            box = (x0, py + dy * scale, x0 + width, py + dy * scale + height)
            if not any(_overlap(box, other) for other in placed):
                break
        else:
            continue  # no free spot: the legend still names the point
        placed.append(box)
        leader = {"arrowstyle": "-", "color": color, "lw": 0.6, "shrinkA": 0, "shrinkB": 4}
        ax.annotate(
            name,
            (x, y),
            xytext=(dx, dy),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize="x-small",
            color=color,
            arrowprops=leader if abs(dy) > 14 else None,
        )


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]
