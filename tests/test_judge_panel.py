"""judge.panel: several judge models over the same answers, kept apart; Fleiss' kappa; ranking change."""

from __future__ import annotations

import json

import pytest

from devtools.e2e import FAST, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.cli.compare import compare_main
from mem0bench.comparison.compare import panel_ranking
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.rundir.schema import read_metrics


def _panel(**means: float) -> dict:
    return {"judges": {name: {"overall": {"mean": m}} for name, m in means.items()}, "fleiss_kappa": 0.5}


def test_ranking_change_by_hand():
    a, b = _panel(x=0.6, y=0.5), _panel(x=0.7, y=0.4)
    found = panel_ranking(a, b)
    assert found["ranking_changes"] is True
    assert found["judges"]["x"]["delta"] == pytest.approx(0.1) and found["judges"]["y"][
        "delta"
    ] == pytest.approx(-0.1)
    assert panel_ranking(_panel(x=0.6, y=0.5), _panel(x=0.7, y=0.6))["ranking_changes"] is False
    assert panel_ranking(a, None) is None


def test_panel_settings():
    judge = JudgeSettings(model="m1", panel=["m1", "m2", "m2", "m3"])
    assert [j.model for j in judge.panel_judges()] == ["m2", "m3"]
    assert all(j.prompt == judge.prompt and j.runs == judge.runs for j in judge.panel_judges())
    assert judge.signature == JudgeSettings(model="m1").signature  # the panel does not change whose labels
    with pytest.raises(ValueError, match="judge.panel"):
        JudgeSettings(model="m1", panel="m2")


@pytest.mark.slow
def test_panel_run_and_compare(tmp_path, locomo_path):
    with StandinServer(extra_models=["judge-b"]) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        for k in (1, 2):
            result = run_cli(
                ["run", "+exp=rag", f"method.k={k}", f"dataset.path={locomo_path}", "dataset.conversations=[conv-30]",
                 "eval.max_questions=8", "judge.runs=2", "judge.panel=[gpt-4o-mini,judge-b]", "eval.bootstrap=200",
                 f"hydra.run.dir={tmp_path / f'k{k}'}", *FAST],
                env,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-3000:]
    judgements = read_jsonl(tmp_path / "k1" / "judgements.jsonl")
    assert len({j["signature"] for j in judgements}) == 2 and len(judgements) == 8 * 2 * 2
    metrics = read_metrics(tmp_path / "k1" / "metrics.json")
    panel = metrics.extra["judge_panel"]
    assert set(panel["judges"]) == {"gpt-4o-mini (lenient)", "judge-b (lenient)"}
    assert panel["judges"]["gpt-4o-mini (lenient)"]["overall"] == metrics.overall.judge  # the main judge
    assert panel["n_judged_by_all"] == 8 and -1.0 <= panel["fleiss_kappa"] <= 1.0
    assert compare_main([str(tmp_path / "k1"), str(tmp_path / "k2"), "--out", str(tmp_path / "c")]) == 0
    compared = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert set(compared["judge_panel"]["judges"]) == set(panel["judges"])
    assert isinstance(compared["judge_panel"]["ranking_changes"], bool)


def test_dry_run_prices_each_panel_judge_at_its_own_rate(tmp_path, locomo_path):
    args = ["run", "+exp=rag", f"dataset.path={locomo_path}", "dataset.conversations=[conv-26]", "run.dry_run=true",
            "judge.panel=[gpt-4o-mini,gpt-4o]", f"hydra.run.dir={tmp_path / 'r'}"]  # fmt: skip
    result = run_cli(args, cli_env("http://127.0.0.1:9/v1", tmp_path / "cache"), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = {
        line.split()[1] + " " + line.split()[2]: line
        for line in result.stdout.splitlines()
        if line.startswith("judge")
    }
    main_usd = float(lines["judge x10"].split()[-1])
    panel_usd = float(lines["panel gpt-4o"].split()[-1])
    assert panel_usd == pytest.approx(main_usd * 2.50 / 0.15, rel=0.01)  # gpt-4o's price, not gpt-4o-mini's
