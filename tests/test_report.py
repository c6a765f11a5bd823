"""The report: run discovery, varying hyperparameters, Table 1/2 formatting, paper labels, files, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mem0bench.cli.report import report_main
from mem0bench.report import (
    ReportError,
    find_results,
    load_run,
    load_runs,
    plot_judge_by_category,
    plot_judge_vs_latency,
    table1,
    table2,
    varying_hyperparameters,
    write_table,
)
from mem0bench.rundir.schema import SCHEMA_VERSION

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CATS = ("multi_hop", "temporal", "open_domain", "single_hop")


def judge(mean: float, std: float = 0.0123, runs: int = 10) -> dict[str, Any]:
    return {
        "mean": mean,
        "std": std,
        "runs": runs,
        "per_run": [mean] * runs,
        "majority": mean,
        "kappa": 0.9,
        "failures": 0,
    }


def intervals(j: float) -> dict[str, Any]:
    """stderr 0.02 on every score; J's 95% interval j +- 0.04."""
    names = ("f1", "bleu1", "locomo_f1", "judge")
    return {"stderr": dict.fromkeys(names, 0.02), "ci95": {n: [j - 0.04, j + 0.04] for n in names}}


def make_metrics(method: str, base: float, latency: bool = True) -> dict[str, Any]:
    """Per category J = base + 0.01 * (category index); F1 = J - 0.2; BLEU-1 = J - 0.3."""
    cats = {}
    for i, cat in enumerate(CATS):
        j = base + 0.01 * i
        cats[cat] = {"n": 10, "f1": j - 0.2, "bleu1": j - 0.3, "locomo_f1": j - 0.1, "judge": judge(j)}
        cats[cat].update(intervals(j))
    return {
        "schema_version": SCHEMA_VERSION,
        "method": method,
        "n_questions": 40,
        "overall": {
            "f1": base - 0.2,
            "bleu1": base - 0.3,
            "locomo_f1": base - 0.1,
            "judge": judge(base),
            **intervals(base),
        },  # fmt: skip
        "categories": cats,
        "latency_s": {"search": {"p50": 0.2555, "p95": 0.699}, "total": {"p50": 0.8, "p95": 1.5 + base}}
        if latency
        else {"search": None, "total": None},
        "tokens": {
            "context_mean": 256.4,
            "memory_store_per_conversation": None,
            "memory_store_mean": None,
            "llm": {"answer": {"prompt": 100, "completion": 10}},
        },
        "cost_usd": 0.01,
        "evidence_recall": 0.5,
        "failures": {},
    }


def make_config(method: dict[str, Any], run_dir: Path, seed: int) -> dict[str, Any]:
    return {
        "method": method,
        "llm": {"model": "gpt-4o-mini", "temperature": 0.0, "seed": seed, "base_url": None},
        "embedder": {"backend": "openai", "model": "text-embedding-3-small", "batch_size": 256},
        "judge": {"model": "gpt-4o-mini", "runs": 10, "prompt": "mem0"},
        "dataset": {"path": "../shared/data/locomo10.json"},
        "run_dir": str(run_dir),
        "run_id": run_dir.name,
        "seed": seed,
    }


def write_run(
    folder: Path, metrics: dict[str, Any], config: dict[str, Any], status: str = "complete"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (folder / "run.json").write_text(json.dumps({"run_id": folder.name, "status": status}), encoding="utf-8")
    return folder


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """A 4-job Hydra multirun of rag chunk_size x k (folders 0..3 plus multirun.yaml)."""
    root = tmp_path / "multirun" / "2025-05-01" / "12-00-00"
    job = 0
    for chunk_size in (256, 512):
        for k in (1, 2):
            method = {
                "_target_": "mem0bench.systems.baselines.rag.RAG",
                "name": "rag",
                "chunk_size": chunk_size,
                "k": k,
                "state_dir": f"/tmp/state/{job}",
            }
            base = 0.5 + 0.05 * job
            write_run(root / str(job), make_metrics("rag", base), make_config(method, root / str(job), job))
            job += 1
    (root / "multirun.yaml").write_text("hydra: {}\n", encoding="utf-8")
    return tmp_path / "multirun"


# ------------------------------------------------------------------ collect


def test_find_and_varying_hyperparameters(sweep: Path) -> None:
    dirs = find_results([sweep])
    assert [d.name for d in dirs] == ["0", "1", "2", "3"]
    assert find_results([dirs[2], sweep]) == [dirs[2], dirs[0], dirs[1], dirs[3]]  # argument order, no dups
    assert find_results([dirs[1] / "metrics.json"]) == [dirs[1]]
    runs = load_runs([sweep])
    assert varying_hyperparameters(runs) == ["method.chunk_size", "method.k"]
    run = load_run(dirs[0])
    assert run.method == "rag" and run.status == "complete" and run.config["method.chunk_size"] == 256


def test_mixed_methods_vary_by_presence(tmp_path: Path) -> None:
    write_run(
        tmp_path / "a",
        make_metrics("mem0", 0.66),
        make_config({"name": "mem0", "m": 10, "s": 10, "top_k": 30}, tmp_path / "a", 1),
    )
    write_run(
        tmp_path / "b",
        make_metrics("full_context", 0.72, latency=False),
        make_config({"name": "full_context"}, tmp_path / "b", 2),
    )
    runs = load_runs([tmp_path])
    assert varying_hyperparameters(runs) == ["method.m", "method.s", "method.top_k"]
    df = table1(runs)
    assert list(df["m"]) == ["10", "-"]


def test_missing_path_and_empty_dir_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such file or directory"):
        find_results([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="no run directory found"):
        find_results([tmp_path / "empty"])


def test_unreadable_metrics_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "run"
    bad.mkdir()
    (bad / "metrics.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ReportError) as info:
        load_run(bad)
    assert str(bad / "metrics.json") in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------ tables


def test_table1_rows_and_formatting(sweep: Path) -> None:
    runs = load_runs([sweep])
    df = table1(runs)
    assert len(df) == 4
    assert list(df.columns[:4]) == ["run", "method", "chunk_size", "k"]
    assert len(set(df["run"])) == 4  # rows a reader can tell apart
    assert list(df["chunk_size"]) == ["256", "256", "512", "512"] and list(df["k"]) == ["1", "2", "1", "2"]
    cat_cols = [c.rsplit(" ", 1)[0] for c in df.columns[4:-1:4]]
    assert cat_cols == ["multi_hop", "temporal", "open_domain", "single_hop", "overall"]
    row = df.iloc[1]  # base 0.55
    assert row["multi_hop J"] == "55.00 ± 1.23"
    assert row["temporal J"] == "56.00 ± 1.23"
    assert row["multi_hop F1"] == "35.00" and row["multi_hop BLEU-1"] == "25.00"
    assert row["overall J"] == "55.00 ± 1.23"
    assert row["overall J 95% CI"] == "[51.00, 59.00]" and row["temporal J 95% CI"] == "[52.00, 60.00]"
    assert "adversarial J" not in df.columns


def test_table1_adversarial_and_missing_values(tmp_path: Path) -> None:
    metrics = make_metrics("mem0", 0.6)
    metrics["categories"]["adversarial"] = {
        "n": 5,
        "f1": None,
        "bleu1": None,
        "locomo_f1": 0.8,
        "judge": judge(0.7, std=0.0, runs=1),
        **intervals(0.7),
    }
    metrics["categories"]["temporal"]["judge"] = None
    write_run(tmp_path / "r", metrics, make_config({"name": "mem0"}, tmp_path / "r", 0))
    df = table1(load_runs([tmp_path]))
    assert list(df.columns[-9:-5]) == [
        "adversarial F1",
        "adversarial BLEU-1",
        "adversarial J",
        "adversarial J 95% CI",
    ]
    assert df.iloc[0]["adversarial J"] == "70.00"  # one judge run: no spread to show
    assert df.iloc[0]["adversarial F1"] == "-" and df.iloc[0]["temporal J"] == "-"


def test_paper_labels_reorder(sweep: Path) -> None:
    runs = load_runs([sweep])
    official = table1(runs).iloc[0]
    paper = table1(runs, labels="paper")
    j_cols = [c for c in paper.columns if c.endswith(" J")]
    assert j_cols == [
        "single-hop (LOCOMO cat 1) J",
        "multi-hop (LOCOMO cat 3) J",
        "open-domain (LOCOMO cat 4) J",
        "temporal (LOCOMO cat 2) J",
        "overall J",
    ]
    row = paper.iloc[0]
    assert row["single-hop (LOCOMO cat 1) J"] == official["multi_hop J"]
    assert row["multi-hop (LOCOMO cat 3) J"] == official["open_domain J"]
    assert row["open-domain (LOCOMO cat 4) J"] == official["single_hop J"]
    assert row["temporal (LOCOMO cat 2) F1"] == official["temporal F1"]


def test_table2(sweep: Path) -> None:
    df = table2(load_runs([sweep]))
    assert len(df) == 4
    row = df.iloc[0]
    assert row["context tokens (mean)"] == "256" and row["memory tokens (mean / conversation)"] == "-"
    assert row["search p50 (s)"] == "0.256" and row["search p95 (s)"] == "0.699"
    assert row["total p50 (s)"] == "0.800" and row["total p95 (s)"] == "2.000"
    assert row["overall J (%)"] == "50.00 ± 1.23"


def test_write_table_formats(sweep: Path, tmp_path: Path) -> None:
    paths = write_table(table1(load_runs([sweep])), tmp_path / "out", "table1", title="T 1 in %")
    assert [p.name for p in paths] == ["table1.md", "table1.csv", "table1.tex"]
    md, csv, tex = (p.read_text(encoding="utf-8") for p in paths)
    assert md.startswith("**T 1 in %**") and "| method" in md and "55.00 ± 1.23" in md
    assert csv.splitlines()[0].startswith("run,method,chunk_size,k,multi_hop F1")
    assert r"chunk\_size" in tex and r"multi\_hop" in tex and r"$\pm$" in tex and r"T 1 in \%" in tex
    assert "chunk_size" not in tex.replace(r"chunk\_size", "")


# ------------------------------------------------------------------ plots and CLI


def test_plots_are_pngs(sweep: Path, tmp_path: Path) -> None:
    runs = load_runs([sweep])
    for path in (
        plot_judge_by_category(runs, tmp_path / "a.png"),
        plot_judge_vs_latency(runs, tmp_path / "b.png"),
    ):
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000


def test_cli_writes_everything(sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # one run without latency, not complete
    extra = write_run(
        tmp_path / "extra" / "fc",
        make_metrics("full_context", 0.73, latency=False),
        make_config({"name": "full_context"}, tmp_path / "fc", 9),
        status="running",
    )
    out = tmp_path / "report"
    assert report_main([str(sweep), str(extra), "--out", str(out), "--labels", "paper"]) == 0
    captured = capsys.readouterr()
    names = {"table1", "table2", "table1_paper_labels"}
    for stem in names:
        for ext in ("md", "csv", "tex"):
            assert (out / f"{stem}.{ext}").is_file()
    for png in ("judge_by_category.png", "judge_vs_latency.png"):
        assert (out / png).read_bytes().startswith(PNG_MAGIC)
        assert str(out / png) in captured.out
    assert "| method" in captured.out and "NOT LOCOMO's" in captured.out
    assert "status is 'running'" in captured.err
    assert (
        (out / "table1_paper_labels.md").read_text(encoding="utf-8").startswith("**Table 1 in the Mem0 paper")
    )


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main([str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "missing" in err
    assert report_main([str(tmp_path)]) == 2  # --out is required
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--out" in err and "Traceback" not in err
