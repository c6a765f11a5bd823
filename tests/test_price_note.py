"""A run against another server than OpenAI's costs $0: the dry run, the end-of-run summary and `status`
each say why, once, and how to price it; with llm.price_any_server=true (or on OpenAI's API) they do not."""

from __future__ import annotations

import pytest

from devtools.e2e import FAST, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.llm.settings import LLMSettings, unpriced_server_note

NOTE = "llm.price_any_server=true"


def test_the_note_names_the_server_without_credentials():
    note = unpriced_server_note("http://user:s3cret@127.0.0.1:8080/v1")
    assert "127.0.0.1:8080" in note and "s3cret" not in note and NOTE in note
    assert LLMSettings(base_url="https://api.openai.com/v1").price_note() is None
    assert LLMSettings(base_url="http://127.0.0.1:1/v1", price_any_server=True).price_note() is None
    assert LLMSettings(base_url="http://127.0.0.1:1/v1").price_note() == unpriced_server_note(
        "http://127.0.0.1:1/v1"
    )


@pytest.mark.slow
def test_dry_run_summary_and_status_say_why_the_cost_is_zero(tmp_path, locomo_mini):
    small = [f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]", "eval.max_questions=2",
             "judge.runs=1", *FAST]  # fmt: skip
    with StandinServer() as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        dry = run_cli(["run", "+exp=full_context", "run.dry_run=true", *small], env)
        assert dry.returncode == 0, dry.stderr[-2000:]
        assert (dry.stdout + dry.stderr).count(NOTE) == 1, dry.stdout

        run_dir = tmp_path / "run"
        run = run_cli(["run", "+exp=full_context", f"hydra.run.dir={run_dir}", *small], env)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stderr.count(NOTE) == 1, run.stderr
        assert "cost $0.0000" in run.stderr

        status = run_cli(["status", str(run_dir)], env)
        assert status.returncode == 0, status.stderr
        assert status.stdout.count(NOTE) == 1, status.stdout

        priced = run_cli(
            ["run", "+exp=full_context", "run.dry_run=true", "llm.price_any_server=true", *small], env
        )
        assert priced.returncode == 0 and NOTE not in priced.stdout + priced.stderr
