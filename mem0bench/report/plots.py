"""The report's figures: J per category (grouped bars) and J against total p95 latency.

Uses matplotlib's object-oriented API (Figure + Agg canvas), never pyplot's global state, so it is safe
in headless runs and does not change the caller's backend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, PercentFormatter

from mem0bench.report.collect import RunSummary, unique_labels, varying_hyperparameters
from mem0bench.report.tables import Labels, categories_in

__all__ = ["plot_judge_by_category", "plot_judge_vs_latency"]

MAX_POINT_LABELS = 8


def _judge(scores: Any) -> tuple[float, float]:
    """(mean, std) of J in %, NaN where missing."""
    judge = scores.get("judge") if isinstance(scores, dict) else None
    if not isinstance(judge, dict):
        return math.nan, math.nan
    mean, std = judge.get("mean"), judge.get("std")
    to_pct = lambda v: 100 * float(v) if isinstance(v, (int, float)) else math.nan  # noqa: E731
    return to_pct(mean), to_pct(std)


def _save(fig: Figure, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    fig.savefig(out, dpi=150, bbox_inches="tight")
    return out


def plot_judge_by_category(runs: Sequence[RunSummary], path: str | Path, labels: Labels = "official") -> Path:
    """Grouped bars: one group per category (and overall), one bar per run; J mean with std error bars."""
    cats = [*categories_in(runs, labels), ("overall", "overall")]
    names = unique_labels(runs, varying_hyperparameters(runs))
    n_runs, n_cats = len(runs), len(cats)
    width = 0.8 / max(n_runs, 1)
    x = np.arange(n_cats)
    fig = Figure(figsize=(min(14.0, max(8.0, 1.1 * n_cats + 0.35 * n_cats * n_runs)), 5.2))
    ax = fig.add_subplot()
    colors = _colors(n_runs)
    for i, (run, name) in enumerate(zip(runs, names)):
        stats = [
            _judge(
                run.metrics.get("overall")
                if key == "overall"
                else (run.metrics.get("categories") or {}).get(key)
            )
            for key, _ in cats
        ]
        means = [m for m, _ in stats]
        stds = [0.0 if math.isnan(s) else s for _, s in stats]
        ax.bar(
            x - 0.4 + width * (i + 0.5),
            means,
            width * 0.92,
            yerr=stds,
            capsize=3 if n_runs < 8 else 0,
            label=name,
            color=colors[i],
            error_kw={"elinewidth": 1, "ecolor": "0.25"},
        )
        for j, m in enumerate(means):  # no successful judgement: say so rather than leave a silent gap
            if math.isnan(m):
                ax.text(
                    x[j] - 0.4 + width * (i + 0.5), 1, "n/a", ha="center", va="bottom", fontsize="x-small"
                )
    ax.set_xticks(x, [label.replace(" (", "\n(") for _, label in cats])
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    ax.set_ylabel("LLM-as-judge J (% correct, mean ± std)")
    ax.set_xlabel("question category" + (" (Mem0 paper's labels)" if labels == "paper" else " (LOCOMO)"))
    ax.set_title("LLM-as-judge score by question category")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ncol = 1 if n_runs <= 4 else 2 if n_runs <= 8 else 3
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16 if labels == "official" else -0.22),
        ncol=ncol,
        frameon=False,
        fontsize="small",
        title="run",
    )
    return _save(fig, path)


def plot_judge_vs_latency(runs: Sequence[RunSummary], path: str | Path) -> Path:
    """Overall J (mean ± std, %) against total p95 latency (s); runs without latency are skipped and
    listed in the legend."""
    names = unique_labels(runs, varying_hyperparameters(runs))
    fig = Figure(figsize=(8.0, 5.6))
    ax = fig.add_subplot()
    colors = _colors(len(runs))
    points: list[tuple[float, float, str, Any]] = []
    skipped: list[str] = []
    for i, (run, name) in enumerate(zip(runs, names)):
        latency = (run.metrics.get("latency_s") or {}).get("total") or {}
        p95 = latency.get("p95") if isinstance(latency, dict) else None
        mean, std = _judge(run.metrics.get("overall"))
        if not isinstance(p95, (int, float)) or p95 <= 0 or math.isnan(mean):
            skipped.append(name)
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
        points.append((float(p95), mean, name, colors[i]))
    if points:
        _label_points(ax, points)
    else:
        ax.text(0.5, 0.5, "no run has both J and latency", ha="center", va="center", transform=ax.transAxes)
    if skipped:
        ax.plot([], [], " ", label="skipped (no latency or J): " + ", ".join(skipped))
    ax.set_ylim(0, 100)
    ax.yaxis.set_major_formatter(PercentFormatter(decimals=0))
    ax.set_ylabel("overall LLM-as-judge J (% correct, mean ± std)")
    log_note = ", log scale" if ax.get_xscale() == "log" else ""
    ax.set_xlabel(f"total latency per question, p95 (s{log_note})")
    ax.set_title("Answer quality vs latency")
    ax.grid(alpha=0.3)
    ncol = 1 if len(runs) <= 4 else 2
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=ncol, frameon=False, fontsize="small")
    return _save(fig, path)


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
        width, height = 4.6 * len(name) * scale, 9 * scale
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
