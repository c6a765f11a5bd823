"""A run folder belongs to one configuration (issue 32, item 1).

A rerun into a folder whose results another configuration made stops before any work, in one line naming
the differences and the two ways on; `run.allow_config_change=true` recomputes exactly the stages the change
reaches; a setting that changes no result passes and is recorded in run.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.reliability import StageCount, paid, small_sample
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.pipeline.config_change import Reach, compare_configs, is_neutral, reach_of

BASE = {
    "method": {"_target_": "mem0bench.systems.baselines.rag.RAG", "name": "rag", "k": 1},
    "llm": {"model": "gpt-4o-mini", "max_concurrency": 16, "prices": {"gpt-4o-mini": {"prompt": 0.15}}},
    "judge": {"model": "gpt-4o-mini", "runs": 10},
    "run": {"progress": True, "allow_config_change": False},
}


def _changed(**sections: dict) -> dict:
    out = json.loads(json.dumps(BASE))
    for name, values in sections.items():
        out.setdefault(name, {}).update(values)
    return out


def test_only_listed_settings_are_result_neutral_and_each_change_reaches_its_stages() -> None:
    assert compare_configs(BASE, json.loads(json.dumps(BASE))).changes == {}
    neutral = compare_configs(BASE, _changed(llm={"max_concurrency": 2}, run={"progress": False}))
    assert neutral.reach is None and set(neutral.neutral) == {"llm.max_concurrency", "run.progress"}
    # The flag that allows a change is no change itself.
    assert compare_configs(BASE, _changed(run={"allow_config_change": True})).changes == {}
    method = compare_configs(BASE, _changed(method={"k": 30}))
    assert method.result_changing == {"method.k": (1, 30)} and method.reach is Reach.INGEST
    assert compare_configs(BASE, _changed(judge={"runs": 3})).reach is Reach.JUDGE
    # A key nobody listed (a new setting, a system's own) counts as changing results, back to ingestion.
    unknown = compare_configs(BASE, _changed(llm={"reasoning_effort": "high"}))
    assert unknown.result_changing == {"llm.reasoning_effort": ("(absent)", "high")}
    assert unknown.reach is Reach.INGEST
    assert not is_neutral("llm.model") and not is_neutral("embedder.model") and is_neutral("llm.prices.x.y")
    assert reach_of("answer.prompt") is Reach.ANSWER and reach_of("dataset.answer_key_mode") is Reach.JUDGE
    assert reach_of("eval.max_questions") is Reach.SCOPE and reach_of("dataset.sha256") is Reach.INGEST
    # A scope change recomputes nothing (every standing row was made under the same settings): recorded,
    # never refused; a method change is refused without the flag.
    scope = compare_configs(BASE, _changed(eval={"max_questions": 7}))
    scope.check(Path("R"), allowed=False)
    assert scope.records("t", None)["config_changes"]["recomputed"].startswith("nothing")
    with pytest.raises(ConfigurationError):
        method.check(Path("R"), allowed=False)
    # A config saved before a system moved names its old class: the same class, no change.
    old = _changed(method={"_target_": "baselines.rag.RAG"})
    assert compare_configs(old, BASE).changes == {}
    # Prices are neutral from an empty table too: `llm.prices` itself is no setting, only its entries.
    unpriced = _changed(llm={"prices": {}})
    priced = compare_configs(unpriced, BASE)
    assert priced.reach is None and set(priced.changes) == {"llm.prices.gpt-4o-mini.prompt"}


def _run(dataset: Path, run_dir: Path, env: dict, *extra: str, exp: str = "rag"):
    return run_cli(
        ["run", f"+exp={exp}", f"dataset.path={dataset}", "judge.runs=1", f"hydra.run.dir={run_dir}",
         *FAST, *extra],
        env,
    )  # fmt: skip


def _metrics(run_dir: Path) -> dict:
    overall = json.loads((run_dir / "metrics.json").read_text())["overall"]
    return {"j": overall["judge"]["mean"], "f1": overall["f1"]}


@pytest.mark.slow
def test_a_rerun_with_other_results_settings_stops_or_recomputes_what_they_reach(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, questions=3)
    run_dir = tmp_path / "R"
    stages = StageCount()
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(stages)
        env = cli_env(server.base_url, tmp_path / "cache")
        first = _run(dataset, run_dir, env, "method.k=1")
        assert first.returncode == 0, first.stderr[-3000:]
        before = {
            name: (run_dir / name).read_bytes() for name in ("config.yaml", "answers.jsonl", "metrics.json")
        }
        bought = paid(server)

        # Another method setting, another method: one line, nothing asked, nothing in the folder changed.
        for extra, exp, named in (
            ("method.k=2", "rag", "method.k: 1 -> 2"),
            ("", "mem0", "method.name: rag -> mem0"),
        ):
            refused = _run(dataset, run_dir, env, *([extra] if extra else []), exp=exp)
            assert refused.returncode == 2, refused.stderr[-3000:]
            lines = refused.stderr.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
            assert (
                named in lines[0]
                and "hydra.run.dir=" in lines[0]
                and "run.allow_config_change=true" in lines[0]
            )
        assert paid(server) == bought
        assert {name: (run_dir / name).read_bytes() for name in before} == before

        # A setting that changes no result: allowed, and recorded.
        neutral = _run(
            dataset, run_dir, env, "method.k=1", "llm.max_concurrency=3", "run.max_failure_rate=0.5"
        )
        assert neutral.returncode == 0, neutral.stderr[-3000:]
        assert paid(server) == bought
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["setting_changes"][-1]["changes"] == {
            "llm.max_concurrency": [64, 3], "run.max_failure_rate": [0.05, 0.5]
        }  # fmt: skip
        assert "config_changes" not in manifest

        # Allowed on purpose: the figures are those of a fresh folder with the new setting.
        changed = _run(dataset, run_dir, env, "method.k=2", "run.allow_config_change=true")
        assert changed.returncode == 0, changed.stderr[-3000:]
        fresh = _run(dataset, tmp_path / "fresh", env, "method.k=2")
        assert fresh.returncode == 0, fresh.stderr[-3000:]
        assert _metrics(run_dir) == _metrics(tmp_path / "fresh") != {"j": None, "f1": None}
        entry = json.loads((run_dir / "run.json").read_text())["config_changes"][-1]
        assert (
            entry["changes"] == {"method.k": [1, 2]}
            and (run_dir / entry["superseded"] / "ingest.jsonl").exists()
        )

        # A judge change reaches the judgements only: nothing is ingested or answered again.
        stages.seen.clear()
        rejudged = _run(
            dataset, run_dir, env, "method.k=2", "judge.prompt=strict", "run.allow_config_change=true"
        )
        assert rejudged.returncode == 0, rejudged.stderr[-3000:]
        assert stages.seen["judge"] == 3 and stages.seen["answer"] == 0 and stages.seen["ingest"] == 0, (
            stages.seen
        )

        # The dataset file edited in place (same path): its content is compared too.
        data = json.loads(dataset.read_text())
        data[0]["qa"][0]["answer"] = "something else"
        dataset.write_text(json.dumps(data))
        edited = _run(dataset, run_dir, env, "method.k=2", "judge.prompt=strict")
    assert edited.returncode == 2 and "dataset.sha256: " in edited.stderr, edited.stderr[-3000:]
