"""Cached prompt tokens (issue 35, item 2): read from `usage.prompt_tokens_details.cached_tokens` over
real HTTP from the stand-in, carried per stage through the ledger, usage.json and its journal, and priced
at the model's `cached_prompt` rate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from devtools.e2e import TEST_KEY, run_cli
from devtools.reliability import env_for, run_args, small_sample
from devtools.standin.prompt_cache import PromptCache
from devtools.standin.server import StandinServer
from mem0bench.cli.status import render
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import Usage
from mem0bench.memory.costs import CostPlan
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.plan import cached_prompt_line, plan_lines, repeated_prefix_tokens
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.usage import (
    UsageFile,
    cached_prompt_by_stage,
    cached_share_line,
    no_cached_rate_note,
    read_usage_sessions,
)
from mem0bench.status.reader import read_status

PRICES = {
    "m": {"prompt": 1.0, "completion": 2.0, "cached_prompt": 0.25},
    "full": {"prompt": 1.0, "completion": 2.0},
}
CONTEXT = " ".join(f"word{i}" for i in range(1500))  # ~3,000 cl100k tokens that repeat


def test_cost_prices_cached_prompt_tokens_at_the_cached_rate():
    assert UsageLedger(PRICES).cost_of("m", Usage(1000, 100, 400)) == pytest.approx(
        (600 + 400 * 0.25 + 200) / 1e6
    )
    assert UsageLedger(PRICES).cost_of("m", Usage(1000, 100, 0)) == pytest.approx((1000 + 200) / 1e6)
    assert UsageLedger(PRICES).cost_of("full", Usage(1000, 100, 400)) == pytest.approx((1000 + 200) / 1e6)
    assert LLMSettings().prices["gpt-4o-mini"]["cached_prompt"] == 0.075


def test_a_model_without_a_cached_rate_is_priced_in_full_and_listed():
    ledger = UsageLedger(PRICES)
    ledger.record("answer", "full", Usage(1000, 10, 0), cached=False)
    assert "no_cached_rate_models" not in ledger.snapshot()  # no cached token: nothing to say
    ledger.record("answer", "full", Usage(1000, 10, 512), cached=False)
    ledger.record("answer", "m", Usage(1000, 10, 512), cached=False)
    assert ledger.snapshot()["no_cached_rate_models"] == ["full"]


def test_prices_accept_a_cached_rate_and_refuse_a_typo():
    assert LLMSettings(prices={"m": {"prompt": 1, "completion": 2, "cached_prompt": 0.5}}).prices["m"] == {
        "prompt": 1.0, "completion": 2.0, "cached_prompt": 0.5}  # fmt: skip
    assert "cached_prompt" not in LLMSettings(prices={"m": {"prompt": 1, "completion": 2}}).prices["m"]
    with pytest.raises(ConfigurationError, match=r"llm\.prices\.m .*cached_prompt"):
        LLMSettings(prices={"m": {"prompt": 1, "cached": 0.5}})


def test_stand_in_reports_shared_prefixes_in_128_token_steps():
    cache = PromptCache()
    assert cache.lookup_and_add(list(range(1100))) == 0  # first sight
    assert cache.lookup_and_add(list(range(1100))) == 1024
    assert cache.lookup_and_add([*range(1300), 7]) == 1024  # only 1,024 of it was seen before
    assert cache.lookup_and_add([*range(1300), 8]) == 1280
    assert cache.lookup_and_add([9, *range(2000)]) == 0  # a different first token: nothing shared
    assert cache.lookup_and_add(list(range(1023))) == 0  # below 1,024 nothing is reported


def _client(server: StandinServer, ledger: UsageLedger) -> LLMClient:
    settings = LLMSettings(base_url=server.base_url, api_key=TEST_KEY, timeout_s=5.0, price_any_server=True)
    return LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), None, ledger)


async def _ask_twice(client: LLMClient) -> list[Usage]:
    out = []
    for question in ("When did Caroline adopt Rex?", "Where does Melanie live?"):
        messages = [{"role": "system", "content": CONTEXT}, {"role": "user", "content": question}]
        out.append((await client.chat(messages, stage="answer")).usage)
    await client.aclose()
    return out


@pytest.mark.parametrize("on", [True, False])
def test_the_client_reads_cached_tokens_over_http(on):
    ledger = UsageLedger(LLMSettings().prices)
    with StandinServer(api_key=TEST_KEY, cached_prefixes=on) as server:
        first, second = asyncio.run(_ask_twice(_client(server, ledger)))
    assert first.cached_tokens == 0 and first.prompt_tokens > 2048
    if not on:  # off by default: the usage figures other tests check stay as they were
        assert second.cached_tokens == 0 and ledger.stage("answer").cached_prompt_tokens == 0
        return
    assert second.cached_tokens >= 2048 and second.cached_tokens % 128 == 0
    assert second.cached_tokens <= second.prompt_tokens
    stage = ledger.stage("answer")
    assert stage.cached_prompt_tokens == stage.paid_cached_prompt_tokens == second.cached_tokens
    full = UsageLedger({"gpt-4o-mini": {"prompt": 0.15, "completion": 0.60}}).cost_of("gpt-4o-mini", second)
    assert ledger.cost_of("gpt-4o-mini", second) < full


def test_usage_json_and_its_journal_carry_cached_tokens_per_stage(tmp_path):
    rundir = RunDirectory(tmp_path / "run")
    ledger = UsageLedger(PRICES)
    ledger.record("preflight", "m", Usage(2000, 1, 1024), cached=False)  # paid before the journal began
    usage = UsageFile(rundir, "a1", ledger, earlier=[])
    ledger.record("answer", "m", Usage(2000, 10, 1536), cached=False)
    ledger.record("answer", "m", Usage(2000, 10, 1536), cached=True)  # a response-cache hit: not paid
    usage.save()
    ledger.record("judge", "m", Usage(1500, 5, 1024), cached=False)  # in the journal only: then killed
    rundir.close()
    rows = [json.loads(line) for line in (tmp_path / "run" / "usage.jsonl").read_text().splitlines()]
    assert [r["cached"] for r in rows] == [1024, 1536, 1024]
    (entry,) = read_usage_sessions(RunDirectory(tmp_path / "run"))
    assert entry["stages"]["answer"]["cached_prompt_tokens"] == 3072
    assert entry["stages"]["answer"]["paid_cached_prompt_tokens"] == 1536
    assert entry["stages"]["judge"]["paid_cached_prompt_tokens"] == 1024  # rebuilt from the journal
    assert cached_prompt_by_stage(read_usage_sessions(RunDirectory(tmp_path / "run")))["answer"] == {
        "prompt": 2000,
        "cached_prompt": 1536,
    }
    assert "answer 1,536 of 2,000 (77%)" in (
        cached_share_line(cached_prompt_by_stage(read_usage_sessions(RunDirectory(tmp_path / "run")))) or ""
    )


def test_old_usage_files_without_cached_tokens_still_read(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    old = {
        "session": "a0",
        "stages": {"answer": {"calls": 1, "paid_prompt_tokens": 10}},
        "total": {},
        "cost_usd": 0.1,
    }
    (run / "usage.json").write_text(json.dumps({"sessions": [{**old, "journal_rows": 0}]}))
    (run / "usage.jsonl").write_text(
        '{"session": "a0", "stage": "answer", "prompt": 5, "completion": 1, "cost_usd": 0.0}\n'
    )
    (entry,) = read_usage_sessions(RunDirectory(run))
    assert entry["stages"]["answer"]["paid_prompt_tokens"] == 15
    assert entry["stages"]["answer"]["paid_cached_prompt_tokens"] == 0
    assert cached_prompt_by_stage(read_usage_sessions(RunDirectory(run))) == {
        "answer": {"prompt": 15, "cached_prompt": 0}
    }


def _long_sample(tmp_path, locomo_mini) -> Path:
    """mini-1 (273 tokens, below the 1,024 a prompt cache starts at) with every turn said six times, and
    its first four questions."""
    dataset = small_sample(tmp_path, locomo_mini, sessions=3, questions=4)
    (sample,) = json.loads(dataset.read_text(encoding="utf-8"))
    for key, turns in sample["conversation"].items():
        if key.startswith("session_") and isinstance(turns, list):
            for turn in turns:
                turn["text"] = " ".join([turn["text"]] * 6)
    dataset.write_text(json.dumps([sample]), encoding="utf-8")
    return dataset


def _full_context_run(tmp_path, locomo_mini, name: str, cached: bool) -> tuple[dict, str]:
    dataset = _long_sample(tmp_path, locomo_mini)
    run_dir = tmp_path / name
    args = run_args("full_context", dataset, run_dir, "judge.runs=1", "llm.price_any_server=true",
                    "llm.max_concurrency=1")  # fmt: skip
    with StandinServer(api_key=TEST_KEY, cached_prefixes=cached) as server:
        done = run_cli(args, env_for(server, tmp_path / f"cache-{name}"))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((run_dir / "metrics.json").read_text()), done.stderr


def test_a_full_context_run_counts_its_cached_prompt_and_pays_less(tmp_path, locomo_mini):
    cached, said = _full_context_run(tmp_path, locomo_mini, "cached", True)
    plain, _ = _full_context_run(tmp_path, locomo_mini, "plain", False)
    answer = cached["tokens"]["prompt_cache"]["answer"]
    # The same prompts both ways; without prompt caching the block is left out (the file as it always was).
    assert answer["cached_prompt"] > 0 and answer["prompt"] == plain["tokens"]["llm"]["answer"]["prompt"]
    assert "prompt_cache" not in plain["tokens"]
    assert cached["cost_usd"] < plain["cost_usd"]
    assert "cached prompt tokens (billed at the cached rate): answer " in said
    status = read_status(tmp_path / "cached")
    assert status.cached_prompt["answer"] == answer
    assert f"answer {answer['cached_prompt']:,} of {answer['prompt']:,}" in render(status)


def test_the_dry_run_counts_a_conversations_repeated_prefix_once():
    whole = CostPlan(context_tokens=2000.0, repeated_context=True)
    # 3 conversations, 10 questions: 7 answers after their conversation's first, each 2,450 -> 2,432 cached
    assert repeated_prefix_tokens(whole, 10, 3) == 7 * 2432
    assert repeated_prefix_tokens(CostPlan(context_tokens=2000.0), 10, 3) == 0  # a context per question
    assert (
        repeated_prefix_tokens(CostPlan(context_tokens=300.0, repeated_context=True), 10, 3) == 0
    )  # < 1,024
    (answers,) = [
        x for x in plan_lines(whole, 10, JudgeSettings("gpt-4o-mini"), conversations=3) if x.stage == "answer"
    ]
    assert answers.cached_prompt == 7 * 2432 and answers.prompt == 10 * 2450
    line = cached_prompt_line([answers], 0.5)
    assert "17,024 of 24,500 prompt tokens (69%)" in line and line.endswith("cached: $0.50")


def test_a_model_without_a_cached_rate_is_named_after_the_run(tmp_path):
    rundir = RunDirectory(tmp_path / "run")
    ledger = UsageLedger(PRICES)
    usage = UsageFile(rundir, "a1", ledger, earlier=[])
    ledger.record("answer", "m", Usage(2000, 10, 1536), cached=False)
    usage.save()
    assert no_cached_rate_note(rundir) is None
    ledger.record("answer", "full", Usage(2000, 10, 1536), cached=False)
    usage.save()
    assert no_cached_rate_note(rundir) == (
        "note: no cached_prompt rate in llm.prices for full: its cached prompt tokens were priced at the full "
        "prompt rate"
    )
