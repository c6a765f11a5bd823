"""Before any work: every problem a user can fix is one `error:` line, exit code 2, no traceback, no stage
file in the run directory and no LLM call. Also: `run.dry_run=true` (no request at all) and
`run.progress` (bars on a terminal or when forced, plain lines in logs, nothing when off)."""

from __future__ import annotations

import io
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from devtools.e2e import TEST_KEY, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.pipeline.progress import StageProgress, parse_mode


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# (name, overrides, expected in the error line, how to reach the server)
CASES = [
    ("missing key", ["+exp=rag"], "OPENAI_API_KEY is not set", "openai-no-key"),
    ("key refused", ["+exp=rag"], "rejected the API key", "no-key"),
    ("unreachable server", ["+exp=rag"], "cannot reach the LLM server", "closed-port"),
    ("unknown model", ["+exp=rag", "llm.model=gpt-nope"], "model 'gpt-nope' is not served", "standin"),
    (
        "unknown judge model",
        ["+exp=rag", "judge.model=judge-nope"],
        "model 'judge-nope' is not served",
        "standin",
    ),
    ("unknown embedding model", ["+exp=mem0", "embedder.model=emb-nope"], "model 'emb-nope'", "standin"),
    ("unknown config key", ["+exp=rag", "llm.tmeout_s=3"], "unknown config key 'llm.tmeout_s'", "standin"),
    ("unknown method key", ["+exp=rag", "method.chunks=3"], "unknown config key 'method.chunks'", "standin"),
    ("unknown experiment", ["+exp=mem1"], "Could not find 'exp/mem1'; available: amem, chatgpt", "standin"),
    (
        "paper profiles listed",
        ["+exp=mem1"],
        "zep_graphiti, paper/amem, paper/beam, paper/chatgpt_memory_emulation, paper/cognee, paper/full_context",
        "standin",
    ),
    ("unparsable override", ["+exp=rag", "judge.runs=[3"], "cannot parse the override", "standin"),
    ("judge prompt", ["+exp=rag", "judge.prompt=nonsense"], "judge.prompt must be one of", "standin"),
    ("judge runs 0", ["+exp=rag", "judge.runs=0"], "judge.runs must be at least 1", "standin"),
    ("judge runs text", ["+exp=rag", "judge.runs=ten"], "judge.runs must be an integer", "standin"),
    ("rag chunk size", ["+exp=rag", "method.chunk_size=5"], "chunk_size must be in [128, 8192]", "standin"),
    ("mem0 top_k", ["+exp=mem0", "method.top_k=0"], "top_k must be >= 1", "standin"),
    (
        "failure rate",
        ["+exp=rag", "run.max_failure_rate=1.5"],
        "run.max_failure_rate must be between",
        "standin",
    ),
    (
        "progress",
        ["+exp=rag", "run.progress=sometimes"],
        "run.progress must be true, false or always",
        "standin",
    ),
    ("max questions", ["+exp=rag", "eval.max_questions=0"], "eval.max_questions must be null or", "standin"),
    ("timeout", ["+exp=rag", "llm.timeout_s=-1"], "llm.timeout_s must be > 0", "standin"),
    (
        "base url without a scheme",
        ["+exp=rag", "llm.base_url=localhost:8000/v1"],
        "(llm.base_url or OPENAI_BASE_URL) must be an http:// or https:// URL",
        "standin",
    ),
    ("unknown conversation", ["+exp=rag", "dataset.conversations=[conv-99]"], "conv-99", "standin"),
    ("no conversation", ["+exp=rag", "dataset.conversations=[]"], "selects no conversation", "standin"),
]


def _case(case, tmp_path: Path, server: StandinServer, locomo: Path):
    name, overrides, expected, where = case
    run_dir = tmp_path / name.replace(" ", "-")
    # Small defaults first (the case's own overrides come after and win): a case that fails to fail stays short.
    defaults = [
        "run.progress=false",
        "dataset.conversations=[mini-1]",
        "eval.max_questions=1",
        "judge.runs=1",
    ]
    args = ["run", *defaults, *overrides, f"dataset.path={locomo}", f"hydra.run.dir={run_dir}"]
    cache = tmp_path / "cache"
    if where == "openai-no-key":
        env = cli_env("https://api.openai.com/v1", cache, key=None)
        env.pop("OPENAI_BASE_URL")
    elif where == "no-key":
        env = cli_env(server.base_url, cache, key=None)
    elif where == "closed-port":
        env = cli_env(f"http://127.0.0.1:{_closed_port()}/v1", cache)
    else:
        env = cli_env(server.base_url, cache)
    return case, run_cli(args, env, timeout=120), run_dir


@pytest.mark.slow
def test_each_problem_is_one_line_before_any_work(tmp_path, locomo_mini):
    problems = []
    with StandinServer(api_key=TEST_KEY) as server:
        with ThreadPoolExecutor(max_workers=3) as pool:
            results = list(pool.map(lambda c: _case(c, tmp_path, server, locomo_mini), CASES))
        llm_calls = server.count("chat") + server.count("embeddings")
    for (name, _, expected, _), result, run_dir in results:
        err = result.stderr.strip()
        written = sorted(p.name for p in run_dir.iterdir()) if run_dir.exists() else []
        if (
            result.returncode != 2
            or len(err.splitlines()) != 1
            or not err.startswith("error: ")
            or expected not in err
            or "Traceback" in err
            or set(written) - {"run.log"}  # Hydra's own log file may exist; nothing of ours
        ):
            problems.append(f"{name}: rc {result.returncode}, files {written}, stderr:\n{err[-1500:]}")
    assert not problems, "\n\n".join(problems)
    assert llm_calls == 0


@pytest.mark.slow
def test_dry_run_calls_nothing_and_prints_the_plan(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        run_dir = tmp_path / "run"
        args = [
            "run",
            "+exp=mem0g",
            f"dataset.path={locomo_mini}",
            f"hydra.run.dir={run_dir}",
            "run.dry_run=true",
        ]
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"), timeout=120)
        requests = server.count()
    assert result.returncode == 0, result.stderr[-3000:]
    assert requests == 0  # not even the model list
    out = result.stdout
    assert "no LLM call made" in out and "3 conversations, 18 questions" in out  # the fixture, categories 1-4
    table = [line.split()[0] for line in out.splitlines()[2:-1]]
    assert {"ingest", "search", "answer", "judge"} <= set(table)
    total = out.strip().splitlines()[-1]
    assert total.startswith("total: about") and "calls, $" in total
    assert not (run_dir / "run.json").exists() and not list(run_dir.glob("*.jsonl"))


@pytest.mark.slow
def test_forced_progress_shows_each_stage_with_calls(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        args = [
            "run", "+exp=rag", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            "eval.max_questions=2", "judge.runs=2", f"hydra.run.dir={tmp_path / 'run'}", "run.progress=always",
        ]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"), timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    for stage in ("ingest", "answer", "judge"):
        assert stage in result.stderr
    assert "calls" in result.stderr and "tok" in result.stderr and "$" in result.stderr
    assert "4/4" in result.stderr  # the judge bar completed: 2 questions x 2 runs


# ---- progress, in process --------------------------------------------------------------------------
class _Ledger:
    def __init__(self):
        self.calls = 0

    @property
    def stages(self):
        """The same figures for each of the client's stages (search and answer both count for answering)."""
        usage = SimpleNamespace(
            calls=self.calls, prompt_tokens=100 * self.calls, completion_tokens=0, cost_usd=0.01
        )
        return dict.fromkeys(("ingest", "search", "answer", "judge"), usage)


def test_progress_in_a_log_is_plain_lines_with_calls_cost_and_eta():
    stream, ledger = io.StringIO(), _Ledger()  # StringIO is not a terminal: a log
    progress = StageProgress(ledger, {"ingest": 1, "answer": 2, "judge": 4}, enabled=True, stream=stream)
    assert progress.mode == "lines"
    ledger.calls = 3
    progress.advance("ingest")
    progress.advance("answer")
    assert progress.eta_s("answer") is not None
    progress.advance("answer")
    progress.advance("judge", 4)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["progress ingest", "progress answer", "progress judge"]
    assert "\r" not in stream.getvalue()
    assert lines[1] == "progress answer: 2/2, calls 6, tokens 600, cost $0.0200, eta 00:00"


def test_progress_modes():
    assert parse_mode("always") == "always" and parse_mode("false") is False and parse_mode(True) is True
    with pytest.raises(ValueError):
        parse_mode("sometimes")
    forced = StageProgress(_Ledger(), {"judge": 2}, enabled="always", stream=io.StringIO())
    assert forced.mode == "bars"
    forced.advance("judge", 2)
    forced.close()
    assert "judge" in forced.stream.getvalue() and "calls" in forced.stream.getvalue()
    silent = StageProgress(_Ledger(), {"judge": 2}, enabled=False, stream=io.StringIO())
    silent.advance("judge", 2)
    silent.close()
    assert silent.mode == "off" and silent.stream.getvalue() == ""
