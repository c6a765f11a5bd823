"""Every experiment end to end against a real llama.cpp server (llama-cpp-python[server]), no download.

The model is written by the test (tests/tiny_gguf.py): a bigram table over bytes, so its replies are
meaningless but arrive through the server's real API: chat completions, forced tool calls and JSON mode
under the server's grammar, mean-pooled embeddings, its context limit and its error replies. What is
checked is the plumbing: every run completes with every question answered and judged, and each server
difference stops the run in preflight with one line naming the setting, or is a counted failure.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from devtools.e2e import FAST, cli_env, read_jsonl, run_cli
from tests.tiny_locomo import write_tiny_locomo

# Deselected by default (pyproject.toml); selected with -m llamacpp, they fail without the server: never skip.
pytestmark = [pytest.mark.slow, pytest.mark.llamacpp]

# The server answers one request at a time: few in flight, and a generous timeout for the queue.
SERVER = [
    "llm.model=tiny", "embedder.model=tiny", "judge.model=tiny", "llm.max_concurrency=2",
    "llm.timeout_s=300", "llm.max_tokens=512", "judge.runs=2",
]  # fmt: skip


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("llama-cpp-python[server] is not installed: pip install -e '.[llamacpp]'", pytrace=False)
    from tests.llamacpp_server import LlamaCppServer

    folder = tmp_path_factory.mktemp("llamacpp")
    with LlamaCppServer(folder) as server:
        yield {"server": server, "data": write_tiny_locomo(folder / "tiny.json"), "folder": folder}


def _run(llama: dict, run_dir: Path, *overrides: str) -> tuple[int, str, Path]:
    args = ["run", f"dataset.path={llama['data']}", f"hydra.run.dir={run_dir}", *FAST, *SERVER, *overrides]
    env = cli_env(llama["server"].base_url, llama["folder"] / "cache", key=None)
    result = run_cli(args, env, timeout=1500)
    return result.returncode, result.stderr, run_dir


# llm.structured=json_object for the memory systems, judge.mode=tool for the judge: both of the modes the
# server takes are used in every run.
@pytest.mark.parametrize(
    "exp, extra",
    [
        ("mem0", []),
        ("mem0g", []),
        ("rag", ["method.chunk_size=128"]),
        ("full_context", []),
        ("smoke", ["dataset.conversations=[tiny-1,tiny-2]", "embedder.model=all-MiniLM-L6-v2"]),
    ],
)
def test_every_experiment_runs_against_llama_cpp(llama, tmp_path, exp, extra):
    code, err, run_dir = _run(
        llama, tmp_path / exp, f"+exp={exp}", "llm.structured=json_object", "judge.mode=tool", *extra
    )
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert not any(metrics["failures"].values()), metrics["failures"]
    rows = read_jsonl(run_dir / "predictions.jsonl")
    expected = 10 if exp == "smoke" else 12  # smoke: 5 questions a conversation
    assert len(rows) == expected
    for row in rows:
        assert row["prediction"] and row["failure"] is None
        assert row["judge"] and None not in row["judge"]  # every judge run gave a label
    usage = json.loads((run_dir / "usage.json").read_text())
    assert usage  # the server's own token counts were recorded
    if exp in ("mem0", "mem0g"):
        ingest = read_jsonl(run_dir / "ingest.jsonl")
        assert {r["sample_id"] for r in ingest} == {"tiny-1", "tiny-2"} and not any(
            r.get("failed") for r in ingest
        )


@pytest.mark.parametrize(
    "overrides, setting",
    [(["llm.structured=json_schema"], "llm.structured"), (["judge.mode=json_schema"], "judge.mode")],
)
def test_json_schema_mode_is_refused_in_preflight_naming_the_setting(llama, tmp_path, overrides, setting):
    code, err, run_dir = _run(llama, tmp_path / "run", "+exp=rag", *overrides)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err[-3000:]
    assert lines[0].startswith("error: ") and f"{setting}=json_schema" in lines[0]
    assert f"set {setting}=tool" in lines[0]  # the first mode the server did accept
    assert not (run_dir / "answers.jsonl").exists()


def test_embeddings_without_pooling_are_refused_in_preflight(llama, tmp_path):
    code, err, _ = _run(llama, tmp_path / "run", "+exp=rag", "embedder.model=tiny-nopool")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err[-3000:]
    assert "per-token vectors" in lines[0] and "--pooling mean" in lines[0]


def test_a_prompt_longer_than_the_context_is_a_counted_failure_with_the_servers_message(llama, tmp_path):
    # tiny-short has 1,024 tokens (bytes) of context: the probes fit, a whole conversation does not.
    code, err, run_dir = _run(
        llama, tmp_path / "run", "+exp=full_context", "llm.model=tiny-short", "judge.model=tiny-short"
    )
    assert code == 1 and "Traceback" not in err, err[-3000:]
    assert "above run.max_failure_rate" in err.strip().splitlines()[-1]
    failures = read_jsonl(run_dir / "failures.jsonl")
    answers = [f for f in failures if f["stage"] == "answer"]
    assert len(answers) == 12
    assert all(f["kind"] == "bad_request" and "maximum context length" in f["message"] for f in answers), (
        answers[0]
    )
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
