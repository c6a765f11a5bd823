"""Every system on every suite: Mem0^g and the external adapters run a LongMemEval mini haystack (User and
Assistant, one question per conversation, a question date) and a grouped Locomo-Plus copy (two named
speakers, cue sessions stitched in, the trigger asked as the question) through the real CLI against the
stand-in. rag, full_context and mem0 are covered by test_suites_e2e.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, REPO, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.amem_replies import amem_replies
from devtools.standin.langmem_replies import reply as langmem_reply
from devtools.standin.mem0_oss_replies import mem0_handler
from devtools.standin.server import StandinServer
from tests.falkordb_server import FalkorDBServer
from tests.test_suites_e2e import SUITE_ARGS
from tests.test_your_system import KEYWORD, reference_service  # noqa: F401 - registers the fixture

pytestmark = pytest.mark.slow

# Two or three questions each: an abstention question and a fact from the user's side; a grouped copy of a
# short host with three cues.
SCOPE = {
    "longmemeval_s": ["dataset.conversations=[e47becba,gpt4_2f8be40d_abs]"],
    "locomo_plus": ["dataset.conversations=[mini-3+plus0]"],
}
QUESTIONS = {"longmemeval_s": 2, "locomo_plus": 3}
HANDLERS: dict[str, Callable[[], Any] | None] = {
    "mem0g": None,
    "mem0g_falkordb": None,
    "mem0_oss": mem0_handler,
    "mem0_oss_graph": mem0_handler,
    "langmem": lambda: langmem_reply,
    "amem": lambda: amem_replies,
    "chatgpt_memory_emulation": None,
    "zep_graphiti": None,
    "http_system": None,
    "keyword_memory": None,  # the example of docs/your_system.md, from its own folder
}
GRAPH_SERVER = ("zep_graphiti", "mem0g_falkordb")


@pytest.mark.parametrize("suite", ["longmemeval_s", "locomo_plus"])
@pytest.mark.parametrize(
    "exp", [pytest.param(e, marks=pytest.mark.falkordb) if e in GRAPH_SERVER else e for e in HANDLERS]
)
def test_every_system_runs_every_suite(exp: str, suite: str, tmp_path: Path, request: Any) -> None:
    extra: list[str] = []
    flags: list[str] = []
    env_paths: list[Path] = []
    if exp in GRAPH_SERVER:
        falkordb: FalkorDBServer = request.getfixturevalue("falkordb_server")
        extra = [f"graph.host={falkordb.host}", f"graph.port={falkordb.port}"]
    if exp == "http_system":
        extra = [f"method.url={request.getfixturevalue('reference_service').url}"]
    if exp == "keyword_memory":
        flags, env_paths = ["--config-dir", str(KEYWORD)], [KEYWORD, REPO]
    run_dir = tmp_path / "run"
    args = [
        "run", *flags, f"+exp={exp}", f"dataset={suite}", *SUITE_ARGS[suite], *SCOPE[suite], "judge.runs=1",
        "eval.latency=inline", f"hydra.run.dir={run_dir}", *FAST, *extra,
    ]  # fmt: skip
    make = HANDLERS[exp]
    with StandinServer(api_key=TEST_KEY) as server:
        if make is not None:
            server.set_handler(make())
        env = cli_env(server.base_url, tmp_path / "cache")
        if env_paths:
            env["PYTHONPATH"] = ":".join(map(str, env_paths))
        result = run_cli(args, env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "complete"
    ingest = read_jsonl(run_dir / "ingest.jsonl")
    assert ingest and all(row.get("failures", 0) == 0 for row in ingest), ingest
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == QUESTIONS[suite]
    assert all(not r.get("failure") and r["prediction"] for r in rows), rows
    # Something the system stored reached the answer prompt for at least one question.
    assert any(r["context_tokens"] > 0 for r in rows), [r.get("context") for r in rows]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    if suite == "longmemeval_s":
        assert set(metrics["categories"]) == {"single_session_user", "abstention"}
        assert metrics["session_recall"] is not None
    else:
        assert set(metrics["categories"]) == {"cognitive"}
        assert all(set(r["judge"]) <= {"CORRECT", "PARTIAL", "WRONG"} for r in rows)
