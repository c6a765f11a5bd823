"""judge-check: the calibration set, the error rates, the second opinion, and the command on a stand-in."""

from __future__ import annotations

import json

import pytest

from devtools.e2e import FAST, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.cli.import_answers import import_main
from mem0bench.data import load_dataset
from mem0bench.judge_check.calibration import (
    DONT_KNOW,
    CalibrationItem,
    build_calibration_set,
    error_rates,
    second_opinion,
)
from tests.test_import_compare import FIXTURES


@pytest.fixture(scope="module")
def dataset(locomo_path):
    return load_dataset(locomo_path)


def test_calibration_set_is_deterministic_and_labelled(dataset):
    items = build_calibration_set(dataset, 3)
    assert [i.item_id for i in items] == [i.item_id for i in build_calibration_set(dataset, 3)]
    assert len({i.question.qid for i in items}) == 12  # 3 questions x 4 categories
    by_kind = {
        k: [i for i in items if i.kind == k] for k in ("gold", "gold_in_sentence", "other_gold", "dont_know")
    }
    assert all(i.prediction == i.question.answer and i.expected for i in by_kind["gold"])
    assert all(i.question.answer in i.prediction and i.expected for i in by_kind["gold_in_sentence"])
    assert all(i.prediction == DONT_KNOW and not i.expected for i in by_kind["dont_know"])
    for item in by_kind["other_gold"]:
        assert not item.expected and item.prediction.casefold() not in item.question.answer.casefold()
        # another question's gold, from the same conversation and category
        source = [q for q in dataset.questions if q.answer == item.prediction and q.qid != item.question.qid]
        assert any(
            q.sample_id == item.question.sample_id and q.category == item.question.category for q in source
        )


def test_error_rates_by_hand(dataset):
    q = dataset.questions[0]
    items = [
        CalibrationItem(q, "gold", q.answer),  # judged WRONG: a false reject
        CalibrationItem(q, "gold_in_sentence", "x"),  # judged CORRECT
        CalibrationItem(q, "other_gold", "y"),  # judged CORRECT: a false accept
        CalibrationItem(q, "dont_know", DONT_KNOW),  # the judge failed: left out, counted
    ]
    labels = {items[0].item_id: False, items[1].item_id: True, items[2].item_id: True, items[3].item_id: None}
    rates = error_rates(items, labels)["overall"]
    assert (rates["false_reject"]["errors"], rates["false_reject"]["n"]) == (1, 2)
    assert (rates["false_accept"]["errors"], rates["false_accept"]["n"], rates["failed"]) == (1, 1, 1)
    assert rates["false_accept"]["ci95"][1] == 1.0 and rates["false_reject"]["rate"] == 0.5


def test_second_opinion_by_hand():
    ours = {"a": True, "b": True, "c": False, "d": False, "e": None}
    theirs = {"a": True, "b": False, "c": False, "d": False, "e": True}
    found = second_opinion(ours, theirs)
    assert found["n"] == 4 and found["agreement"] == 0.75 and found["cohen_kappa"] == pytest.approx(0.5)


@pytest.mark.slow
def test_judge_check_command_on_the_standin(tmp_path, locomo_path):
    imported = tmp_path / "imported"
    assert (
        import_main(
            [str(FIXTURES / "by_conversation.json"), "--out", str(imported), "--dataset", str(locomo_path)]
        )
        == 0
    )
    with StandinServer() as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        common = [f"dataset.path={locomo_path}", "--per-category", "2", "--second-opinion", str(imported)]
        dry = run_cli(["judge-check", "run.dry_run=true", *common], env)
        assert dry.returncode == 0, dry.stderr[-2000:]
        assert "8 calibration items" not in dry.stdout and "calls" in dry.stdout and server.count("chat") == 0
        result = run_cli(["judge-check", *common, "--out", str(tmp_path / "out"), *FAST[:3]], env)
        assert result.returncode == 0, result.stderr[-3000:]
        calls = server.count("chat")
    check = json.loads((tmp_path / "out" / "judge_check.json").read_text())
    assert check["items"] >= 28  # 2 questions x 4 categories x (3 or 4 items)
    # one call per item (easy and stress) and per imported answer, judge.runs=1
    assert calls == check["items"] + check["stress"]["items"] + 6
    overall = check["overall"]
    assert overall["false_accept"]["n"] + overall["false_reject"]["n"] + overall["failed"] == check["items"]
    assert set(check["categories"]) == {"multi_hop", "temporal", "open_domain", "single_hop"}
    assert check["second_opinion"]["overall"]["n"] == 5  # one imported label is not a label
    assert "false accept" in (tmp_path / "out" / "judge_check.md").read_text()


def test_bad_override_is_one_line(capsys):
    from mem0bench.cli.judge_check import judge_check_main

    assert judge_check_main(["judge.nonsense=1", "run.dry_run=true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_the_default_folder_follows_the_run_folder_rule():
    """Relative (taken from the current folder, as Hydra takes configs/run.yaml's hydra.run.dir), under the
    same results/ as results/runs/, and named with the run folders' time format, to the microsecond."""
    from datetime import datetime
    from pathlib import Path

    import yaml

    from mem0bench.paths import CONFIG_DIR
    from mem0bench.report.judge_checks import DEFAULT_DIR, RUN_TIME_FORMAT, default_out

    run_dir = yaml.safe_load((CONFIG_DIR / "run.yaml").read_text())["hydra"]["run"]["dir"]
    assert run_dir == f"results/runs/${{now:{RUN_TIME_FORMAT}}}_${{method.name}}"
    results = Path(Path(run_dir).parts[0])
    assert not DEFAULT_DIR.is_absolute() and DEFAULT_DIR.parent == results == Path("results")
    first = default_out("openai/gpt-4o-mini", datetime(2026, 12, 2, 1, 2, 3, 4))
    assert first == Path("results/judge-check/2026-12-02_01-02-03-000004_openai-gpt-4o-mini")
    second = default_out("gpt-4o-mini", datetime(2026, 12, 2, 1, 2, 3, 5))  # the same second, apart
    assert second.name == "2026-12-02_01-02-03-000005_gpt-4o-mini"


@pytest.mark.slow
def test_judge_check_without_out_writes_under_the_current_folder(tmp_path, locomo_path):
    import os
    import subprocess
    import sys

    from devtools.e2e import REPO

    with StandinServer() as server:
        env = {**cli_env(server.base_url, tmp_path / "cache"), "PYTHONPATH": str(REPO)}
        args = ["judge-check", f"dataset.path={locomo_path}", "--per-category", "1", "--no-stress", *FAST[:3]]
        where = tmp_path / "elsewhere"
        where.mkdir()
        done = subprocess.run(
            [sys.executable, "-m", "mem0bench", *args], cwd=where, env=env, capture_output=True, text=True
        )
    assert done.returncode == 0, done.stderr[-2000:]
    (folder,) = (where / "results" / "judge-check").iterdir()
    assert folder.name.endswith("_gpt-4o-mini") and (folder / "judge_check.json").is_file()
    assert f"wrote {os.path.join('results', 'judge-check', folder.name, 'judge_check.json')}" in done.stdout
