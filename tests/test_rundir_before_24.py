"""Run directories written before issue 24 moved the run-directory format still read the same.

tests/fixtures/rundir_before_24/ holds two small runs (mem0 and rag on one conversation of the mini
fixture, two questions, two judge runs) made against the stand-in server by the code of commit c266a87,
before the move. `expected.json` beside them holds what `status`, `report` and the loaders made of them
then; this test reads the folders with today's code and compares. The run files are as written, except
that the folder they were written in (/tmp/rundir_before_24) is replaced by the test's copy.

To record expected.json again (only when a figure is meant to change): `python -m tests.test_rundir_before_24`.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "rundir_before_24"
WRITTEN_IN = "/tmp/rundir_before_24"
RUNS = ("mem0", "rag", "rag_partial")


def _copy(tmp: Path) -> Path:
    """The fixture in `tmp`, its recorded paths pointing at the copy."""
    root = tmp / "rundir_before_24"
    shutil.copytree(FIXTURE, root)
    for path in root.rglob("*"):
        if path.suffix in (".json", ".yaml") and path.is_file():
            path.write_text(path.read_text(encoding="utf-8").replace(WRITTEN_IN, str(root)), encoding="utf-8")
    # A run stopped half-way, for `status`: rag with its second answer and that answer's labels gone.
    partial = root / "rag_partial"
    shutil.copytree(root / "rag", partial)
    (partial / "metrics.json").unlink()
    (partial / "predictions.jsonl").unlink()
    answers = (partial / "answers.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (partial / "answers.jsonl").write_text(answers[0], encoding="utf-8")
    kept = json.loads(answers[0])["qid"]
    labels = (partial / "judgements.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (partial / "judgements.jsonl").write_text("".join(j for j in labels if json.loads(j)["qid"] == kept))
    return root


def _plain(value: Any) -> Any:
    """JSON-comparable: tuples as lists, NaN as None, floats rounded (9 places)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 9)
    return value


def _status(run: Path) -> dict[str, Any]:
    from mem0bench.status.reader import read_status

    status = read_status(run)
    return {
        "method": status.method,
        "recorded": status.recorded,
        "stages": [[s.stage, s.done, s.total, s.unit, list(s.left)] for s in status.stages],
        "open_failures": [[*key, n] for key, n in status.open_failures.items()],
        "spent_usd": status.spent_usd,
        "processes": status.processes,
        "left": None if status.left is None else [status.left.calls, status.left.usd],
        "left_note": status.left_note,
        "working": status.process.working,
        "finished": status.finished,
        "scope_error": status.scope_error,
    }


def _loaders(run: Path) -> dict[str, Any]:
    from mem0bench.rundir.directory import RunDirectory
    from mem0bench.rundir.resume import PreviousWork
    from mem0bench.rundir.schema import read_metrics, read_predictions

    previous = PreviousWork.read(RunDirectory(run))
    return {
        "answers": {qid: a.to_dict() for qid, a in sorted(previous.answers.items())},
        "judgements": [j.to_dict() for j in previous.judgements],
        "ingests": {sid: i.to_dict() for sid, i in sorted(previous.ingests.items())},
        "usage_sessions": len(previous.usage_sessions),
        "metrics": read_metrics(run / "metrics.json").to_dict(),
        "predictions": [r.to_dict() for r in read_predictions(run / "predictions.jsonl")],
    }


def _report(root: Path) -> dict[str, Any]:
    from mem0bench.report.collect import load_runs
    from mem0bench.report.identity import runs_table
    from mem0bench.report.tables import table1, table2

    runs = load_runs([root])
    tables = {
        "runs": runs_table(runs, numeric=True),
        "table1": table1(runs, numeric=True),
        "table1_text": table1(runs),
        "table2": table2(runs, numeric=True),
        "table2_text": table2(runs),
    }
    out: dict[str, Any] = {"found": [str(r.path.relative_to(root)) for r in runs]}
    for name, df in tables.items():
        df = df.drop(columns=[c for c in df.columns if c in ("folder", "dataset")])  # paths of the copy
        out[name] = {"columns": list(df.columns), "rows": df.astype(object).values.tolist()}
    return out


def observe(root: Path) -> dict[str, Any]:
    return _plain(
        {
            "status": {name: _status(root / name) for name in RUNS},
            "loaders": {name: _loaders(root / name) for name in RUNS[:2]},
            "report": _report(root),
        }
    )


def test_a_run_directory_written_before_the_move_reads_the_same(tmp_path: Path) -> None:
    expected = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
    seen = observe(_copy(tmp_path))
    for part in ("status", "loaders", "report"):
        assert seen[part] == expected[part], part


if __name__ == "__main__":  # records expected.json from the fixture, with this checkout's code
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        figures = observe(_copy(Path(tmp)))
    (FIXTURE / "expected.json").write_text(
        json.dumps(figures, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    sys.exit(0)


ADDED_SINCE = ("sampling", "invented_ids", "guarded_updates", "rejected_updates")
"""metrics.json keys that later issues added (19: sampling parameters; 20: memory-decision counts): new
figures read from the same rows, beside the old ones, which must not move."""


def _spread_labelled(old: Any) -> Any:
    """The old metrics.json with issue 33's label of J's spread (`std_ddof: 0`, population std) in every J
    block. Every spread these runs wrote is 0 (both judge runs agree on every label), the same under either
    definition, so only the label is new."""
    if isinstance(old, dict):
        out = {k: _spread_labelled(v) for k, v in old.items()}
        if "per_run" in old and "std" in old:
            assert old["std"] == 0.0, "a non-zero spread: recompute it as the population std"
            out["std_ddof"] = 0
        return out
    return [_spread_labelled(v) for v in old] if isinstance(old, list) else old


def test_aggregating_its_rows_again_writes_the_same_results(tmp_path: Path) -> None:
    """The aggregate step run again over the old rows (every label in place: no call is made) writes the
    predictions.jsonl and metrics.json the old code wrote, figure for figure."""
    import asyncio

    from mem0bench.data import load_dataset
    from mem0bench.llm.client import LLMClient
    from mem0bench.llm.settings import LLMSettings
    from mem0bench.pipeline.attempt import Attempt, RunOptions
    from mem0bench.pipeline.judge import JudgeSettings
    from mem0bench.pipeline.statistics import BootstrapSettings
    from mem0bench.rundir.directory import RunDirectory

    root = _copy(tmp_path)
    dataset = load_dataset(root / "conv30_small.json")
    for name in RUNS[:2]:
        run = root / name
        before = {f: (run / f).read_text(encoding="utf-8") for f in ("metrics.json", "predictions.jsonl")}
        qids = [json.loads(line)["qid"] for line in before["predictions.jsonl"].splitlines()]
        questions = {c.sample_id: [q for q in c.questions if q.qid in qids] for c in dataset.conversations}
        client = LLMClient.from_settings(LLMSettings(base_url="http://127.0.0.1:9/v1", check_models=False))
        rundir = RunDirectory(run)
        attempt = Attempt(
            rundir=rundir, client=client, judge=JudgeSettings(model="gpt-4o-mini", runs=2),
            options=RunOptions(progress=False, bootstrap=BootstrapSettings(replicates=200)),
            method_name=name, questions=questions,
        )  # fmt: skip
        attempt.finish()
        rundir.close()
        asyncio.run(client.aclose())
        assert (run / "predictions.jsonl").read_text(encoding="utf-8") == before["predictions.jsonl"], name
        old = _spread_labelled(json.loads(before["metrics.json"]))
        new = json.loads((run / "metrics.json").read_text())
        assert set(new) - set(old) <= set(ADDED_SINCE), f"{name}: {sorted(set(new) - set(old))}"
        assert {k: v for k, v in new.items() if k not in ADDED_SINCE} == old, f"{name}/metrics.json"


@pytest.mark.slow
def test_rejudging_it_rewrites_the_same_results_and_config(tmp_path: Path) -> None:
    """`judge RUN_DIR` with the run's own judge and every label in place: no label is asked for, the
    rows and scores are the old ones, and config.yaml (read and written again) is the file the old code
    wrote."""
    from devtools.e2e import TEST_KEY, cli_env, read_jsonl, run_cli
    from devtools.standin.server import StandinServer

    root = _copy(tmp_path)
    with StandinServer(api_key=TEST_KEY, latency_ms=1) as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        for name in RUNS[:2]:
            run = root / name
            before = {
                f: (run / f).read_text(encoding="utf-8")
                for f in ("metrics.json", "config.yaml", "judgements.jsonl")
            }
            rows = read_jsonl(run / "predictions.jsonl")
            done = run_cli(["judge", str(run)], env)
            assert done.returncode == 0, done.stderr[-2000:]
            # Re-judging orders rows as answers.jsonl does (the run, as the dataset does), so the bootstrap
            # intervals may differ; the rows and the scores do not.
            by_qid = sorted(read_jsonl(run / "predictions.jsonl"), key=lambda r: r["qid"])
            assert by_qid == sorted(rows, key=lambda r: r["qid"])
            old = _spread_labelled(json.loads(before["metrics.json"]))
            new = json.loads((run / "metrics.json").read_text())
            for key in ("f1", "bleu1", "locomo_f1", "judge"):
                assert new["overall"][key] == old["overall"][key], key
            assert (run / "config.yaml").read_text(encoding="utf-8") == before["config.yaml"]
