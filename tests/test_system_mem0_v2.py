"""mem0_v2: mem0ai 2.x in its own venv (made by `setup-system mem0_v2`, from the pinned requirements),
as a service the adapter starts, reached over the HTTP system protocol. End to end through the real CLI,
the real venv and the real service against the stand-in, which answers mem0 2.x's ADD-only extraction
prompt in its format ({"memory": [{"text": ...}]}: words of the request, nothing of LOCOMO)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, files_containing, read_jsonl, run_cli
from devtools.standin.server import StandinServer, Text, _phrase

EXTRACTION_MARK = "## New Messages"


def _handler(endpoint: str, body: dict[str, Any]) -> Any:
    fmt = body.get("response_format") or {}
    if endpoint != "chat" or not (isinstance(fmt, dict) and fmt.get("type") == "json_object"):
        return None
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
    if EXTRACTION_MARK not in text:
        return None
    new = text.rsplit(EXTRACTION_MARK, 1)[1].split("##", 1)[0]
    words = re.findall(r"[A-Za-z0-9']+", new) or ["nothing"]
    rng = random.Random(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())
    return Text(
        json.dumps({"memory": [{"text": _phrase(rng, words, 3, 7)} for _ in range(rng.randint(1, 2))]})
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A cache folder holding the venv, made once through the CLI (the user's one command)."""
    folder = tmp_path_factory.mktemp("mem0v2-cache")
    made = run_cli(["setup-system", "mem0_v2", "--quiet"], cli_env("", folder), timeout=900)
    assert made.returncode == 0, made.stderr[-3000:]
    assert "mem0ai 2.2.1" in made.stdout
    return folder


def test_without_the_venv_one_line_names_the_command(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        args = ["run", "+exp=mem0_v2", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                f"hydra.run.dir={tmp_path / 'run'}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "empty"))
    assert result.returncode != 0
    assert "python -m mem0bench setup-system mem0_v2" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_conv26_end_to_end(cache, tmp_path, locomo_path):
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(_handler)
        run_dir = tmp_path / "run"
        args = ["run", "+exp=mem0_v2", f"dataset.path={locomo_path}", "dataset.conversations=[conv-26]",
                "eval.max_questions=6", "judge.runs=1", "method.threshold=0.0", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr

        (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
        assert (
            ingest["failures"] == 0
            and ingest["details"]["sessions"] == ingest["details"]["sessions_added"] == 19
        )
        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert len(rows) == 6
        for row in rows:
            assert (
                row["context"].startswith("Memories of Caroline:\n- [")
                and "Memories of Melanie:" in row["context"]
            )
            assert row["context_items"] > 0 and row["context_dia_ids"]
        llm = json.loads((run_dir / "metrics.json").read_text())["tokens"]["llm"]
        turns = 419
        # mem0's calls came through the bridge, under the adapter's stages: one extraction per add.
        assert llm["mem0_v2_ingest"]["calls"] >= turns and llm["mem0_v2_ingest"]["prompt"] > 7000 * turns
        assert llm["mem0_v2_ingest_embedding"]["calls"] > 0
        assert llm["mem0_v2_search_embedding"]["calls"] == 2 * 6
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["system_versions"]["mem0ai"] == "2.2.1"
        assert files_containing(run_dir, TEST_KEY) == []

        paid = server.count("chat") + server.count("embeddings")
        again = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == paid  # resumed: nothing asked again


@pytest.mark.slow
def test_check_system_holds(cache):
    # The protocol's checklist on the built-in conversation, through the real venv and service (threshold
    # 0: the stand-in's embeddings are not semantic, and mem0's default 0.1 would filter every memory).
    checked = run_cli(
        ["check-system", "mem0bench.systems.external.mem0_v2.Mem0V2", "threshold=0.0"],
        cli_env("", cache),
        timeout=900,
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "9 of 9 checks hold" in checked.stdout


def test_config_keys_are_classified():
    # How the service is reached is result-neutral; what mem0 computes (and what is searched) re-ingests.
    from mem0bench.pipeline.config_change import Reach, is_neutral, reach_of

    for key in ("timeout_s", "max_retries", "max_concurrency", "workers"):
        assert is_neutral(f"method.{key}")
    for key in ("batch_size", "top_k", "threshold", "harness_instructions", "extraction_date", "temperature"):
        assert not is_neutral(f"method.{key}") and reach_of(f"method.{key}") == Reach.INGEST


def test_cost_plan_counts_one_extraction_per_add(locomo_mini):
    from mem0bench.data.loader import load_dataset
    from mem0bench.systems.external.mem0_v2.costs import EXTRACT_PROMPT_TOKENS, mem0_v2_cost_plan

    dataset = load_dataset(locomo_mini)
    plan = mem0_v2_cost_plan({"batch_size": 2, "top_k": 30}, dataset, 4)
    adds = sum(2 * -(-len(s.turns) // 2) for c in dataset.conversations for s in c.sessions)
    lines = {line.what: line for line in plan.lines}
    assert lines["additive extraction"].calls == adds
    assert lines["additive extraction"].prompt > adds * EXTRACT_PROMPT_TOKENS
    assert "update decisions" not in lines  # 2.x only adds
    assert lines["query embeddings x2"].calls == 8
