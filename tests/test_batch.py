"""`llm.batch=true` (issue 35, item 3): the answer and judge requests through the Batch API, over real HTTP
against the stand-in's /v1/files and /v1/batches: the same replies as online, open batches picked up after a
kill (no second create), failed lines retried, an expired batch's finished lines kept, batch replies in the
response cache, the batch price, preflight's one line, the dry run's two prices."""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import TEST_KEY, run_cli
from devtools.reliability import env_for, run_args, small_sample, start_cli
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.batch import BATCH_FILE, BatchQueue, open_batches, unclaimed_uploads
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.ledger import UsageLedger, batch_rates
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import LLMCallError, Usage

FAST = {"batch_poll_s": 0.02, "batch_window_s": 0.05, "backoff_base_s": 0.01, "backoff_max_s": 0.05}
QUESTIONS = [f"When did person {i} adopt a dog named Rex {i}?" for i in range(6)]


def _settings(server: StandinServer, **extra: Any) -> LLMSettings:
    return LLMSettings(base_url=server.base_url, api_key=TEST_KEY, timeout_s=5.0, price_any_server=True,
                       **{**FAST, **extra})  # fmt: skip


def _client(server: StandinServer, cache: ResponseCache | None = None, **extra: Any) -> LLMClient:
    settings = _settings(server, **extra)
    return LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small"), cache,
                     UsageLedger(settings.prices))  # fmt: skip


async def _ask_all(client: LLMClient, stage: str = "answer") -> list[str]:
    async def one(question: str) -> str:
        reply = await client.chat([{"role": "user", "content": question}], stage=stage)
        return reply.text

    try:
        return list(await asyncio.gather(*(one(q) for q in QUESTIONS)))
    finally:
        await client.aclose()


def _batched(client: LLMClient, rows: list[dict[str, Any]] | None = None) -> LLMClient:
    if rows is not None:
        client.use_batches(rows.append, list(rows), progress=False)
    else:
        client.use_batches(progress=False)
    return client


def test_batched_replies_are_the_online_replies_and_cost_half():
    with StandinServer(api_key=TEST_KEY) as server:
        online_client = _client(server)
        online = asyncio.run(_ask_all(online_client))
        batched_client = _batched(_client(server))
        batched = asyncio.run(_ask_all(batched_client))
        assert server.count("batches", 200) == 1  # every question in one batch
        assert server.count("chat") == len(QUESTIONS)  # the online run's only
        assert server.count("batch_line", 200) == len(QUESTIONS)
    assert batched == online
    on, off = online_client.ledger.stage("answer"), batched_client.ledger.stage("answer")
    assert off.batch_calls == len(QUESTIONS) and on.batch_calls == 0
    assert off.paid_prompt_tokens == on.paid_prompt_tokens
    assert off.cost_usd == pytest.approx(on.cost_usd / 2)


def test_batch_rates_default_to_half_and_an_entry_may_set_them():
    assert batch_rates({"prompt": 1.0, "completion": 4.0, "cached_prompt": 0.5}) == (0.5, 2.0, 0.25)
    assert batch_rates({"prompt": 1.0, "completion": 4.0, "batch_prompt": 0.8}) == (0.8, 2.0, None)
    ledger = UsageLedger({"m": {"prompt": 1.0, "completion": 2.0, "batch_completion": 2.0}})
    assert ledger.cost_of("m", Usage(1000, 100), batch=True) == pytest.approx((500 + 200) / 1e6)
    with pytest.raises(ConfigurationError, match="batch_prompt"):
        LLMSettings(prices={"m": {"prompt": 1, "batch": 0.5}})


def test_a_rerun_pays_nothing_the_replies_are_in_the_cache(tmp_path):
    with StandinServer(api_key=TEST_KEY) as server:
        first = asyncio.run(_ask_all(_batched(_client(server, ResponseCache(tmp_path / "c.sqlite")))))
        again_client = _batched(_client(server, ResponseCache(tmp_path / "c.sqlite")))
        again = asyncio.run(_ask_all(again_client))
        assert server.count("batches") == 1 and server.count("files") == 1
    assert again == first
    stage = again_client.ledger.stage("answer")
    assert stage.cached_calls == len(QUESTIONS) and stage.cost_usd == 0


def test_failed_lines_go_into_the_next_batch():
    with StandinServer(api_key=TEST_KEY) as server:
        online = asyncio.run(_ask_all(_client(server)))
        server.batches.fail_lines = 2
        client = _batched(_client(server))
        batched = asyncio.run(_ask_all(client))
        assert server.count("batches", 200) == 2  # the two failed lines in a second batch
        assert server.batches.lines_failed == 2
    assert batched == online
    assert client.ledger.stage("answer").batch_calls == len(QUESTIONS)


def test_a_line_that_keeps_failing_fails_as_a_call_does():
    with StandinServer(api_key=TEST_KEY) as server:
        server.batches.fail_lines = 100
        client = _batched(_client(server, max_retries=1))
        with pytest.raises(LLMCallError) as caught:
            asyncio.run(_ask_all(client))
        assert server.count("batches", 200) == 2  # the first try and one retry
    assert caught.value.failure.kind == "server_error" and "HTTP 500 in batch" in caught.value.failure.message


def test_an_expired_batch_keeps_its_finished_lines_and_sends_the_rest_again():
    with StandinServer(api_key=TEST_KEY) as server:
        online = asyncio.run(_ask_all(_client(server)))
        server.batches.expire_after = 4
        client = _batched(_client(server))

        async def run() -> list[str]:
            task = asyncio.ensure_future(_ask_all(client))
            await asyncio.sleep(0.3)
            server.batches.expire_after = None  # the next batch has the time it needs
            return await task

        batched = asyncio.run(run())
        assert server.count("batches", 200) == 2
        assert server.count("batch_line", 200) == len(QUESTIONS)  # 4 from the expired batch, 2 resent
    assert batched == online


def test_a_killed_command_picks_up_its_open_batch(tmp_path):
    """The first client is stopped while its batch runs: the folder's record has the batch; the second
    client follows that batch and creates none."""
    rows: list[dict[str, Any]] = []
    with StandinServer(api_key=TEST_KEY) as server:
        online = asyncio.run(_ask_all(_client(server)))
        server.batches.delays = (0.05, 0.6, 0.05)

        async def killed() -> None:
            task = asyncio.ensure_future(
                _ask_all(_batched(_client(server, ResponseCache(tmp_path / "c")), rows))
            )
            while not any("batch" in r for r in rows):
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(killed())
        assert server.count("batches", 200) == 1 and len(open_batches(rows)) == 1
        resumed = _batched(_client(server, ResponseCache(tmp_path / "c")), rows)
        again = asyncio.run(_ask_all(resumed))
        assert server.count("batches", 200) == 1  # nothing sent twice
    assert again == online
    assert open_batches(rows) == [] and rows[-1]["closed"] is True
    assert resumed.ledger.stage("answer").batch_calls == len(QUESTIONS)


def test_a_command_killed_during_create_follows_the_batch_the_server_made(tmp_path):
    """Killed after the create request reached the server but before its reply was on record: the folder
    has the upload only. The next command finds the batch made from that file in the server's list (paged,
    newest first, behind other batches) and follows it: nothing is created or paid twice."""
    rows: list[dict[str, Any]] = []
    with StandinServer(api_key=TEST_KEY) as server:
        online = asyncio.run(_ask_all(_client(server)))
        server.batches.delays = (0.05, 0.6, 0.05)

        async def killed() -> None:
            task = asyncio.ensure_future(
                _ask_all(_batched(_client(server, ResponseCache(tmp_path / "c")), rows))
            )
            while not any("batch" in r for r in rows):
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(killed())
        upload = next(r for r in rows if "upload" in r)
        del rows[rows.index(upload) + 1 :]  # the create's reply never reached the record
        assert open_batches(rows) == [] and len(unclaimed_uploads(rows)) == 1
        for n in range(120):  # other batches, newer than ours, push it past the first page
            server.batches.create(_other_batch(server, n))
        resumed = _batched(_client(server, ResponseCache(tmp_path / "c")), rows)
        again = asyncio.run(_ask_all(resumed))
        assert server.count("batches", 200) == 1 and server.count("batch_list", 200) == 2
    assert again == online
    assert unclaimed_uploads(rows) == [] and open_batches(rows) == []
    assert [r.get("input_file") for r in rows if "custom_ids" in r and "batch" in r] == [upload["upload"]]
    assert resumed.ledger.stage("answer").batch_calls == len(QUESTIONS)


def test_an_upload_that_never_became_a_batch_is_closed_and_its_requests_sent(tmp_path):
    with StandinServer(api_key=TEST_KEY) as server:
        online = asyncio.run(_ask_all(_client(server)))
        first: list[dict[str, Any]] = []
        asyncio.run(_ask_all(_batched(_client(server), first)))
        ids = next(r["custom_ids"] for r in first if "upload" in r)
        rows: list[dict[str, Any]] = [{"upload": "file-never-batched", "stage": "answer",
                                       "model": "gpt-4o-mini", "custom_ids": ids}]  # fmt: skip
        again = asyncio.run(_ask_all(_batched(_client(server), rows)))
        assert server.count("batches", 200) == 2  # the first pass's and this one's
    assert again == online
    assert rows[1] == {"upload": "file-never-batched", "closed": True, "status": "no batch was made from it"}
    assert unclaimed_uploads(rows) == [] and open_batches(rows) == []


def _other_batch(server: StandinServer, n: int) -> dict[str, Any]:
    line = {"custom_id": f"other-{n}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"hello {n}"}]}}  # fmt: skip
    uploaded = server.batches.upload("batch", "other.jsonl", json.dumps(line).encode() + b"\n")
    return {"input_file_id": uploaded["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}


async def _preflight(client: LLMClient) -> None:
    try:
        await client.preflight()
    finally:
        await client.aclose()


def test_preflight_names_llm_batch_on_a_server_without_the_batch_api():
    with StandinServer(api_key=TEST_KEY, batch_api=False) as server:
        with pytest.raises(ConfigurationError) as caught:
            asyncio.run(_preflight(_client(server, batch=True)))
        assert "llm.batch" in str(caught.value) and "\n" not in str(caught.value)
        asyncio.run(_preflight(_client(server)))  # llm.batch=false: the same server passes
    with StandinServer(api_key=TEST_KEY) as server:
        asyncio.run(_preflight(_client(server, batch=True)))


def _run(tmp_path: Path, locomo_mini: Path, name: str, *extra: str, cache: str | None = None) -> Path:
    dataset = small_sample(tmp_path, locomo_mini, sessions=2, questions=4)
    run_dir = tmp_path / name
    args = run_args("rag", dataset, run_dir, "judge.runs=2", "llm.price_any_server=true", *extra)
    with StandinServer(api_key=TEST_KEY) as server:
        done = run_cli(args, env_for(server, tmp_path / f"cache-{cache or name}"))
        creates = server.count("batches", 200)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir / "creates").write_text(str(creates))
    return run_dir


def _predictions(run_dir: Path) -> list[tuple[str, str, list[str], float]]:
    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return sorted(
        (r["qid"], r["prediction"], r["judge"], r["f1"]) for r in rows
    )  # rejudging: answers.jsonl order


@pytest.fixture(scope="module")
def online(tmp_path_factory, locomo_mini) -> Path:
    """One online run of the small sample, the reference every batched run's results are compared with
    (read only: a test that changes a run copies it)."""
    return _run(tmp_path_factory.mktemp("online"), locomo_mini, "online")


def test_a_run_with_llm_batch_gives_the_online_runs_results(tmp_path, locomo_mini, online):
    batch = ("llm.batch=true", "llm.batch_poll_s=0.02", "llm.batch_window_s=0.1")
    batched = _run(tmp_path, locomo_mini, "batched", *batch)
    assert _predictions(batched) == _predictions(online)
    assert (online / "creates").read_text() == "0" and int((batched / "creates").read_text()) >= 2
    rows = [json.loads(line) for line in (batched / BATCH_FILE).read_text().splitlines()]
    assert {r["stage"] for r in rows if "stage" in r} == {"answer", "judge"}
    assert open_batches(rows) == []
    usage = json.loads((batched / "usage.json").read_text())
    stages = usage["sessions"][-1]["stages"]
    assert stages["answer"]["batch_calls"] > 0 and stages["judge"]["batch_calls"] > 0
    assert stages["ingest"]["batch_calls"] == 0  # ingest stays online
    # The same command into a new folder with the same cache: every reply is there, nothing is paid.
    again = _run(tmp_path, locomo_mini, "again", *batch, cache="batched")
    assert (again / "creates").read_text() == "0" and _predictions(again) == _predictions(online)
    paid = json.loads((again / "usage.json").read_text())["sessions"][-1]["stages"]
    assert paid["answer"]["cost_usd"] == paid["judge"]["cost_usd"] == 0  # (preflight's probes are paid)
    assert paid["answer"]["cached_calls"] == paid["answer"]["calls"] > 0


def test_a_run_on_a_server_without_the_batch_api_stops_in_one_line(tmp_path, locomo_mini):
    dataset = small_sample(tmp_path, locomo_mini, sessions=2, questions=4)
    args = run_args("rag", dataset, tmp_path / "run", "llm.batch=true")
    with StandinServer(api_key=TEST_KEY, batch_api=False) as server:
        done = run_cli(args, env_for(server, tmp_path / "cache"))
        assert server.count("chat") == server.count("embeddings") == 0  # stopped before any work
    assert done.returncode != 0
    (said,) = [line for line in done.stderr.splitlines() if "llm.batch" in line]
    assert "no Batch API" in said and "set llm.batch=false" in said


def test_a_killed_run_picks_up_its_open_batch_on_the_next_command(tmp_path, locomo_mini, online):
    """`run` killed (SIGKILL) while its answer batch is open: the rerun of the same command follows that
    batch (its id is in batches.jsonl) and sends no answer request again; the results are the online run's."""
    dataset = small_sample(tmp_path, locomo_mini, sessions=2, questions=4)
    batch = ("llm.batch=true", "llm.batch_poll_s=0.02", "llm.batch_window_s=0.1")
    run_dir = tmp_path / "killed"
    args = run_args("rag", dataset, run_dir, "judge.runs=2", "llm.price_any_server=true", *batch)
    env = env_for(server_env := StandinServer(api_key=TEST_KEY).start(), tmp_path / "cache-killed")
    try:
        server_env.batches.delays = (0.05, 3.0, 0.05)  # the answer batch stays open long enough to kill
        proc = start_cli(args, env)
        deadline = time.monotonic() + 120
        while not (run_dir / BATCH_FILE).exists() or not open_batches(_rows(run_dir)):
            assert proc.poll() is None and time.monotonic() < deadline, "no batch was recorded"
            time.sleep(0.02)
        proc.kill()
        proc.wait(timeout=30)
        assert server_env.count("batches", 200) == 1
        (opened,) = open_batches(_rows(run_dir))
        assert opened.stage == "answer"
        shown = run_cli(["status", str(run_dir)], env)
        assert f"batches   1 open: {opened.batch_id} (answer, " in shown.stdout, shown.stdout
        assert f"{len(opened.keys):,} requests); the next command follows them" in shown.stdout
        server_env.batches.delays = (0.02, 0.05, 0.02)
        done = run_cli(args, env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "batches " not in run_cli(["status", str(run_dir)], env).stdout  # none open once read
        # The answer batch was picked up, not sent again: the only new batch is the judge's.
        assert server_env.count("batches", 200) == 2
    finally:
        server_env.stop()
    created = [r for r in _rows(run_dir) if "custom_ids" in r and "batch" in r]
    assert [r["stage"] for r in created] == ["answer", "judge"]
    assert open_batches(_rows(run_dir)) == []
    assert _predictions(run_dir) == _predictions(online)


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / BATCH_FILE).read_text()
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]


def test_the_dry_run_shows_both_prices(tmp_path, locomo_mini):
    """The plan priced online and batched: the answer and judge stages at half their price, ingestion the
    same; the table and the total are priced as llm.batch says."""
    totals = {}
    for batch in ("false", "true"):
        # gpt-4o: stage prices of cents, so the table's 3 decimals can tell half a price from the whole one
        args = ["run", "+exp=rag", "run.dry_run=true", f"dataset.path={locomo_mini}", "judge.runs=10",
                "llm.model=gpt-4o", "judge.model=gpt-4o", "llm.price_any_server=true", f"llm.batch={batch}",
                f"hydra.run.dir={tmp_path / batch}"]  # fmt: skip
        with StandinServer(api_key=TEST_KEY) as server:
            done = run_cli(args, env_for(server, tmp_path / "cache"))
            assert server.count() == 0  # nothing asked
        assert done.returncode == 0, done.stderr[-2000:]
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("Batch API: ")]
        found = re.match(r"Batch API: \$([\d.]+) with llm\.batch=true .*, \$([\d.]+) online", line)
        assert found is not None, line
        batched, online = float(found[1]), float(found[2])
        total = float(re.search(r"^total: about [\d,]+ calls, \$([\d.]+)", done.stdout, re.M)[1])  # type: ignore[index]
        stages = {m[1]: float(m[2]) for m in re.finditer(r"^(answer|judge) .* ([\d.]+)$", done.stdout, re.M)}
        totals[batch] = (batched, online, total, stages)
    (b1, o1, t_online, s_online), (b2, o2, t_batched, s_batched) = totals["false"], totals["true"]
    assert (b1, o1) == (b2, o2) and 0 < b1 < o1
    assert t_online == o1 and t_batched == b1
    for stage in ("answer", "judge"):
        assert s_online[stage] >= 0.02, s_online  # well above the table's rounding
        # Each figure is rounded to $0.001: half the online price within that rounding.
        assert s_batched[stage] == pytest.approx(s_online[stage] / 2, abs=0.001)


def test_the_judge_command_sends_its_labels_as_a_batch(tmp_path, online):
    """`judge` on a finished run (one more judge run) goes through the Batch API as the run's judge stage
    does, with the labels an online `judge` gives (each copy with a cache of its own: nothing shared)."""
    plain, batched = tmp_path / "plain", tmp_path / "batched"
    shutil.copytree(online, plain)
    shutil.copytree(online, batched)
    batch = ["llm.batch=true", "llm.batch_poll_s=0.02", "llm.batch_window_s=0.1"]
    with StandinServer(api_key=TEST_KEY) as server:
        env = env_for(server, tmp_path / "unused")
        for run_dir, extra in ((plain, []), (batched, batch)):
            args = ["judge", str(run_dir), "judge.runs=3", "llm.price_any_server=true",
                    f"cache.dir={tmp_path / ('cache-' + run_dir.name)}", *extra]  # fmt: skip
            done = run_cli(args, env)
            assert done.returncode == 0, done.stderr[-3000:]
        assert server.count("batches", 200) == 1  # the third run's labels, all in one batch
    assert _predictions(batched) == _predictions(plain)
    assert all(len(labels) == 3 for _, _, labels, _ in _predictions(batched))
    (created,) = [r for r in _rows(batched) if "custom_ids" in r and "batch" in r]
    assert created["stage"] == "judge" and len(created["custom_ids"]) == 4  # 4 answers x the one new run


def test_polling_shows_a_progress_line_with_an_eta():
    stream = io.StringIO()
    with StandinServer(api_key=TEST_KEY) as server:
        server.batches.delays = (0.05, 0.4, 0.05)
        client = _client(server)
        client.batch = BatchQueue(client, progress=True, stream=stream)
        client.batch.progress_every_s = 0.0  # every poll (a run: every 10 s and at each change of status)
        asyncio.run(_ask_all(client))
    lines = stream.getvalue().splitlines()
    assert [line.split(": ", 1)[1].split()[0] for line in lines][-1] == "completed", lines
    assert any(": in_progress " in line and re.search(r"ETA \d+m\d\ds", line) for line in lines), lines
    assert lines[-1].endswith("ETA 0m00s") and f"{len(QUESTIONS)}/{len(QUESTIONS)} requests" in lines[-1]


def test_a_recorded_batch_the_server_does_not_know_is_dropped_and_its_requests_sent(tmp_path):
    """A folder's open batch from another server or account (404 there): off the record, its requests
    sent in a new batch, instead of failing on every rerun."""
    with StandinServer(api_key=TEST_KEY) as server:
        online = asyncio.run(_ask_all(_client(server)))
        # Every question's key, as the client computes it: a first batched pass records them.
        rows: list[dict[str, Any]] = []
        asyncio.run(_ask_all(_batched(_client(server), rows)))
        ids = next(r["custom_ids"] for r in rows if "custom_ids" in r)
        stale = [{"batch": "batch-elsewhere", "stage": "answer", "model": "gpt-4o-mini", "custom_ids": ids}]
        client = _batched(_client(server), stale)
        again = asyncio.run(_ask_all(client))
        assert server.count("batch", 404) == 1 and server.count("batches", 200) == 2
    assert again == online
    assert open_batches(stale) == [] and stale[1] == {
        "batch": "batch-elsewhere", "closed": True, "status": "unknown to the server"}  # fmt: skip
