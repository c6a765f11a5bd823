"""Table 1's extra rows and column: bound runs (oracle, no memory) with the original-key note, and the
vague-answer false-accept rate of each run's judge from a judge-check result."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from mem0bench.cli.report import report_main
from mem0bench.report.tables import ORIGINAL_KEY_NOTE
from tests.test_report import make_config, make_metrics, write_run


def _run(root: Path, name: str, target: str, prompt: str, base: float, key: str | None = None) -> None:
    config = make_config({"_target_": target, "name": name}, root / name, 0)
    config["judge"] = {"model": "gpt-4o-mini", "runs": 3, "prompt": prompt, "mode": "tool"}
    if key:
        config["dataset"]["answer_key"] = key
    write_run(root / name, make_metrics(name, base), config)


def _check(folder: Path, prompt: str, rate: float, n: int = 50) -> None:
    folder.mkdir(parents=True)
    result: dict[str, Any] = {
        "judge": {"model": "gpt-4o-mini", "prompt": prompt, "mode": "tool", "runs": 1},
        "finished": "2026-12-01T20:00:00+00:00",
        "stress": {"families": {"vague": {"overall": {"n": n, "errors": round(rate * n), "rate": rate,
                                                      "ci95": [rate - 0.1, rate + 0.1]}}}},
    }  # fmt: skip
    (folder / "judge_check.json").write_text(json.dumps(result))


def test_bounds_are_marked_and_the_original_key_caps_j(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "oracle", "mem0bench.systems.baselines.oracle.Oracle", "lenient", 0.8)
    _run(runs, "no_memory", "mem0bench.systems.baselines.no_memory.NoMemory", "lenient", 0.1)
    _run(runs, "rag", "mem0bench.systems.baselines.rag.RAG", "lenient", 0.6)
    out = tmp_path / "report"
    assert report_main([str(runs), "--out", str(out)]) == 0
    rows = {r["run"]: r for r in csv.DictReader((out / "table1.csv").open())}
    assert rows["oracle"]["row"].startswith("bound: ceiling")
    assert rows["no_memory"]["row"].startswith("bound: floor")
    assert rows["rag"]["row"] == "measured"
    assert ORIGINAL_KEY_NOTE in (out / "table1.md").read_text()


def test_a_corrected_key_drops_the_note_and_no_bound_no_row_column(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "oracle", "mem0bench.systems.baselines.oracle.Oracle", "lenient", 0.8, key="/keys/fixed.json")
    assert report_main([str(runs), "--out", str(tmp_path / "a")]) == 0
    assert ORIGINAL_KEY_NOTE not in (tmp_path / "a" / "table1.md").read_text()
    plain = tmp_path / "plain"
    _run(plain, "rag", "mem0bench.systems.baselines.rag.RAG", "lenient", 0.6)
    assert report_main([str(plain), "--out", str(tmp_path / "b")]) == 0
    assert "| row " not in (tmp_path / "b" / "table1.md").read_text()


def test_vague_false_accepts_of_the_runs_own_judge_next_to_j(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "lenient-run", "mem0bench.systems.baselines.rag.RAG", "lenient", 0.6)
    _run(runs, "strict-run", "mem0bench.systems.baselines.rag.RAG", "strict", 0.5)
    checks = tmp_path / "checks"
    _check(checks / "old", "lenient", 0.9)
    _check(checks / "other", "paper", 0.7)
    newer = checks / "new"
    _check(newer, "lenient", 0.4)
    data = json.loads((newer / "judge_check.json").read_text())
    data["finished"] = "2026-12-01T21:00:00+00:00"  # the newest result for the same judge wins
    (newer / "judge_check.json").write_text(json.dumps(data))
    out = tmp_path / "report"
    assert report_main([str(runs), "--out", str(out), "--judge-check", str(checks)]) == 0
    rows = {r["run"]: r for r in csv.DictReader((out / "table1.csv").open())}
    column = "judge accepts vague wrong answers (%)"
    assert float(rows["lenient-run"][column]) == 40.0
    assert rows["strict-run"][column] == ""  # no judge-check of the strict judge
    table = (out / "table1.md").read_text()
    assert "40.0 [30.0, 50.0] (n=50)" in table
    assert column in (out / "report.html").read_text()
    header = table.splitlines()[2]
    assert header.index("overall J ") < header.index(column) < header.index("overall J 95% CI")


def test_a_bound_is_what_run_json_records_not_the_class_name(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "mine", "my_pkg.systems.EvidenceOnly", "lenient", 0.9)  # a user's own ceiling
    _run(runs, "oracle", "mem0bench.systems.baselines.oracle.Oracle", "lenient", 0.8)
    for name, bound in (("mine", "ceiling"), ("oracle", None)):  # a run.json written since it is recorded
        info = runs / name / "run.json"
        info.write_text(json.dumps({**json.loads(info.read_text()), "bound": bound}))
    out = tmp_path / "report"
    assert report_main([str(runs), "--out", str(out)]) == 0
    rows = {r["run"]: r for r in csv.DictReader((out / "table1.csv").open())}
    assert rows["mine"]["row"].startswith("bound: ceiling") and rows["oracle"]["row"] == "measured"


def test_the_bound_systems_declare_themselves() -> None:
    from mem0bench.memory.base import declared_bound
    from mem0bench.systems.baselines.no_memory import NoMemory
    from mem0bench.systems.baselines.oracle import Oracle
    from mem0bench.systems.baselines.rag import RAG

    assert (declared_bound(Oracle), declared_bound(NoMemory), declared_bound(RAG)) == (
        "ceiling",
        "floor",
        None,
    )
