"""Bring your own suite: examples/pantry_suite, copied out of the checkout, runs end to end from its own
folder against the stand-in; its categories are its own (ids, names, suite), never filed under another
suite's, and the core names none of them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.e2e import FAST, REPO, TEST_KEY, cli_env, read_jsonl
from devtools.standin.server import StandinServer
from mem0bench.data.model import Category
from mem0bench.suites import CATEGORIES, SUITES, all_categories, suite_of
from mem0bench.suites.base import register_categories

PANTRY = REPO / "examples" / "pantry_suite"


def _mem0bench(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mem0bench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_the_example_suite_runs_from_a_copy_outside_the_checkout(tmp_path: Path) -> None:
    folder = tmp_path / "my_suite"
    shutil.copytree(PANTRY, folder)
    run_dir = tmp_path / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        env["PYTHONPATH"] = str(REPO)  # mem0bench itself; the suite module is found in the run's folder
        argv = ["run", "--config-dir", ".", "dataset=pantry", "+exp=rag", "judge.runs=1",
                f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = _mem0bench(argv, folder, env)
        assert result.returncode == 0, result.stderr[-3000:]
        rejudged = _mem0bench(["judge", str(run_dir)], folder, env)
        assert rejudged.returncode == 0, rejudged.stderr[-3000:]
        report = _mem0bench(["report", str(run_dir), "--out", str(tmp_path / "report")], folder, env)
        assert report.returncode == 0, report.stderr[-3000:]
        elsewhere = _mem0bench(["report", str(run_dir), "--out", str(tmp_path / "report2")], tmp_path, env)
        assert elsewhere.returncode == 0, elsewhere.stderr[-3000:]
        stats = _mem0bench(["data", "stats", "--module", "pantry_suite", "--suite", "pantry", "--path",
                            "pantry.json"], folder, env)  # fmt: skip
        assert stats.returncode == 0, stats.stderr[-3000:]
    # `data stats`: the suite's own two categories beside the release's counts, no other suite's zeros.
    assert [line.split()[:3] for line in stats.stdout.splitlines() if line.strip().startswith("4")] == [
        ["41", "pantry_fact", "4"], ["42", "pantry_preference", "2"],
    ]  # fmt: skip
    assert "abstention" not in stats.stdout and "multi_hop" not in stats.stdout
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 6 and not any(r.get("failure") for r in rows)
    assert {(r["category_id"], r["category"]) for r in rows} == {
        (41, "pantry_fact"),
        (42, "pantry_preference"),
    }
    assert all(r["f1"] is not None for r in rows)  # the suite says the lexical scores apply
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert list(metrics["categories"]) == ["pantry_fact", "pantry_preference"]  # its own, nobody else's
    assert metrics["categories"]["pantry_fact"]["n"] == 4
    # The suite's own aggregate beyond the micro mean: J averaged over its two categories.
    by_category = [metrics["categories"][c]["judge"]["mean"] for c in ("pantry_fact", "pantry_preference")]
    assert metrics["overall"]["pantry_macro_j"] == pytest.approx(sum(by_category) / 2)
    assert "pantry_macro_j" not in metrics["categories"]["pantry_fact"]
    judge_calls = [json.loads(line) for line in (run_dir / "judgements.jsonl").read_text().splitlines()]
    assert len(judge_calls) == 6
    # The report shows the suite's categories under their names and, where its module can be imported (run
    # from its folder), the suite's own metric; from elsewhere, the categories still, without that column.
    tables = (tmp_path / "report" / "table1.md").read_text()
    assert "pantry_preference J" in tables and "overall macro J" in tables and "multi_hop" not in tables
    tables = (tmp_path / "report2" / "table1.md").read_text()
    assert "pantry_preference J" in tables and "macro J" not in tables


def test_a_category_id_is_one_suites_only() -> None:
    taken = next(iter(CATEGORIES.values()))
    with pytest.raises(ValueError, match=f"category id {taken.id} .* is already {taken.suite}'s"):
        register_categories([Category("beam", taken.id, "event_ordering")])
    with pytest.raises(
        ValueError, match=f"category name '{taken.name}' .* is already {taken.suite}'s {taken.id}"
    ):
        register_categories([Category("beam", 99, taken.name)])
    assert CATEGORIES[taken.id] is taken and 99 not in CATEGORIES


def test_categories_are_the_suites_own() -> None:
    """Every category belongs to the suite that registered it; none is filed by its id's range."""
    for suite in SUITES.values():
        for category in suite.categories:
            assert suite_of(category.id).categories == suite.categories
            assert category.suite == suite.name.split("_")[0] or category.suite == suite.name
    assert [c.id for c in all_categories()] == sorted(CATEGORIES)
    with pytest.raises(ValueError, match="no registered suite has a category 99"):
        suite_of(99)


def test_the_core_data_model_names_no_suite() -> None:
    """A Category is a value (suite, id, name): the data model holds no suite's members, and no rule
    reads a suite from an id's range."""
    from dataclasses import fields

    from mem0bench.data import model

    assert [f.name for f in fields(Category)] == ["suite", "id", "name"]
    assert not [v for v in vars(model).values() if isinstance(v, Category)]
    assert not [v for v in vars(Category).values() if isinstance(v, Category)]
    assert "family" not in vars(Category)


def test_stats_of_a_new_suite_show_its_categories_only() -> None:
    """`data stats` of another suite's file: its own categories, no other suite's zeros beside them."""
    from datetime import datetime

    from mem0bench.data.model import Conversation, Dataset, Question, Session, Turn
    from mem0bench.data.stats import dataset_stats

    ordering, recall = Category("beam", 23, "event_ordering"), Category("beam", 21, "information_extraction")
    session = Session(1, datetime(2024, 1, 1), "2024-01-01", (Turn("A", "D1:1", "hello"),))
    questions = tuple(
        Question(f"c:q{i}", "c", i, "?", "x", category)
        for i, category in enumerate((ordering, recall, recall))
    )
    ds = Dataset("beam.json", "0" * 64, (Conversation("c", "A", "B", (session,), questions),), suite="beam")
    assert dataset_stats(ds)["categories"] == {"information_extraction": 2, "event_ordering": 1}
