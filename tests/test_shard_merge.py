"""A run split into shards (`run.shard=K/N`) and merged (`merge`) is the run done unsplit; every refusal.

The real CLI against the deterministic stand-in, on the mini fixture. What "equal" leaves out, and only
that: timings (every `*_s` field of a prediction; metrics.json's `latency_s` and `latency_isolated_s`),
run ids, and `tokens.prompt_cache.preflight`, the start-up probe each process pays once (two shards are
two processes, so the merged run honestly paid it twice).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.e2e import FAST, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.pipeline.config_change import Reach, is_neutral, reach_of
from mem0bench.pipeline.sample import assign_shards, parse_shard
from mem0bench.pipeline.spec import ExperimentSpec

# --- the parts: deterministic, balanced by cost ----------------------------------------------------------


def test_parts_are_balanced_by_cost_not_count_and_deterministic():
    costs = {"a": 100, "b": 10, "c": 10, "d": 10, "e": 90}
    parts = assign_shards(costs, 2)
    # Largest first to the lightest part: a -> 1, e -> 2, then b, c, d to part 2 (90 < 100, 100 = 100: the
    # lower part, ...). By count a 3/2 split would put a and e together.
    assert parts == [["a", "c"], ["b", "d", "e"]]
    assert assign_shards(dict(reversed(costs.items())), 2) == [["c", "a"], ["e", "d", "b"]]
    assert sorted(sid for p in assign_shards(costs, 3) for sid in p) == sorted(costs)
    # Ties in cost go by id, whatever the order given.
    assert assign_shards({"y": 5, "x": 5}, 2) == [["x"], ["y"]]


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_a_bad_shard_is_one_line(value):
    with pytest.raises(ValueError, match="run.shard must be null or K/N"):
        parse_shard(value)
    assert parse_shard("2/8") == (2, 8) and parse_shard(None) is None


# --- end to end --------------------------------------------------------------------------------------------

TIMINGS = ("latency_s", "latency_isolated_s")


@pytest.fixture(scope="module")
def server():
    with StandinServer() as s:
        yield s


def _run(where: Path, server, locomo: Path, cache: Path, *extra: str):
    args = [
        "run", "+exp=rag", f"dataset.path={locomo}", "eval.max_questions=3", "judge.runs=3",
        f"hydra.run.dir={where}", *FAST, *extra,
    ]  # fmt: skip
    return run_cli(args, cli_env(server.base_url, cache))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, server, locomo_mini) -> dict[str, Path]:
    """The whole run and its two shards, each with a cache of its own (as on nodes without a shared disk)."""
    root = tmp_path_factory.mktemp("shards")
    out = {}
    for name, extra in [("whole", ()), ("s1", ("run.shard=1/2",)), ("s2", ("run.shard=2/2",))]:
        result = _run(root / name, server, locomo_mini, root / f"cache-{name}", *extra)
        assert result.returncode == 0, result.stderr[-3000:]
        out[name] = root / name
    return out


def _merge(*args: Any):
    return run_cli(["merge", *map(str, args)], cli_env("http://127.0.0.1:9/v1", Path("/nonexistent")))


def _predictions(run: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if not k.endswith("_s")}
        for row in read_jsonl(run / "predictions.jsonl")
    ]


def _metrics(run: Path) -> dict[str, Any]:
    metrics = json.loads((run / "metrics.json").read_text())
    for key in TIMINGS:
        metrics.pop(key, None)
    # Each shard's process pays the preflight once: a real cost, and the one place the sum differs (the
    # block is only written when the server cached prompt tokens).
    metrics["tokens"].get("prompt_cache", {}).pop("preflight", None)
    return metrics


def assert_same_run(merged: Path, whole: Path) -> None:
    assert _predictions(merged) == _predictions(whole)
    assert _metrics(merged) == _metrics(whole)
    assert (
        json.loads((merged / "run.json").read_text())["scope"]
        == json.loads((whole / "run.json").read_text())["scope"]
    )


def test_shards_cover_the_whole_each_once(runs):
    one, two = (json.loads((runs[s] / "run.json").read_text())["shard"] for s in ("s1", "s2"))
    assert (one["index"], one["of"], two["index"]) == (1, 2, 2)
    assert one["whole"] == two["whole"]
    assert sorted(one["conversations"] + two["conversations"]) == sorted(one["whole"]["conversations"])
    assert one["whole"]["scope"] == json.loads((runs["whole"] / "run.json").read_text())["scope"]
    # An unsharded run's config.yaml does not name the shard: older folders resume as before.
    assert "shard" not in yaml.safe_load((runs["whole"] / "config.yaml").read_text())["run"]
    assert yaml.safe_load((runs["s1"] / "config.yaml").read_text())["run"]["shard"] == "1/2"


def test_merged_shards_equal_the_unsharded_run(runs, tmp_path):
    result = _merge(runs["s2"], runs["s1"], "--out", tmp_path / "merged")  # any order
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_run(tmp_path / "merged", runs["whole"])
    rows = read_jsonl(tmp_path / "merged" / "predictions.jsonl")
    assert len(rows) == 8 and len({r["conversation"] for r in rows}) == 3
    # Usage summed: every process of every shard is in usage.json.
    sessions = json.loads((tmp_path / "merged" / "usage.json").read_text())["sessions"]
    assert len(sessions) == 2
    # The merged folder is a run like any: status, report and compare read it.
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "c")
    status = run_cli(["status", str(tmp_path / "merged")], env)
    assert status.returncode == 0 and "8/8 questions, done" in status.stdout, status.stdout + status.stderr
    assert "merged from 2 shards" in status.stdout
    compare = run_cli(
        ["compare", str(runs["whole"]), str(tmp_path / "merged"), "--out", str(tmp_path / "c")], env
    )
    assert compare.returncode == 0, compare.stderr[-2000:]
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["n_paired"] == 8
    report = run_cli(["report", str(tmp_path / "merged"), "--out", str(tmp_path / "r")], env)
    assert report.returncode == 0, report.stderr[-2000:]


def _refused(result, *needles: str) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in line, line
    for needle in needles:
        assert needle in line, line
    return line


def test_a_missing_or_doubled_shard_is_refused(runs, tmp_path):
    _refused(_merge(runs["s1"], "--out", tmp_path / "m1"), "shard 2/2 is missing")
    copy = tmp_path / "copy"
    shutil.copytree(runs["s1"], copy)
    _refused(
        _merge(runs["s1"], copy, runs["s2"], "--out", tmp_path / "m2"), "shard 1/2 is given twice", str(copy)
    )
    _refused(
        _merge(runs["whole"], runs["s2"], "--out", tmp_path / "m3"), "is not a shard", str(runs["whole"])
    )
    assert not (tmp_path / "m1").exists() and not (tmp_path / "m2").exists()


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (("method.k=1",), ("different configuration", "method.k")),
        (("judge.runs=2",), ("different judge", "judge.runs")),
    ],
)
def test_shards_of_another_config_or_judge_are_refused(runs, server, locomo_mini, tmp_path, extra, needles):
    other = tmp_path / "other"
    result = _run(other, server, locomo_mini, tmp_path / "cache", "run.shard=2/2", *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    _refused(_merge(runs["s1"], other, "--out", tmp_path / "m"), "shard 2/2", *needles)


def test_shards_of_another_dataset_are_refused(runs, server, locomo_mini, tmp_path):
    data = json.loads(locomo_mini.read_text())
    data[0]["qa"][0]["answer"] = "A different gold answer"
    changed = tmp_path / "locomo_changed.json"
    changed.write_text(json.dumps(data))
    other = tmp_path / "other"
    result = _run(other, server, changed, tmp_path / "cache", "run.shard=2/2")
    assert result.returncode == 0, result.stderr[-3000:]
    _refused(_merge(runs["s1"], other, "--out", tmp_path / "m"), "different dataset", "shard 2/2")


def test_the_shard_key_changes_results_back_to_ingestion():
    assert reach_of("run.shard") is Reach.INGEST and not is_neutral("run.shard")


def test_a_shard_is_not_resumed_as_another(runs, server, locomo_mini, tmp_path):
    folder = tmp_path / "s1"
    shutil.copytree(runs["s1"], folder)
    before = (folder / "predictions.jsonl").read_bytes()
    result = _run(folder, server, locomo_mini, tmp_path / "cache", "run.shard=2/2")
    _refused(result, "run.shard: 1/2 -> 2/2")
    # Nor a whole run's folder resumed as a shard.
    whole = tmp_path / "whole"
    shutil.copytree(runs["whole"], whole)
    _refused(_run(whole, server, locomo_mini, tmp_path / "cache", "run.shard=1/2"), "run.shard")
    assert (folder / "predictions.jsonl").read_bytes() == before


def test_an_unknown_shard_value_stops_the_run(server, locomo_mini, tmp_path):
    _refused(_run(tmp_path / "r", server, locomo_mini, tmp_path / "cache", "run.shard=3/2"), "run.shard")
    with pytest.raises(ConfigurationError, match="run.shard"):
        ExperimentSpec.from_mapping(_config_with(run={"shard": "x"}))


def _config_with(**sections: dict[str, Any]) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mem0bench.cli.run import CONFIG_DIR

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = OmegaConf.to_container(compose(config_name="run", overrides=["+exp=rag"]), resolve=True)
    assert isinstance(cfg, dict)
    for name, values in sections.items():
        cfg[name].update(values)
    return cfg


# --- a sweep of shards -------------------------------------------------------------------------------------


def _sweep(tmp_path: Path, server, locomo: Path, *launcher: str) -> Path:
    sweep = tmp_path / "sweep"
    args = [
        "run", "-m", "+exp=rag", "run.shard=1/2,2/2", f"dataset.path={locomo}", "eval.max_questions=3",
        "judge.runs=3", f"hydra.sweep.dir={sweep}", *launcher, *FAST,
    ]  # fmt: skip
    result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    return sweep


def test_a_sweep_of_shards_merges_from_its_folder(runs, server, locomo_mini, tmp_path):
    sweep = _sweep(tmp_path, server, locomo_mini)
    # `status` follows the sweep: every shard, which part it is, what is left.
    status = run_cli(["status", str(sweep)], cli_env("http://127.0.0.1:9/v1", tmp_path / "c"))
    assert status.returncode == 0, status.stderr[-2000:]
    assert "shard     1/2: 1 of the whole's 3 conversations" in status.stdout, status.stdout
    assert "shard     2/2: 2 of the whole's 3 conversations" in status.stdout, status.stdout
    assert "shards    2 of 2 have a run folder; merge them when all are complete" in status.stdout
    # A job not started yet has no folder: the sweep's line names the part still to come.
    partial = tmp_path / "partial"
    shutil.copytree(sweep, partial, ignore=shutil.ignore_patterns("1"))
    shutil.rmtree(partial / "1", ignore_errors=True)
    status = run_cli(["status", str(partial)], cli_env("http://127.0.0.1:9/v1", tmp_path / "c"))
    assert "not started: " in status.stdout, status.stdout
    result = _merge(sweep, "--out", tmp_path / "merged")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_run(tmp_path / "merged", runs["whole"])


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_a_sweep_of_shards_on_a_parallel_launcher(runs, server, locomo_mini, tmp_path, launcher):
    sweep = _sweep(tmp_path, server, locomo_mini, f"hydra/launcher={launcher}")
    result = _merge(sweep, "--out", tmp_path / "merged")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_run(tmp_path / "merged", runs["whole"])


def test_files_every_shard_holds_are_kept_apart(runs, tmp_path):
    # A file each shard writes for itself (a graph server's database, a suite's own figure) is neither
    # mixed nor a reason to refuse: each shard's goes to shards/<K>/; the systems' state merges.
    copies = []
    for name in ("s1", "s2"):
        copy = tmp_path / name
        shutil.copytree(runs[name], copy)
        (copy / "figures.json").write_text(json.dumps({"shard": name}))
        copies.append(copy)
    result = _merge(*copies, "--out", tmp_path / "merged")
    assert result.returncode == 0, result.stderr[-3000:]
    merged = tmp_path / "merged"
    assert json.loads((merged / "shards" / "2" / "figures.json").read_text()) == {"shard": "s2"}
    assert not (merged / "figures.json").exists()
    assert sorted(p.name for p in (merged / "state").iterdir()) == ["mini-1", "mini-2", "mini-3"]
    assert_same_run(merged, runs["whole"])


def test_a_torn_last_line_of_a_shard_is_left_out(runs, tmp_path):
    # A kill mid-write leaves a last line without its newline, which every reader skips; a shard's last
    # process that never reopened the file (nothing more to write to it) leaves it there. Merged, it must
    # stay skipped, not become a damaged line in the middle of the merged file.
    copies = []
    for name in ("s1", "s2"):
        copy = tmp_path / name
        shutil.copytree(runs[name], copy)
        copies.append(copy)
    for file in ("judgements.jsonl", "usage.jsonl"):
        with (copies[0] / file).open("a", encoding="utf-8") as f:
            f.write('{"qid": "torn')
    result = _merge(*copies, "--out", tmp_path / "merged")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_run(tmp_path / "merged", runs["whole"])


def test_longmemeval_haystacks_shard_and_merge(server, tmp_path):
    # LongMemEval's unit of ingestion is a question's haystack; its own figures merge like LOCOMO's.
    data = Path(__file__).parent / "data" / "longmemeval_s_mini.json"
    suite = ("dataset=longmemeval_s", f"dataset.path={data}", "judge.runs=1")
    folders = {}
    for name, extra in [("whole", ()), ("s1", ("run.shard=1/2",)), ("s2", ("run.shard=2/2",))]:
        args = ["run", "+exp=rag", *suite, f"hydra.run.dir={tmp_path / name}", *FAST, *extra]
        result = run_cli(args, cli_env(server.base_url, tmp_path / f"cache-{name}"))
        assert result.returncode == 0, result.stderr[-3000:]
        folders[name] = tmp_path / name
    assert json.loads((folders["s1"] / "run.json").read_text())["shard"]["conversations"]
    result = _merge(folders["s1"], folders["s2"], "--out", tmp_path / "merged")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_run(tmp_path / "merged", folders["whole"])


# --- the memory systems: stores, graphs, saved state; another judge's figures ------------------------------


def _usage_calls(run: Path) -> dict[str, int]:
    """Calls per stage over every process of a run (the start-up probes, paid once a process, left out)."""
    calls: dict[str, int] = {}
    for session in json.loads((run / "usage.json").read_text())["sessions"]:
        for stage, figures in session.get("stages", {}).items():
            if stage != "preflight":
                calls[stage] = calls.get(stage, 0) + int(figures["calls"])
    return calls


def _labels(run: Path) -> list[tuple[Any, ...]]:
    return sorted(
        (r["qid"], r["run"], r.get("label"), r.get("judge_model"), r.get("prompt"))
        for r in read_jsonl(run / "judgements.jsonl")
    )


def _state_files(run: Path) -> dict[str, Any]:
    """The saved memories of every conversation, file by file; a graph's server-side name (which holds the
    run's id, so each shard's graphs stay apart on a shared server) left out."""
    state = run / "state"
    files: dict[str, Any] = {}
    for p in sorted(state.rglob("*")):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".npy"):
            files[str(p.relative_to(state))] = p.read_bytes()
            if p.name == "graph_stream.json":
                files[str(p.relative_to(state))] = {**json.loads(p.read_text()), "graph_name": None}
    return files


@pytest.fixture(scope="module", params=["mem0", "mem0g"])
def memory_runs(request, tmp_path_factory, server, locomo_mini) -> dict[str, Path]:
    """A memory system's whole run and two shards, each shard judged again by another judge afterwards."""
    root = tmp_path_factory.mktemp(f"shards-{request.param}")
    out = {}
    for name, extra in [("whole", ()), ("s1", ("run.shard=1/2",)), ("s2", ("run.shard=2/2",))]:
        args = [
            "run", f"+exp={request.param}", f"dataset.path={locomo_mini}", "eval.max_questions=2",
            "judge.runs=2", f"hydra.run.dir={root / name}", *FAST, *extra,
        ]  # fmt: skip
        env = cli_env(server.base_url, root / f"cache-{name}")
        result = run_cli(args, env)
        assert result.returncode == 0, result.stderr[-3000:]
        rejudged = run_cli(["judge", str(root / name), "judge.prompt=strict", "judge.runs=1", *FAST], env)
        assert rejudged.returncode == 0, rejudged.stderr[-3000:]
        out[name] = root / name
    return out


def test_memory_system_shards_merge_into_the_unsharded_run(memory_runs, tmp_path):
    merged = tmp_path / "merged"
    result = _merge(memory_runs["s1"], memory_runs["s2"], "--out", merged)
    assert result.returncode == 0, result.stderr[-3000:]
    whole = memory_runs["whole"]
    assert_same_run(merged, whole)
    assert _labels(merged) == _labels(whole)
    assert _usage_calls(merged) == _usage_calls(whole)
    # Every conversation's saved memories (snapshots, operation logs, graphs): as the whole run saved them.
    assert _state_files(merged) == _state_files(whole)
    assert any("graph" in name for name in _state_files(whole)) == _is_mem0g(whole)
    # Another judge's figures: recomputed from the merged labels, equal to the whole run's for that judge.
    (folder,) = (whole / "judges").iterdir()
    assert _predictions(merged / "judges" / folder.name) == _predictions(folder)
    assert _metrics(merged / "judges" / folder.name) == _metrics(folder)
    # And `memories`, `status`, `report` read the merged folder as a run.
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "c")
    status = run_cli(["status", str(merged)], env)
    assert status.returncode == 0 and "done" in status.stdout, status.stdout + status.stderr
    memories = run_cli(["memories", str(merged), "--conversation", "mini-1"], env)
    assert memories.returncode == 0, memories.stderr[-2000:]
    assert memories.stdout == run_cli(["memories", str(whole), "--conversation", "mini-1"], env).stdout
    report = run_cli(["report", str(merged), "--out", str(tmp_path / "r")], env)
    assert report.returncode == 0, report.stderr[-2000:]


def _is_mem0g(run: Path) -> bool:
    return "mem0g" in yaml.safe_load((run / "config.yaml").read_text())["method"]["name"]


def test_a_judge_only_some_shards_had_is_refused(memory_runs, tmp_path):
    bare = tmp_path / "s2"
    shutil.copytree(memory_runs["s2"], bare)
    shutil.rmtree(bare / "judges")
    line = _refused(_merge(memory_runs["s1"], bare, "--out", tmp_path / "m"), "was not judged by judges/")
    assert str(bare) in line and not (tmp_path / "m").exists()


# --- what other features leave in a run folder -------------------------------------------------------------


def test_unknown_files_batch_state_and_timings_merge_without_a_crash(runs, tmp_path):
    copies = []
    for k, name in enumerate(("s1", "s2"), start=1):
        copy = tmp_path / name
        shutil.copytree(runs[name], copy)
        manifest = json.loads((copy / "run.json").read_text())
        manifest["timing"] = {
            "ingest": {"wall_s": 10.0 * k, "calls": 100 * k, "chain_bound_s": 4.0 * k},
            "answer": {"wall_s": 3.0, "calls": 5, "cached_calls": k},
            "note": "per stage",
        }
        (copy / "run.json").write_text(json.dumps(manifest))
        (copy / "batches.json").write_text(json.dumps({"open": [f"batch_{name}"]}))
        (copy / "batch_requests.jsonl").write_text(json.dumps({"custom_id": name}) + "\n")
        (copy / "extra").mkdir()
        (copy / "extra" / f"{name}.bin").write_bytes(b"\x00\x01")
        copies.append(copy)
    (copies[0] / "only-here.txt").write_text("one shard's")
    result = _merge(*copies, "--out", tmp_path / "merged")
    assert result.returncode == 0, result.stderr[-3000:]
    merged = tmp_path / "merged"
    assert_same_run(merged, runs["whole"])
    timing = json.loads((merged / "run.json").read_text())["timing"]
    # Calls summed; wall seconds (and every other figure) the slowest shard's: the shards ran side by side.
    assert timing["ingest"] == {"wall_s": 20.0, "calls": 300, "chain_bound_s": 8.0}
    assert timing["answer"] == {"wall_s": 3.0, "calls": 10, "cached_calls": 3}
    assert timing["note"] == "per stage"
    # A shard's batch state stays that shard's, never the merged run's (nothing picks it up again).
    for k in (1, 2):
        assert json.loads((merged / "shards" / str(k) / "batches.json").read_text())["open"] == [
            f"batch_s{k}"
        ]
        assert (merged / "shards" / str(k) / "batch_requests.jsonl").exists()
    assert not (merged / "batches.json").exists() and not (merged / "batch_requests.jsonl").exists()
    assert (merged / "extra" / "s1.bin").exists() and (merged / "extra" / "s2.bin").exists()
    assert (merged / "only-here.txt").read_text() == "one shard's"
