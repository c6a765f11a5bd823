"""A system declares that its contexts are empty by design (`empty_context_expected`), the run records it
in run.json, and aggregation reads that record: no method name decides whether a run of mostly empty
contexts ends with the warning.

The pre-24 run folders (tests/test_rundir_before_24.py) carry no record and aggregate byte for byte as
before; that test is the third leg of this one.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from mem0bench.data.model import Conversation, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.settings import LLMSettings
from mem0bench.memory.base import (
    IngestReport,
    RetrievedContext,
    SystemBase,
    SystemContext,
    expects_empty_context,
)
from mem0bench.pipeline.attempt import Attempt, RunOptions
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.statistics import BootstrapSettings
from mem0bench.pipeline.summary import print_summary
from mem0bench.rundir.directory import RunDirectory, write_json
from mem0bench.systems.baselines import RAG, NoMemory
from tests.test_pipeline_units import answer

WARNING = "empty retrieved context"


class Silent(SystemBase):
    """A user's own system that keeps nothing, and says so."""

    empty_context_expected = True

    def __init__(self, *, name: str = "silent", context: SystemContext) -> None:
        super().__init__()
        self.name = name

    async def ingest(self, conversation: Conversation) -> IngestReport:
        return IngestReport(sample_id=conversation.sample_id, memory_tokens=None)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        return RetrievedContext(kind="none", text="", tokens=0, search_latency_s=None, items=0)


class Forgetful(Silent):
    """The same empty contexts without the declaration: a system that lost what it should have kept."""

    empty_context_expected = False


class NotASystemBase:
    """A bring-your-own system that does not inherit SystemBase and says nothing."""


def test_the_declaration_is_read_from_the_class_with_a_default() -> None:
    assert expects_empty_context(NoMemory(context=None))  # type: ignore[arg-type]
    assert expects_empty_context(Silent(context=None))  # type: ignore[arg-type]
    assert not expects_empty_context(Forgetful(context=None))  # type: ignore[arg-type]
    assert not RAG.empty_context_expected
    assert not expects_empty_context(NotASystemBase())


def _finish(run: Path, manifest: dict[str, object], made: bool = False) -> tuple[dict, str]:
    """A run folder of four answered questions, all with empty contexts, and `manifest` as its run.json:
    aggregate it as the run's end does, and print the summary. `made`: the folder exists already."""
    run.mkdir(exist_ok=made)
    write_json(run / "run.json", manifest)
    rows = [answer(f"q{i}", "no idea", "Paris", context_tokens=0, context_items=0) for i in range(4)]
    (run / "answers.jsonl").write_text("".join(json.dumps(a.to_dict()) + "\n" for a in rows))
    client = LLMClient.from_settings(LLMSettings(base_url="http://127.0.0.1:9/v1", check_models=False))
    rundir = RunDirectory(run)
    attempt = Attempt(
        rundir=rundir, client=client, judge=JudgeSettings(model="gpt-4o-mini", runs=1),
        options=RunOptions(progress=False, bootstrap=BootstrapSettings(replicates=20)),
        method_name=str(manifest.get("method")), questions={},
    )  # fmt: skip
    outcome = attempt.finish()
    out = io.StringIO()
    print_summary(outcome, rundir, file=out)
    rundir.close()
    asyncio.run(client.aclose())
    return json.loads((run / "metrics.json").read_text()), out.getvalue()


@pytest.mark.parametrize("method", ["no_memory", "my_own"])
def test_a_run_that_recorded_the_declaration_gets_no_warning(method: str, tmp_path: Path) -> None:
    metrics, printed = _finish(tmp_path / "run", {"method": method, "empty_context_expected": True})
    assert metrics["empty_contexts"] == {"n": 4, "of": 4, "share": 1.0, "expected": True}
    assert "run directory:" in printed and WARNING not in printed


@pytest.mark.parametrize("method", ["no_memory", "my_own"])
def test_a_run_without_the_record_gets_the_warning_whatever_its_name(method: str, tmp_path: Path) -> None:
    """The method's name no longer silences it: a run called no_memory whose system did not declare
    empty contexts is warned of like any other."""
    metrics, printed = _finish(tmp_path / "run", {"method": method})
    assert metrics["empty_contexts"] == {"n": 4, "of": 4, "share": 1.0}  # no new key for undeclared runs
    assert f"warning: 4 of 4 answered questions had an {WARNING}" in printed


@pytest.mark.parametrize(
    "target, warned",
    [
        ("baselines.no_memory.NoMemory", False),  # the path issue 21's branch wrote, moved since
        ("mem0bench.systems.baselines.no_memory.NoMemory", False),
        ("tests.test_empty_context_declared.Silent", False),
        ("baselines.rag.RAG", True),
        ("tests.test_empty_context_declared.Forgetful", True),
        ("nowhere.to.be.Found", True),  # not importable here: nothing declared
    ],
)
def test_an_older_folder_without_the_record_reads_the_class_its_config_names(
    target: str, warned: bool, tmp_path: Path
) -> None:
    """A run folder written before run.json recorded the declaration: its config.yaml's class decides,
    as the run would have declared it (the method name plays no part)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(f"method:\n  _target_: {target}\n  name: no_memory\n")
    metrics, printed = _finish(run, {"method": "no_memory"}, made=True)
    assert (WARNING in printed) is warned
    assert ("expected" in metrics["empty_contexts"]) is not warned


@pytest.mark.slow
@pytest.mark.parametrize("system, warned", [("Silent", False), ("Forgetful", True)])
def test_a_user_system_declares_it_end_to_end(system: str, warned: bool, tmp_path: Path, locomo_mini) -> None:
    """The real command with a user-defined system: the declaration reaches run.json and metrics.json, and
    the end of the run warns only for the system that did not declare it."""
    from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
    from devtools.standin.server import StandinServer

    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=no_memory", f"method._target_=tests.test_empty_context_declared.{system}",
        f"method.name={system.lower()}", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
        "eval.max_questions=3", "judge.runs=1", "eval.latency=inline", f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout + result.stderr
    manifest = json.loads((run_dir / "run.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["empty_contexts"]["n"] == metrics["empty_contexts"]["of"] == 3
    assert ("empty_context_expected" in manifest) is not warned
    assert manifest["bound"] is None  # recorded either way: a user's system declares no bound here
    assert metrics["empty_contexts"].get("expected", False) is not warned
    assert (WARNING in printed) is warned, printed[-2000:]
