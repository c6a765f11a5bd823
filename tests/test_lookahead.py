"""Mem0 and Mem0^g run their conversation-only work ahead of the update chain (`method.lookahead`) without
changing a single request, memory or answer.

End to end through the CLI on the deterministic stand-in: a run at lookahead 0 (pair by pair, the order
before lookahead existed) and one at the default leave byte-identical state folders (operation logs,
stores, summaries, graphs) and the same answers and judgements, and the server receives the same requests
(as a multiset), pinned by a digest taken on the code before lookahead existed. In process, with a client
that takes time per call: the extraction of later pairs really runs while the chain decides earlier ones,
never more than `lookahead` pairs ahead, and at lookahead 0 never.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.cli.status import render
from mem0bench.llm import timing
from mem0bench.memory.base import SystemContext
from mem0bench.memory.ingest_progress import timing_chains
from mem0bench.pipeline.stage_timing import timing_line
from mem0bench.status.reader import read_status
from mem0bench.systems.methods.mem0 import Mem0
from mem0bench.systems.methods.mem0g import Mem0G
from tests.test_mem0 import (  # noqa: F401 (typed_prompt_inputs: autouse)
    FakeClient,
    default_decision,
    default_facts,
    failure,
    make_conversation,
    typed_prompt_inputs,
)

# `request_digest` of one run (`cli_run`), taken at f6ee05a, before lookahead existed. Distinct requests:
# the two speaker streams of a conversation send the same summary request, and whether the second finds
# the first's reply in the cache depends on timing (it did before lookahead too).
PINNED = {
    "mem0": "67acec298b06c31fa6d6952ad03cbf4af09cf5743cbf354bf1a8200e1c329a4a",
    "mem0g": "9f293ced08181a1c16ef0980f936aa3d3d3f232ac43bce5b9145be22c397ca3b",
}


def request_digest(requests: list[tuple[str, dict[str, Any]]]) -> str:
    """The distinct chat requests and the texts embedded (with their request's other fields): the client
    sends only the texts its cache lacks, so which request carries a text depends on timing."""
    chats = {json.dumps([path, body], sort_keys=True) for path, body in requests if path != "embeddings"}
    texts = {
        json.dumps([text, {k: v for k, v in body.items() if k != "input"}], sort_keys=True)
        for path, body in requests
        if path == "embeddings"
        for text in body["input"]
    }
    return hashlib.sha256("\n".join([*sorted(chats), *sorted(texts)]).encode()).hexdigest()


def cli_run(exp: str, tmp: Path, locomo: Path, *extra: str) -> tuple[Path, str, str]:
    """One run of `exp` on mini-1 (summaries every 2 pairs, so refreshes fall while extraction runs ahead);
    the run folder, the digest of every request the stand-in received and what the run printed."""
    run_dir = tmp / "run"
    with StandinServer(api_key=TEST_KEY) as server:
        args = [
            "run", f"+exp={exp}", f"dataset.path={locomo}", "dataset.conversations=[mini-1]",
            "eval.max_questions=6", "judge.runs=1", "method.summary_every=2", f"hydra.run.dir={run_dir}",
            *FAST, *extra,
        ]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp / "cache"))
        assert result.returncode == 0, result.stderr[-3000:]
        requests = list(server.requests)
        assert len(requests) < (server.requests.maxlen or 0)  # the log kept every request
    return run_dir, request_digest(requests), result.stderr


def state_files(run_dir: Path) -> dict[str, bytes]:
    root = run_dir / "state"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def answers(run_dir: Path) -> list[tuple[str, str, Any]]:
    rows = read_jsonl(run_dir / "predictions.jsonl")
    return sorted((r["qid"], r["prediction"], r["judge"]) for r in rows)


@pytest.mark.parametrize("exp", ["mem0", "mem0g"])
def test_lookahead_changes_no_request_memory_or_answer(exp: str, tmp_path: Path, locomo_mini: Path) -> None:
    sequential, sequential_digest, _ = cli_run(exp, tmp_path / "0", locomo_mini, "method.lookahead=0")
    ahead, ahead_digest, printed = cli_run(exp, tmp_path / "default", locomo_mini)

    assert sequential_digest == ahead_digest == PINNED[exp]
    before, after = state_files(sequential), state_files(ahead)
    assert any(name.endswith(".ops.jsonl") for name in before) and before.keys() == after.keys()
    for name in before:
        assert before[name] == after[name], name
    summaries = json.loads((ahead / "state" / "mini-1" / "maya" / "meta.json").read_text())["summaries"]
    assert len(summaries) > 2  # refreshes happened (and matched byte for byte above)
    assert answers(sequential) == answers(ahead) and len(answers(ahead)) == 6


# ---- in process: the extraction really runs ahead, within its bound ---------------------------------


class SlowClient(FakeClient):
    """The scripted fake (with a one-triplet graph step), each call taking a few milliseconds, logging when
    each kind of call starts."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on("record_entities", lambda call: {"entities": [{"name": "Ann", "type": "person"}]})
        triplet = {"source": "Ann", "relation": "likes", "destination": "tea"}
        self.on("record_relations", lambda call: {"relations": [triplet]})
        self.on("mark_obsolete", lambda call: {"obsolete": []})
        self.events: list[tuple[str, int]] = []  # (call kind, how many update calls had finished)
        self.updates_done = 0
        self.in_flight = 0
        self.most_in_flight = 0

    async def _slow(self, kind: str, call: Any) -> Any:
        self.events.append((kind, self.updates_done))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.003)
            timing.add_network(0.003)  # as the real client does: the chain's timing sees its requests
            return await call
        finally:
            self.in_flight -= 1
            if kind == "update":
                self.updates_done += 1

    async def structured(self, messages: Any, spec: Any, **kw: Any) -> Any:
        kind = "update" if "operation" in spec.name else "extract" if "fact" in spec.name else spec.name
        return await self._slow(kind, super().structured(messages, spec, **kw))

    async def embed(self, texts: list[str], **kw: Any) -> Any:
        return await self._slow("embed", super().embed(texts, **kw))


SESSIONS = [[("Ann", f"FACT: Ann fact {i}"), ("Bob", "ok")] for i in range(12)]


def ingest(system_class: type[Mem0], client: SlowClient, state_dir: Path, lookahead: int) -> list[float]:
    system = system_class(
        context=SystemContext(client=client, state_dir=state_dir),  # type: ignore[arg-type]
        per_speaker=False,
        summary_every=100,
        lookahead=lookahead,
    )
    chain: list[float] = []
    with timing_chains(lambda stream, seconds, calls: chain.append(calls)):
        asyncio.run(system.ingest(make_conversation(SESSIONS)))
    return chain


def extractions_started(client: SlowClient) -> list[int]:
    """For each extraction call, how many update decisions had finished when it started."""
    return [done for kind, done in client.events if kind == "extract"]


@pytest.mark.parametrize("system_class", [Mem0, Mem0G])
def test_extraction_runs_ahead_of_the_chain_within_lookahead(
    system_class: type[Mem0], tmp_path: Path
) -> None:
    sequential = SlowClient()
    ingest(system_class, sequential, tmp_path / "0", 0)
    # Pair by pair: extraction of pair p starts once the p decisions before it are made (one fact a pair).
    assert extractions_started(sequential) == list(range(12))

    ahead = SlowClient()
    chain = ingest(system_class, ahead, tmp_path / "3", 3)
    started = extractions_started(ahead)
    # Pairs 0..3 are extracted before the first decision; pair p never before decision p - 3 is made.
    assert started[:4] == [0, 0, 0, 0]
    assert all(done >= p - 3 for p, done in enumerate(started)) and started != list(range(12))
    assert ahead.most_in_flight > sequential.most_in_flight
    # The chain reports one step per pair, its one call the pair's update decision: extraction, the fact
    # embeddings and Mem0^g's entity and relation calls are off it (the graph step's one triplet repeats,
    # so it needs no resolver call).
    assert chain == [1] * 12


def test_stage_timings_in_run_json_summary_and_status(tmp_path: Path, locomo_mini: Path) -> None:
    sequential, _, _ = cli_run("mem0", tmp_path / "0", locomo_mini, "method.lookahead=0")
    ahead, _, printed = cli_run("mem0", tmp_path / "default", locomo_mini)
    timings = [json.loads((run / "run.json").read_text())["timing"] for run in (sequential, ahead)]
    for recorded in timings:
        assert list(recorded) == ["ingest", "answer", "judge", "latency"]
        ingest = recorded["ingest"]
        assert ingest["calls"] > ingest["chain_calls"] > 0 and ingest["chain_stream"].startswith("mini-1/")
        assert 0 < ingest["chain_bound_s"] <= ingest["wall_s"]
        assert (
            recorded["answer"]["calls"] == 12 and recorded["judge"]["calls"] == 6
        )  # search+answer; 1 judge run
    # Pair by pair the chain holds every call of its stream; ahead, only the update decisions (and the
    # embeddings of texts the model rewrote).
    assert timings[1]["ingest"]["chain_calls"] < timings[0]["ingest"]["chain_calls"]
    assert timings[1]["ingest"]["calls"] == timings[0]["ingest"]["calls"]

    line = timing_line(timings[1])
    assert line is not None and line.startswith("ingest ") and "chain bound" in line
    assert f"timing: {line}" in printed
    assert f"  timing    {line}" in render(read_status(ahead)).splitlines()


def test_failures_are_recorded_in_the_sequential_order(tmp_path: Path) -> None:
    """Extraction failures of pairs run ahead are recorded when the chain reaches their pair: the failure
    rows (and the stream's saved meta) are the same at lookahead 0 and 3, whatever finishes first."""

    def facts(info: dict[str, Any]) -> Any:
        text = info["new"][0]["text"]
        return failure("timeout") if text.endswith(("2", "5")) else default_facts(info)

    def decide(memories: list[dict[str, str]], fact: str) -> Any:
        return failure("malformed") if fact.endswith(("4", "9")) else default_decision(memories, fact)

    rows = []
    for lookahead in (0, 3):
        client = FakeClient(facts=facts, decide=decide, seed=lookahead)  # random delays shuffle completions
        system = Mem0(
            context=SystemContext(client=client, state_dir=tmp_path / str(lookahead)),  # type: ignore[arg-type]
            summary_every=100,
            lookahead=lookahead,
        )
        asyncio.run(system.ingest(make_conversation(SESSIONS)))
        # Per stream (the two speakers' streams interleave by timing, as they always did).
        ann = [row.to_dict() for row in system.failures if row.speaker == "Ann"]
        meta = json.loads((tmp_path / str(lookahead) / "conv-t" / "ann" / "meta.json").read_text())
        assert meta["failures"] == ann and {r["system"] for r in ann} == {"mem0"}
        rows.append(ann)
    assert rows[0] == rows[1]
    assert [(r["stage"], r["pair_index"]) for r in rows[0]] == [
        ("extraction", 2), ("update", 4), ("extraction", 5), ("update", 9),
    ]  # fmt: skip
