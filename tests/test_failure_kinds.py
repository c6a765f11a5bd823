"""One failure taxonomy: a local error is its own kind (never a retryable server error), and parsers
raise a dedicated shape error instead of having our own TypeErrors taken for a malformed reply."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
import pytest

from mem0bench.llm.client import LLMClient
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import TRANSIENT_KINDS, LLMCallError, ReplyShapeError
from mem0bench.memory.base import StepFailure
from mem0bench.prompts.extraction import parse_facts
from mem0bench.prompts.graph import parse_entities, parse_obsolete, parse_or_none, parse_relations
from mem0bench.systems.methods.mem0.failures import has_transient


class BrokenLocalModel:
    """A local embedding backend whose model raises, as a local model can."""

    model = "local-test"
    remote = False
    dim: int | None = None

    async def embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int]:
        raise RuntimeError("CUDA out of memory")


def test_a_local_model_failure_is_a_local_error_and_not_transient() -> None:
    client = LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1", api_key="test-key"), BrokenLocalModel())

    async def go() -> None:
        try:
            await client.embed(["a text"], stage="ingest")
        finally:
            await client.aclose()

    with pytest.raises(LLMCallError) as caught:
        asyncio.run(go())
    assert caught.value.failure.kind == "local_error"
    assert "local_error" not in TRANSIENT_KINDS
    assert not has_transient([_step("local_error")]) and has_transient([_step("server_error")])


@pytest.mark.parametrize(
    ("parse", "field"),
    [
        (parse_facts, "facts"),
        (parse_entities, "entities"),
        (parse_relations, "relations"),
        (lambda data: parse_obsolete(data, 3), "obsolete"),
    ],
)
def test_parsers_raise_a_shape_error_for_a_field_that_is_not_a_list(parse: Any, field: str) -> None:
    with pytest.raises(ReplyShapeError, match=field):
        parse({field: "not a list"})
    with pytest.raises(ReplyShapeError):
        parse(["not", "an", "object"])
    assert parse({}) in ([], ([], []))


def test_parse_or_none_reads_only_shape_errors_as_malformed() -> None:
    assert parse_or_none(parse_entities, {"entities": 7}) is None
    assert parse_or_none(parse_entities, {"entities": [{"name": "Ann", "type": "person"}]}) == [
        ("Ann", "person")
    ]

    def buggy(data: dict[str, Any]) -> list[str]:
        return data["entities"] + 1  # a bug of ours: must surface, not pass as a malformed reply

    with pytest.raises(TypeError):
        parse_or_none(buggy, {"entities": []})


def _step(kind: str) -> StepFailure:
    return StepFailure(
        system="mem0", sample_id="conv-1", stage="update", kind=kind, message="m", speaker="Ann"
    )


def test_a_step_failure_writes_the_rows_the_files_always_held() -> None:
    # Ingestion steps: the stream's speaker and pair (and the fact, for an update); keys in this order.
    update = StepFailure(
        "mem0", "conv-1", "update", "malformed", "event 'X'", "Ann", 3, ("D1:1", "D1:2"), "f"
    )
    assert json.dumps(update.to_dict()) == (
        '{"system": "mem0", "sample_id": "conv-1", "speaker": "Ann", "pair_index": 3, '
        '"dia_ids": ["D1:1", "D1:2"], "stage": "update", "kind": "malformed", "message": "event \'X\'", '
        '"fact": "f"}'
    )
    assert update.detail() == {
        "system": "mem0",
        "speaker": "Ann",
        "pair_index": 3,
        "dia_ids": ["D1:1", "D1:2"],
        "fact": "f",
    }
    # Retrieval steps: the question instead.
    search = StepFailure("mem0g", "conv-1", "graph_query_entities", "server_error", "boom", qid="conv-1:q3")
    assert list(search.to_dict()) == ["system", "sample_id", "qid", "stage", "kind", "message"]
    for failure in (update, search, _step("timeout")):
        assert StepFailure.from_dict(json.loads(json.dumps(failure.to_dict()))) == failure
