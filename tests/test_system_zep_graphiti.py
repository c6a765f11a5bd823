"""zep_graphiti: graphiti-core on a real FalkorDB server, through the real CLI against the stand-in."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, assert_ingest_failures_stay_open, cli_env, read_jsonl, run_cli
from devtools.standin.server import Raw, StandinServer, Text
from mem0bench.common.text import one_line
from mem0bench.memory.costs import MethodConfig
from mem0bench.systems.external.zep_graphiti import library
from mem0bench.systems.external.zep_graphiti.render import ENTITIES_HEADER, FACTS_HEADER, render_context
from tests.falkordb_server import FalkorDBServer

MINI_1_TURNS = 21
MINI_3_TURNS = 4


def _schema_name(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") if isinstance(fmt, dict) else None


def _args(
    run_dir: Path, server: FalkorDBServer, locomo: Path, *extra: str, conversation: str = "mini-1"
) -> list[str]:
    return [
        "run", "+exp=zep_graphiti", f"graph.host={server.host}", f"graph.port={server.port}",
        f"dataset.path={locomo}", f"dataset.conversations=[{conversation}]", f"hydra.run.dir={run_dir}",
        # These runs check replay from the cache; the isolated latency pass is live by design (its own
        # tests: test_latency_isolated.py).
        *FAST, "eval.latency=inline", *extra,
    ]  # fmt: skip


_TAG = re.compile(r"<(PASSAGE|QUERY)>\s*(.*?)\s*</\1>", re.DOTALL)
_ANSWER = re.compile(r"<context>\n(.*)\n</context>.*\nQuestion: (.*)\nAnswer:$", re.DOTALL)


def _is_rerank(endpoint: str, body: dict[str, Any]) -> bool:
    return endpoint == "chat" and bool(body.get("logprobs"))


def _rerank_parts(body: dict[str, Any]) -> tuple[str, str]:
    """(query, passage) of one of graphiti's reranker requests."""
    parts = dict(_TAG.findall(body["messages"][-1]["content"]))
    return parts["QUERY"], parts["PASSAGE"]


def _answer_contexts(requests: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """question -> the context of its answer request."""
    out = {}
    for endpoint, body in requests:
        if endpoint != "chat" or body.get("tools") or body.get("response_format"):
            continue
        match = _ANSWER.search(str(body["messages"][-1]["content"]))
        if match:
            out[match.group(2)] = match.group(1)
    return out


def _facts(context: str) -> list[str]:
    """The fact texts of a rendered context, in its order."""
    if FACTS_HEADER not in context:
        return []
    block = context.split(FACTS_HEADER, 1)[1].split("\n\n", 1)[0]
    return [line.split("] ", 1)[1] for line in block.strip().splitlines()]


def _true_probability(standin: StandinServer, body: dict[str, Any]) -> float:
    """graphiti's reranker score of the stand-in's reply to `body`: the probability of its most likely
    first token if that is True, else one minus it."""
    import httpx

    reply = httpx.post(f"{standin.base_url}/chat/completions", json=body, timeout=10).json()
    top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]
    p = math.exp(top["logprob"])
    return p if top["token"].strip().lower() == "true" else 1 - p


# ---- pure parts -----------------------------------------------------------------------------------


def test_context_rendering_dates_and_empty() -> None:
    edge = SimpleNamespace(
        fact="Maya adopted\na puppy", valid_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC), invalid_at=None
    )
    old = SimpleNamespace(
        fact="Maya lives in Oslo", valid_at=None, invalid_at=datetime(2023, 6, 1, tzinfo=UTC)
    )
    node = SimpleNamespace(name="Biscuit", summary="Maya's puppy.")
    bare = SimpleNamespace(name="Oslo", summary="")
    text = render_context([edge, old], [node, bare])
    assert text.splitlines() == [
        FACTS_HEADER,
        "- [8 May 2023 - present] Maya adopted a puppy",
        "- [date unknown - 1 June 2023] Maya lives in Oslo",
        "",
        ENTITIES_HEADER,
        "- Biscuit: Maya's puppy.",
        "- Oslo",
    ]
    assert render_context([], []) == ""


def test_the_facts_header_says_a_period_is_the_events_not_the_mentions() -> None:
    """Zep's own answer context tells the model that a fact's time is when the event held, not when it was
    said; ours says so in its own words."""
    header = FACTS_HEADER.lower()
    assert "not when someone spoke of it" in header and "event" in header and "last week" in header


def test_the_dry_run_prices_one_rerank_call_per_candidate_fact(locomo_mini: Path) -> None:
    from mem0bench.data.loader import load_dataset
    from mem0bench.systems.external.zep_graphiti.system import ZepGraphiti

    dataset = load_dataset(locomo_mini)

    def rerank(method: MethodConfig) -> list[Any]:
        plan = ZepGraphiti.cost_plan(method, dataset, 10)
        return [line for line in plan.lines if "rerank" in line.what]

    (line,) = rerank({"edge_limit": 20})  # the default: the cross-encoder, 2 x edge_limit candidates
    assert line.stage == "search" and line.calls == 10 * 40 and line.completion == line.calls
    assert rerank({"edge_limit": 20, "reranker": "rrf"}) == []


def test_graphitis_reranker_orders_by_the_servers_logprobs_and_refuses_a_reply_without(
    standin: StandinServer,
) -> None:
    clients = library.load()
    passages = ["Maya adopted a puppy.", "Tomas moved to Oslo.", "Maya bakes bread.", "Biscuit is a beagle."]

    def rank() -> list[tuple[str, float]]:  # a client per event loop
        reranker = clients.make_reranker(clients.openai_client(standin.base_url, "x"), "gpt-4o-mini")
        return asyncio.run(reranker.rank("What dog does Maya have?", passages))

    ranked = rank()
    bodies = [body for endpoint, body in standin.requests if endpoint == "chat"]
    assert len(bodies) == len(passages) and all(b["logprobs"] and b["top_logprobs"] == 2 for b in bodies)
    expected = {_rerank_parts(b)[1]: _true_probability(standin, b) for b in bodies}
    assert ranked == sorted(expected.items(), key=lambda item: -item[1])

    reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "True"}, "logprobs": None,
                          "finish_reason": "length"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}  # fmt: skip
    standin.set_handler(lambda endpoint, body: Raw(reply))
    with pytest.raises(RuntimeError, match=r"no logprobs.*method\.reranker=rrf"):
        rank()


def test_group_ids_are_graph_names_graphiti_accepts() -> None:
    config = {"prefix": "mem0bench"}
    plain = library.group_id(config, "run1", "conv_26")
    assert plain == "mem0bench_run1_conv_26_zep"
    # '-' and other characters are replaced (a '-' breaks FalkorDB's fulltext match), with a hash so that
    # two ids differing only there stay apart.
    dashed = library.group_id(config, "2026-12-01_10-00-00", "mini-1")
    assert set(dashed) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    assert dashed != library.group_id(config, "2026-12-01_10-00-00", "mini_1")
    assert library.run_tag({"run_id": "r7"}, Path("/x")) == "r7"


@pytest.mark.falkordb
def test_falkordb_pool_is_bounded_and_never_times_out_a_read(
    falkordb_server: FalkorDBServer,  # noqa: F811
) -> None:
    """graphiti's own client opened a connection per concurrent query (a full run exhausted the server's
    connections); a redis pool's connections time reads out after 5 s unless told otherwise (a big graph's
    summary query took longer)."""
    client = library.falkordb_client(falkordb_server.host, falkordb_server.port, 16)
    pool = client.connection.connection_pool
    assert pool.max_connections == 16 and pool.timeout is None
    assert pool.connection_kwargs["socket_timeout"] is None and pool.connection_kwargs["decode_responses"]


# ---- with a FalkorDB server -------------------------------------------------------------------------


@pytest.mark.falkordb
def test_stopword_entity_names_do_not_reach_the_crashing_lookup(
    falkordb_server: FalkorDBServer,  # noqa: F811
) -> None:
    """graphiti's exact-name lookup with a stopword name segfaults FalkorDB; the guarded driver skips it."""
    clients = library.load()
    from graphiti_core.nodes import EntityNode

    async def main() -> tuple[list[Any], int]:
        driver = clients.GuardedFalkorDriver(
            host=falkordb_server.host,
            port=falkordb_server.port,
            password=falkordb_server.password,
            database="zep_guard_test",
        )
        await driver.build_indices_and_constraints()
        try:
            nodes = await EntityNode.get_by_names(driver, ["the", "Maya", "OR"], ["zep_guard_test"])
            return nodes, driver.skipped_names
        finally:
            await driver.close()

    nodes, skipped = asyncio.run(main())
    assert nodes == [] and skipped == 2
    assert falkordb_server.client().connection.ping()


@pytest.mark.falkordb
def test_searches_build_no_client_and_each_calls_land_on_their_own_question(
    tmp_path: Path,
    falkordb_server: FalkorDBServer,  # noqa: F811
    locomo_mini: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A conversation's questions search at once through its one OpenAI client (building one per search
    cost ~65 ms of CPU inside the timed search): no client is built during the searches, and each query
    embedding and rerank call still lands on its own question's usage and stage."""
    import openai

    from mem0bench.data.loader import load_dataset
    from mem0bench.llm import timing
    from mem0bench.llm.cache import ResponseCache
    from mem0bench.llm.client import LLMClient
    from mem0bench.llm.embedders import OpenAIEmbeddingBackend
    from mem0bench.llm.settings import LLMSettings
    from mem0bench.memory.base import SystemContext
    from mem0bench.systems.external.zep_graphiti.system import ZepGraphiti

    conversation = next(c for c in load_dataset(locomo_mini).conversations if c.sample_id == "mini-3")
    questions = conversation.questions
    built: list[str] = []
    original_init = openai.AsyncOpenAI.__init__

    def counting_init(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(str(kwargs.get("base_url")))
        original_init(self, *args, **kwargs)

    async def main(base_url: str) -> list[timing.CallTiming]:
        settings = LLMSettings(base_url=base_url, api_key=TEST_KEY, model="gpt-4o-mini", timeout_s=10.0)
        client = LLMClient(
            settings, OpenAIEmbeddingBackend("text-embedding-3-small"), ResponseCache(tmp_path / "c.sqlite")
        )
        graph = {"host": falkordb_server.host, "port": falkordb_server.port, "run_id": "noclient"}
        system = ZepGraphiti(context=SystemContext(client=client, state_dir=tmp_path / "state", graph=graph))
        try:
            await system.ingest(conversation)
            monkeypatch.setattr(openai.AsyncOpenAI, "__init__", counting_init)

            async def one(index: int) -> timing.CallTiming:
                with timing.measure() as measured:
                    await system.retrieve(conversation, questions[index])
                return measured

            return await asyncio.gather(*(one(i) for i in range(len(questions))))
        finally:
            monkeypatch.undo()
            await system.aclose()
            await client.aclose()

    with StandinServer(api_key=TEST_KEY) as llm:
        start = len(llm.requests)
        usage = asyncio.run(main(llm.base_url))
        searched = list(llm.requests)[start:]
    assert built == [], f"the searches built {len(built)} OpenAI client(s): {built[:3]}"
    reranks = Counter(_rerank_parts(b)[0] for ep, b in searched if _is_rerank(ep, b))
    assert sum(reranks.values()) > 0, "no rerank call: the test shows nothing"
    for question, measured in zip(questions, usage, strict=True):
        assert measured.usage["graphiti_search_embedding"][0] == 1, question.question
        assert measured.usage.get("graphiti_rerank_search", [0])[0] == reranks[question.question], question
        assert "graphiti_ingest" not in measured.usage and "graphiti_search" not in measured.usage


@pytest.mark.slow
@pytest.mark.falkordb
def test_cli_run_end_to_end_then_rerun_from_the_cache(
    tmp_path: Path,
    falkordb_server: FalkorDBServer,  # noqa: F811
    locomo_mini: Path,
) -> None:
    run_dir = tmp_path / "zep-run"
    extra = ("eval.max_questions=4", "judge.runs=2")
    with StandinServer(api_key=TEST_KEY) as llm:
        env = cli_env(llm.base_url, tmp_path / "cache")
        result = run_cli(_args(run_dir, falkordb_server, locomo_mini, *extra), env)
        assert result.returncode == 0, result.stderr[-3000:]
        first = list(llm.requests)
        # Graphiti asked its own structured prompts through the bridge (json_schema response formats).
        asked = Counter(_schema_name(body) for endpoint, body in first if endpoint == "chat")
        assert asked["ExtractedEntities"] == MINI_1_TURNS and asked["ExtractedEdges"] == MINI_1_TURNS

        # A second run in another folder (a new graph) is served whole from the cache: graphiti's prompts
        # and embeddings (and so its reranker's requests) are deterministic given the same replies.
        rerun_dir = tmp_path / "zep-rerun"
        result2 = run_cli(_args(rerun_dir, falkordb_server, locomo_mini, *extra), env)
        assert result2.returncode == 0, result2.stderr[-3000:]
        new = list(llm.requests)[len(first) :]
        # The same from the cache with RRF for facts: the ingestion is the same, the searches call no model.
        rrf_dir = tmp_path / "zep-rrf"
        result3 = run_cli(_args(rrf_dir, falkordb_server, locomo_mini, *extra, "method.reranker=rrf"), env)
        assert result3.returncode == 0, result3.stderr[-3000:]
        rrf_requests = list(llm.requests)[len(first) + len(new) :]
    assert new == [], f"the replay sent {len(new)} request(s) to the server"
    assert not [b for ep, b in rrf_requests if ep == "embeddings" or _schema_name(b) or _is_rerank(ep, b)]
    rrf_usage = json.loads((rrf_dir / "metrics.json").read_text())["tokens"]["llm"]
    assert "graphiti_rerank_search" not in rrf_usage and "graphiti_search" not in rrf_usage

    # The default reranks facts with graphiti's OpenAI reranker, through the bridge: one one-token call per
    # candidate fact asking for the logprobs of True/False; the facts come in the order of the stand-in's
    # logprobs (the probability of True), best first.
    rerank = [b for ep, b in first if _is_rerank(ep, b)]
    assert rerank and all(
        b["top_logprobs"] == 2 and b["max_tokens"] == 1 and b["temperature"] == 0 and b["logit_bias"]
        for b in rerank
    )
    with StandinServer() as replay:  # the stand-in's reply depends on the request alone: ask it again
        scores = {_rerank_parts(b): _true_probability(replay, b) for b in rerank}
    contexts = _answer_contexts(first)
    # An answer request the RRF run did not send was served from the cache: its context was the same.
    rrf_contexts = {**contexts, **_answer_contexts(rrf_requests)}
    assert len(contexts) == 4 and len(rrf_contexts) == 4
    reordered = 0
    for question, context in contexts.items():
        candidates = {p: score for (q, p), score in scores.items() if q == question}
        best_first = sorted(candidates, key=lambda p: -candidates[p])[:20]
        assert _facts(context) == [one_line(p) for p in best_first], question
        assert FACTS_HEADER in context if candidates else True  # the header reaches the answer model
        reordered += _facts(context) != _facts(rrf_contexts[question])
    assert reordered > 0, "the cross-encoder kept RRF's order everywhere: the test shows nothing"
    assert any(FACTS_HEADER in c for c in contexts.values())

    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    assert "graphiti-core" in json.dumps(json.loads((run_dir / "run.json").read_text()))
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 4 and all(not r.get("failure") for r in rows)
    assert all(isinstance(r["context_items"], int) and r["context_tokens"] >= 0 for r in rows)
    assert sum(r["context_items"] for r in rows) > 0

    metrics = json.loads((run_dir / "metrics.json").read_text())
    usage = metrics["tokens"]["llm"]
    assert usage["graphiti_ingest"]["calls"] >= 3 * MINI_1_TURNS
    assert usage["graphiti_search_embedding"]["calls"] == 4  # one query embedding per question
    assert "graphiti_search" not in usage  # the search's only chat calls are the reranker's, counted apart
    assert usage["graphiti_rerank_search"]["calls"] == len(rerank)
    assert sum((r["usage"] or {}).get("graphiti_rerank_search", [0])[0] for r in rows) == len(rerank)
    assert metrics["tokens"]["context_items_mean"] == pytest.approx(sum(r["context_items"] for r in rows) / 4)
    assert metrics["failures"]["ingest"] == 0
    rerun_metrics = json.loads((rerun_dir / "metrics.json").read_text())
    assert rerun_metrics["tokens"]["llm"]["graphiti_ingest"] == usage["graphiti_ingest"]

    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    details = ingest["details"]
    assert details["episodes"] == MINI_1_TURNS and details["episodes_failed"] == 0
    assert details["entities"] > 0 and details["facts"] > 0 and ingest["memory_tokens"] > 0

    # The conversation's graph is in the server under <prefix>_<run id>_<sample>..., one Episodic node per
    # message; the rerun built its own graph beside it.
    marker = json.loads((run_dir / "state" / "mini-1" / "zep_graphiti" / "graphiti.json").read_text())
    graph = marker["group_id"]
    assert graph.startswith(f"mem0bench_{run_dir.name.replace('-', '_')}_mini_1_")
    assert len(marker["episodes"]) == MINI_1_TURNS
    assert falkordb_server.rows(graph, "MATCH (e:Episodic) RETURN count(e)") == [[MINI_1_TURNS]]
    names = falkordb_server.rows(graph, "MATCH (e:Episodic) RETURN e.name, e.valid_at ORDER BY e.name")
    assert {n for n, _ in names} >= {"D1:1", "D2:1"}
    rerun_marker = json.loads((rerun_dir / "state" / "mini-1" / "zep_graphiti" / "graphiti.json").read_text())
    assert rerun_marker["group_id"] != graph


@pytest.mark.slow
@pytest.mark.falkordb
def test_malformed_library_replies_are_counted_not_silent(
    tmp_path: Path,
    falkordb_server: FalkorDBServer,  # noqa: F811
    locomo_mini: Path,
) -> None:
    """graphiti raises on an unreadable fact extraction (the message loses its facts) and logs and goes on
    past an unreadable timestamp extraction: both are failure rows, one per failed call."""
    broken = {"ExtractedEdges", "EdgeTimestamps"}
    served: Counter[str] = Counter()

    def handler(endpoint: str, body: dict[str, Any]) -> Any:
        name = _schema_name(body) if endpoint == "chat" else None
        if name in broken:
            served[name] += 1
            return Text("Sure! here it is")
        return None

    run_dir = tmp_path / "zep-broken"
    with StandinServer(api_key=TEST_KEY) as llm:
        llm.set_handler(handler)
        extra = ("eval.max_questions=1", "judge.runs=1", "run.max_failure_rate=1.0")
        args = _args(run_dir, falkordb_server, locomo_mini, *extra, conversation="mini-3")
        result = run_cli(args, cli_env(llm.base_url, tmp_path / "c"))
        first_ingest = read_jsonl(run_dir / "ingest.jsonl")
        # The same command again restores the saved state: the failed steps stay open (issue 25).
        again = run_cli(args, cli_env(llm.base_url, tmp_path / "c"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert read_jsonl(run_dir / "ingest.jsonl") == first_ingest
    assert_ingest_failures_stay_open(run_dir, again)
    assert result.returncode == 0, result.stderr[-3000:]
    assert served["ExtractedEdges"] == MINI_3_TURNS

    failures = [r for r in read_jsonl(run_dir / "failures.jsonl") if r["stage"] == "ingest"]
    steps = Counter(r["step"] for r in failures)
    assert all(r["kind"] == "malformed" for r in failures)
    assert steps["extract_edges.edge"] == MINI_3_TURNS and set(steps) <= {
        "extract_edges.edge",
        "extract_edges.extract_timestamps",
    }
    assert sum(steps.values()) == sum(served.values())  # one row per failed call, none twice
    assert all(r["detail"]["dia_ids"] for r in failures)

    (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
    assert ingest["failures"] == len(failures) and ingest["failure_kinds"] == {"malformed": len(failures)}
    assert ingest["details"]["llm_calls_failed"] == len(failures)
    assert ingest["details"]["facts"] == 0  # no fact survived: counted, not mistaken for an empty memory
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["failures"]["ingest"] == len(failures)


# ---- issue 38's switches: Zep's own template, answer prompt and graphiti's temperature ---------------------


def test_fact_dates_valid_at_shows_the_event_time_only() -> None:
    """method.fact_dates=valid_at: each fact with its event time alone, under a header saying so (Zep's
    template's `(event_time: valid_at)`); `range` (default) shows the period it held."""
    from mem0bench.systems.external.zep_graphiti.render import VALID_AT_HEADER

    edge = SimpleNamespace(fact="Maya adopted a puppy", valid_at=datetime(2023, 5, 8, tzinfo=UTC),
                           invalid_at=datetime(2023, 6, 1, tzinfo=UTC))  # fmt: skip
    lines = render_context([edge], [], "valid_at").splitlines()
    assert lines == [VALID_AT_HEADER, "- [8 May 2023] Maya adopted a puppy"]
    assert render_context([edge], []).splitlines()[1] == "- [8 May 2023 - 1 June 2023] Maya adopted a puppy"
    assert "not when someone spoke of it" in VALID_AT_HEADER and "period" not in VALID_AT_HEADER
    with pytest.raises(ValueError, match="fact_dates must be one of range, valid_at"):
        render_context([edge], [], "start")


def test_library_temperature_sets_graphitis_own_calls() -> None:
    """method.library_temperature: `default` leaves graphiti's own temperature (1) on its extraction calls;
    a number goes out on every one of them."""
    from graphiti_core.prompts.models import Message
    from pydantic import BaseModel

    from mem0bench.systems.external.zep_graphiti.system import _library_temperature

    clients = library.load()
    sent: list[dict[str, Any]] = []

    class Completions:
        async def create(self, **kwargs: Any) -> Any:
            sent.append(kwargs)
            return SimpleNamespace(
                choices=[SimpleNamespace(message=SimpleNamespace(content='{"name": "x"}'))]
            )

    class Reply(BaseModel):
        name: str

    fake = SimpleNamespace(api_key="k", base_url="http://127.0.0.1:9/v1",
                           chat=SimpleNamespace(completions=Completions()))  # fmt: skip
    for setting in ("default", 0, "0.3"):
        llm = clients.BridgeLLMClient(
            client=fake, model="m", on_error=lambda error: None, temperature=_library_temperature(setting)
        )
        asyncio.run(llm.generate_response([Message(role="user", content="hi")], Reply))
    assert [body["temperature"] for body in sent] == [1, 0.0, 0.3]
    for bad in ("hot", -1, 3, True):
        with pytest.raises(ValueError, match="library_temperature must be 'default' or a number"):
            _library_temperature(bad)


@pytest.mark.slow
def test_zeps_own_template_prompt_and_temperature_through_the_cli(
    tmp_path: Path,
    falkordb_server: FalkorDBServer,  # noqa: F811
    locomo_mini: Path,
) -> None:
    """The three switches through a real run: graphiti's extraction requests carry the temperature asked
    for, the answer context shows event times only and the answer request is Zep's prompt (ours: the
    shared one with fact periods)."""
    from mem0bench.prompts.answer import _ZEP_SYSTEM
    from mem0bench.systems.external.zep_graphiti.render import VALID_AT_HEADER

    extra = ("eval.max_questions=2", "judge.runs=1")
    switched = ("method.fact_dates=valid_at", "method.library_temperature=0", "answer.prompt=zep")
    with StandinServer(api_key=TEST_KEY) as llm:
        env = cli_env(llm.base_url, tmp_path / "cache")
        ours = run_cli(_args(tmp_path / "ours", falkordb_server, locomo_mini, *extra), env)
        assert ours.returncode == 0, ours.stderr[-3000:]
        first = list(llm.requests)
        args = _args(tmp_path / "zep", falkordb_server, locomo_mini, *extra, *switched)
        zep = run_cli(args, env)
        assert zep.returncode == 0, zep.stderr[-3000:]
        second = list(llm.requests)[len(first) :]

    def library_temperatures(requests: list[tuple[str, dict[str, Any]]]) -> set[Any]:
        return {
            body.get("temperature")
            for endpoint, body in requests
            if endpoint == "chat" and _schema_name(body)
        }

    assert library_temperatures(first) == {1} and library_temperatures(second) == {0}
    answers = [
        b for ep, b in second if ep == "chat" and not (_schema_name(b) or _is_rerank(ep, b) or b.get("tools"))
    ]
    assert answers and all(b["messages"][0] == {"role": "system", "content": _ZEP_SYSTEM} for b in answers)
    contexts = _answer_contexts(second)
    assert contexts and all(FACTS_HEADER not in c for c in contexts.values())
    dated = [c for c in contexts.values() if VALID_AT_HEADER in c]
    assert dated, "no fact reached an answer context"
    for context in dated:
        block = context.split(VALID_AT_HEADER, 1)[1].split("\n\n", 1)[0].strip().splitlines()
        assert block and all(re.match(r"- \[(\d{1,2} \w+ \d{4}|date unknown)\] ", line) for line in block)
    ours_contexts = _answer_contexts(first).values()
    assert any(FACTS_HEADER in c for c in ours_contexts) and not any(
        VALID_AT_HEADER in c for c in ours_contexts
    )
