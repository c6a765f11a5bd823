"""cognee: cognee 1.6.x in its own venv (made by `setup-system cognee`, from the pinned requirements), as a
service the adapter starts, reached over the HTTP system protocol. End to end through the real CLI, the
real venv and the real service against the stand-in, which answers cognee's structured requests (its
knowledge-graph extraction and summaries, asked with a JSON schema) from the request's own schema and
words (devtools/standin's json_schema generation: nothing of LOCOMO)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, files_containing, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.systems.external.own_env.process import KIT_DIR

SERVICE = Path(__file__).resolve().parents[1] / "mem0bench/systems/external/cognee/service.py"


def _service_module():
    """service.py's pure functions (the windows), importable here with the kit on the path."""
    import importlib.util

    sys.path.insert(0, str(KIT_DIR))
    try:
        spec = importlib.util.spec_from_file_location("cognee_service_under_test", SERVICE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(KIT_DIR))


def _turns(n: int, caption_at: int | None = None) -> list[dict[str, object]]:
    return [
        {"turn_id": f"D1:{i + 1}", "speaker": "AB"[i % 2], "text": f"line {i + 1}",
         "caption": "a dog" if i == caption_at else None}
        for i in range(n)
    ]  # fmt: skip


def test_windows_are_the_evals():
    # cognee's preprocess.build_session_windows: windows of 6, a tail shorter than max(2, 6 // 3) = 2
    # turns folded into the window before it, a dated header, "(part i of n)" only when there are parts.
    service = _service_module()
    sizes = {n: [len(w["turn_ids"]) for w in service.session_windows(["A", "B"], 3, "1 May", _turns(n), 6)]
             for n in (1, 5, 6, 7, 8, 13, 14)}  # fmt: skip
    assert sizes == {1: [1], 5: [5], 6: [6], 7: [7], 8: [6, 2], 13: [6, 7], 14: [6, 6, 2]}
    (one,) = service.session_windows(["A", "B"], 3, "1:56 pm on 8 May, 2023", _turns(2, caption_at=1), 6)
    assert one["text"].splitlines() == [
        "Session 3 of the conversation between A and B, which took place at 1:56 pm on 8 May, 2023.",
        "A: line 1",
        "B: line 2 [shares a photo: a dog]",
    ]
    first, _ = service.session_windows(["A", "B"], 2, "today", _turns(8), 6)
    assert first["text"].startswith(
        "Session 2 of the conversation between A and B, which took place at today (part 1 of 2)."
    )
    # A caption the harness folded into the text (dataset.fold_captions) reads as the authors' all the same.
    folded = {"speaker": "B", "text": "line 2 [shared an image: a dog]", "caption": "a dog"}
    assert service.format_turn(folded) == "B: line 2 [shares a photo: a dog]"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A cache folder holding the venv, made once through the CLI (the user's one command)."""
    folder = tmp_path_factory.mktemp("cognee-cache")
    made = run_cli(["setup-system", "cognee", "--quiet"], cli_env("", folder), timeout=1800)
    assert made.returncode == 0, made.stderr[-3000:]
    assert "cognee 1.6.5" in made.stdout
    return folder


def test_without_the_venv_one_line_names_the_command(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        args = ["run", "+exp=cognee", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                f"hydra.run.dir={tmp_path / 'run'}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "empty"))
    assert result.returncode != 0
    assert "python -m mem0bench setup-system cognee" in result.stderr and "Traceback" not in result.stderr


def _documents(conversation: dict[str, object]) -> int:
    """The eval's documents of a conversation: its overview and each session's windows of 6 turns."""
    service = _service_module()
    total = 1
    for key, turns in conversation.items():
        if key.startswith("session_") and not key.endswith("date_time") and isinstance(turns, list) and turns:
            total += len(service.session_windows(["A", "B"], 1, "", [
                {"turn_id": str(i), "speaker": "A", "text": "x"} for i in range(len(turns))], 6))  # fmt: skip
    return total


@pytest.mark.slow
def test_conv26_end_to_end(cache, tmp_path, locomo_path):
    with StandinServer(api_key=TEST_KEY) as server:
        run_dir = tmp_path / "run"
        args = ["run", "+exp=cognee", f"dataset.path={locomo_path}", "dataset.conversations=[conv-26]",
                "eval.max_questions=6", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, cache), timeout=3000)
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
            # cognee's hybrid context: 20 dated session windows (then entities and facts of its graph; the
            # predictions keep the context's beginning only).
            assert (
                row["context"].startswith("## Relevant passages\nSession ")
                and "took place at" in row["context"]
            )
            assert row["context_tokens"] > 2000 and row["context_items"] == 1 and row["context_dia_ids"]
        llm = json.loads((run_dir / "metrics.json").read_text())["tokens"]["llm"]
        conversation = next(c for c in json.loads(locomo_path.read_text()) if c["sample_id"] == "conv-26")
        documents = _documents(conversation["conversation"])
        # cognee's calls came through the bridge, under the adapter's stages: per document (a window or
        # the overview) one graph extraction and one summary; per question one query embedding.
        assert llm["cognee_ingest"]["calls"] == 2 * documents
        assert llm["cognee_ingest_embedding"]["calls"] > 0
        assert llm["cognee_search_embedding"]["calls"] == 6
        assert "cognee_search" not in llm  # answer_by=context: cognee completes nothing
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["system_versions"]["cognee"] == "1.6.5"
        assert files_containing(run_dir, TEST_KEY) == []

        paid = server.count("chat") + server.count("embeddings")
        again = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == paid  # resumed: nothing asked again


@pytest.mark.slow
def test_cognee_completes_the_answer_when_asked(cache, tmp_path, locomo_mini):
    # answer_by=cognee: cognee's own completion (its eval's answer prompt) is the context, one search call
    # a question under cognee_search, and our answer prompt is told to repeat it.
    with StandinServer(api_key=TEST_KEY) as server:
        run_dir = tmp_path / "run"
        args = ["run", "+exp=cognee", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                "eval.max_questions=3", "judge.runs=1", "method.answer_by=cognee", f"hydra.run.dir={run_dir}",
                *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert result.returncode == 0, result.stderr[-3000:]
        # cognee's completion carried its eval's answer prompt (qa_prompts/unified.txt) as the system prompt.
        completions = [
            body for endpoint, body in server.requests
            if endpoint == "chat" and "using only the retrieved conversation context" in json.dumps(body)
        ]  # fmt: skip
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 3
    for row in rows:
        assert row["context"].startswith("The memory system answered this question itself.")
    llm = json.loads((run_dir / "metrics.json").read_text())["tokens"]["llm"]
    assert llm["cognee_search"]["calls"] == 3
    # one completion per question (the latency pass asks each question once more: the same request)
    assert len({json.dumps(body["messages"], sort_keys=True) for body in completions}) == 3


@pytest.mark.slow
def test_check_system_holds(cache):
    checked = run_cli(
        ["check-system", "mem0bench.systems.external.cognee.Cognee"], cli_env("", cache), timeout=1800
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "9 of 9 checks hold" in checked.stdout


def test_config_keys_are_classified():
    # How the service is reached is result-neutral; what cognee builds re-ingests; its retrieval settings
    # and who completes the answer re-answer only.
    from mem0bench.pipeline.config_change import Reach, is_neutral, reach_of

    for key in ("timeout_s", "max_retries", "max_concurrency", "workers"):
        assert is_neutral(f"method.{key}")
    for key in ("window_turns", "chunk_size", "overview", "self_improvement", "temperature"):
        assert not is_neutral(f"method.{key}") and reach_of(f"method.{key}") == Reach.INGEST
    for key in ("chunks_top_k", "entities_top_k", "facts_top_k", "max_edges_per_entity", "answer_by"):
        assert not is_neutral(f"method.{key}") and reach_of(f"method.{key}") == Reach.ANSWER


def test_cost_plan_counts_two_calls_per_document(locomo_mini):
    from mem0bench.data.loader import load_dataset
    from mem0bench.systems.external.cognee.costs import (
        FIXED_PROMPT_PER_DOCUMENT,
        cognee_cost_plan,
        window_sizes,
    )

    assert [window_sizes(n, 6) for n in (1, 7, 8, 13, 14)] == [[1], [7], [6, 2], [6, 7], [6, 6, 2]]
    dataset = load_dataset(locomo_mini)
    method = {"window_turns": 6, "chunks_top_k": 20, "entities_top_k": 20, "facts_top_k": 20}
    plan = cognee_cost_plan(method, dataset, 4)
    documents = sum(1 + sum(len(window_sizes(len(s.turns), 6)) for s in c.sessions if s.turns)
                    for c in dataset.conversations)  # fmt: skip
    lines = {line.what: line for line in plan.lines}
    assert lines["graph extraction + summary"].calls == 2 * documents
    assert lines["graph extraction + summary"].prompt > documents * FIXED_PROMPT_PER_DOCUMENT
    assert lines["query embedding"].calls == 4 and "cognee's completion" not in lines
    assert plan.context_tokens > 20 * 20  # 20 passages of a window each, then entities and facts
    completing = cognee_cost_plan({**method, "answer_by": "cognee"}, dataset, 4)
    assert {line.what: line for line in completing.lines}["cognee's completion"].calls == 4
    assert completing.context_tokens < plan.context_tokens  # our answer prompt sees cognee's answer only
