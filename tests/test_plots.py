"""The report's figures, checked on the matplotlib objects: n per category, missing categories marked as
such (not as an empty slot that reads as 0%), and legends that fit when runs carry many hyperparameters."""

from __future__ import annotations

import copy
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg

from mem0bench.report.collect import RunSummary
from mem0bench.report.plots import (
    judge_by_category_figure,
    judge_vs_latency_figure,
    plot_judge_by_category,
    plot_judge_vs_latency,
)
from mem0bench.report.tables import settings_table
from mem0bench.rundir.schema import Metrics
from tests.test_report import make_metrics

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(name: str, metrics: dict, config: dict | None = None) -> RunSummary:
    typed = Metrics.from_dict(metrics, name)
    return RunSummary(path=Path("/runs") / name, method=typed.method, metrics=typed, config=config or {})


def _two_runs() -> list[RunSummary]:
    full = make_metrics("mem0", 0.6)
    partial = copy.deepcopy(make_metrics("rag", 0.5))
    del partial["categories"]["temporal"]  # no temporal question in this run
    partial["categories"]["open_domain"]["judge"]["mean"] = 0.0  # a real 0%
    partial["categories"]["single_hop"]["n"] = 12
    partial["n_questions"] = 32
    return [_run("a", full), _run("b", partial)]


def _texts(ax) -> list[tuple[float, str]]:
    return [(t.get_position()[0], t.get_text()) for t in ax.texts]


def test_category_plot_shows_n_and_marks_a_missing_category():
    fig = judge_by_category_figure(_two_runs())
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == [
        "multi_hop\nn=10",
        "temporal\nn=0-10",
        "open_domain\nn=10",
        "single_hop\nn=10-12",
        "overall\nn=32-40",
    ]
    assert "n = questions" in ax.get_xlabel()
    texts = _texts(ax)
    # Run b (the second bar of each group) has no temporal question: marked, at its own bar.
    missing = [x for x, text in texts if text == "no questions"]
    assert len(missing) == 1 and 1.0 < missing[0] < 1.4
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1 and hatched[0].get_height() == 100
    # Its open_domain J of exactly 0% is written out, so it is not mistaken for a missing bar.
    zero = [x for x, text in texts if text == "0%"]
    assert len(zero) == 1 and 2.0 < zero[0] < 2.4
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mem0", "rag"]


def test_a_category_without_judge_is_marked_no_j():
    metrics = copy.deepcopy(make_metrics("mem0", 0.6))
    metrics["categories"]["temporal"]["judge"] = None  # questions, but no judgement stood
    ax = judge_by_category_figure([_run("a", metrics)]).axes[0]
    assert [text for _, text in _texts(ax)] == ["no J"]


def _many_hyperparameter_runs() -> list[RunSummary]:
    runs = []
    for i in range(6):
        config = {
            "method.name": "mem0g",
            "method.threshold": round(0.6 + 0.05 * i, 2),
            "method.triplet_threshold": round(0.3 + 0.01 * i, 2),
            "method.relations_top_k": 10 + i,
            "method.conflict_candidates": 5 + i,
            "method.summary_every": 20 + i,
            "method.top_k": 30 - i,
            "llm.model": f"gpt-4o-mini-2024-07-18-variant-{i}",
            "embedder.model": f"text-embedding-3-small-{i}",
        }
        runs.append(_run(f"run{i}", make_metrics("mem0g", 0.5 + 0.03 * i), config))
    return runs


def test_legends_with_many_hyperparameters_use_short_names_inside_the_figure():
    """Six runs whose labels would list eight hyperparameters each: the legends name them by method and
    number (the settings table maps the names to the hyperparameters) and stay inside the figure."""
    runs = _many_hyperparameter_runs()
    names = [f"mem0g #{i}" for i in range(1, 7)]
    for fig in (judge_by_category_figure(runs), judge_vs_latency_figure(runs)):
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        legend = fig.axes[0].get_legend()
        box = legend.get_window_extent(canvas.get_renderer())
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox)
        assert [t.get_text() for t in legend.get_texts()] == names
    # Short names fit beside the points: each point that has room carries its run's name.
    ax = judge_vs_latency_figure(runs).axes[0]
    assert ax.texts and {t.get_text() for t in ax.texts} <= set(names)
    assert settings_table(runs)["summary_every"].tolist() == [str(20 + i) for i in range(6)]


def test_plots_are_written(tmp_path):
    runs = _two_runs()
    for path in (
        plot_judge_by_category(runs, tmp_path / "by_category.png"),
        plot_judge_vs_latency(_many_hyperparameter_runs(), tmp_path / "vs_latency.png"),
        plot_judge_by_category(_many_hyperparameter_runs(), tmp_path / "many.png"),
    ):
        assert path.read_bytes()[:8] == PNG_MAGIC


def _plotted(fig) -> dict[str, float]:
    """Each plotted run's label -> its x (latency) in the latency figure."""
    ax = fig.axes[0]
    return {
        c.get_label(): float(c.lines[0].get_xdata()[0])
        for c in ax.containers
        if not c.get_label().startswith("_")
    }


def test_the_latency_plot_places_each_run_where_table_2_does():
    """Table 2 gives the isolated pass's latency where a run has one; the plot uses the same figure, and a
    run whose answers came from the cache (no inline latency) is placed by its isolated pass."""
    from mem0bench.report.tables import table2

    inline_and_isolated = make_metrics("mem0g", 0.6)
    inline_and_isolated["latency_s"]["total"]["p95"] = 0.64
    isolated = {"mode": "isolated", "n": 40, "n_total": 40}
    inline_and_isolated["latency_isolated_s"] = {
        **isolated, "search": {"p50": 0.01, "p95": 0.02}, "total": {"p50": 0.02, "p95": 0.029},
    }  # fmt: skip
    cached = make_metrics("mem0", 0.5)
    cached["latency_s"] = {"search": {"p50": None, "p95": None}, "total": {"p50": None, "p95": None},
                           "n_uncached": 0, "n_cached": 40}  # fmt: skip
    cached["latency_isolated_s"] = {
        **isolated, "search": {"p50": 0.03, "p95": 0.05}, "total": {"p50": 0.9, "p95": 1.25},
    }  # fmt: skip
    inline_only = make_metrics("rag", 0.4)
    runs = [_run("g", inline_and_isolated), _run("m", cached), _run("r", inline_only)]

    table = table2(runs, numeric=True)
    assert table["total p95 (s)"].tolist() == [0.029, 1.25, 1.9]
    assert sorted(_plotted(judge_vs_latency_figure(runs)).values()) == [0.029, 1.25, 1.9]
    # Answered from the cache without an isolated pass: no latency was measured, and the legend says why.
    no_pass = copy.deepcopy(cached)
    del no_pass["latency_isolated_s"]
    legend = judge_vs_latency_figure([*runs, _run("c", no_pass)]).axes[0].get_legend()
    texts = [" ".join(t.get_text().split()) for t in legend.get_texts()]
    assert "skipped (answers from the cache, no isolated pass): mem0 [c]" in texts, texts


def test_a_longmemeval_run_is_labelled_with_its_suite_not_locomo():
    """report.html shows the category figure and Table 1's caption: a LongMemEval run's categories are
    LongMemEval's, and neither says LOCOMO."""
    from mem0bench.report.tables import table1_caption

    metrics = make_metrics("rag", 0.5)
    lme = ("single_session_user", "multi_session", "temporal_reasoning", "knowledge_update")
    metrics["categories"] = dict(zip(lme, metrics["categories"].values()))
    runs = [_run("lme", metrics, {"dataset.suite": "longmemeval_s", "method.name": "rag"})]
    xlabel = judge_by_category_figure(runs).axes[0].get_xlabel()
    assert "LongMemEval_S" in xlabel and "LOCOMO" not in xlabel, xlabel
    caption = table1_caption(runs)
    assert "LongMemEval_S's categories" in caption and "LOCOMO" not in caption, caption
    # LOCOMO runs (no dataset.suite in older runs' configs) keep their label.
    assert "(LOCOMO)" in judge_by_category_figure(_two_runs()).axes[0].get_xlabel()
    assert "LOCOMO's categories" in table1_caption(_two_runs())
