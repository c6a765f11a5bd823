"""Published LOCOMO results beside ours: the package's data file, `report --published` rows marked as
such, and `compare`, the paired column and the intervals never using them."""

from __future__ import annotations

import ast
import csv
from pathlib import Path

import pytest

from mem0bench.cli.compare import compare_main
from mem0bench.cli.import_answers import import_main
from mem0bench.cli.report import report_main
from mem0bench.report.published import MARK, load_published

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "published"
COUNTS = {"multi_hop": 282, "temporal": 321, "open_domain": 96, "single_hop": 841}  # LOCOMO categories 1-4


def test_every_published_row_names_its_setting_in_locomo_categories():
    results = load_published()
    assert len(results) >= 20
    for r in results:
        assert set(r.categories) <= set(COUNTS) and r.source and r.answer_model and r.judge and r.category5
        assert r.how_known in ("verified", "stated")
        if len(r.categories) == 4:  # a wrong label mapping would not give the published overall
            weighted = sum(r.categories[k] * n for k, n in COUNTS.items()) / sum(COUNTS.values())
            assert weighted == pytest.approx(r.j, abs=0.02), r.system


def test_the_mem0_paper_columns_are_mapped_to_locomo_categories():
    mem0 = next(r for r in load_published() if r.system == "Mem0" and "arXiv" in r.source)
    # The paper's "single-hop" is LOCOMO category 1 (multi_hop), "multi-hop" 3, "open-domain" 4.
    assert mem0.categories == {
        "multi_hop": 67.13,
        "temporal": 55.51,
        "open_domain": 51.15,
        "single_hop": 72.93,
    }
    audit = next(r for r in load_published() if r.j == 74.29)
    assert audit.categories["temporal"] == 51.09 and audit.how_known == "verified"


@pytest.fixture(scope="module")
def run(tmp_path_factory, locomo_path):
    out = tmp_path_factory.mktemp("pub") / "a"
    args = [str(FIXTURES / "by_conversation.json"), "--out", str(out), "--dataset", str(locomo_path)]
    assert import_main([*args, "--system", "sys-a", "--bootstrap-replicates", "50"]) == 0
    return out


def test_report_published_adds_marked_rows_with_no_interval(run, tmp_path):
    out = tmp_path / "report"
    assert report_main([str(run), "--out", str(out), "--published", "--baseline", str(run)]) == 0
    with (out / "table1.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    measured, published = rows[0], rows[1:]
    assert measured["row"] == "measured" and len(published) == len(load_published())
    for row in published:
        assert row["row"].startswith(MARK)
        assert row["overall J 95% CI low"] == "" and row["overall F1"] == ""
    zep = next(r for r in published if r["method"] == "Zep (corrected)")
    assert float(zep["overall J mean"]) == 75.14 and float(zep["temporal J mean"]) == 66.04
    table = (out / "table1.md").read_text()
    assert "published: Zep (corrected)" in table and "not comparable" in table
    # The paired ΔJ column is ours only: '-' on every published row.
    lines = [line for line in table.splitlines() if line.startswith("| published: ")]
    assert lines and all(line.rstrip(" |").endswith("-") for line in lines)
    assert "published: Zep" in (out / "report.html").read_text()


def test_without_the_flag_no_published_row(run, tmp_path):
    assert report_main([str(run), "--out", str(tmp_path)]) == 0
    assert "published" not in (tmp_path / "table1.md").read_text()


def test_compare_and_intervals_never_read_the_published_file(run, tmp_path, capsys):
    # Nothing but the report's table builder and the CLI's --published option imports the module.
    users = []
    for path in (REPO / "mem0bench").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "mem0bench.report.published":
                users.append(path.relative_to(REPO).as_posix())
    assert sorted(users) == ["mem0bench/cli/report.py", "mem0bench/report/tables.py"]
    assert compare_main([str(run), str(run), "--out", str(tmp_path), "--bootstrap", "50"]) == 0
    assert "published" not in (tmp_path / "compare.md").read_text()
    with pytest.raises(SystemExit):
        compare_main([str(run), str(run), "--published"])
