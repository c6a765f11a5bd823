"""Structured-output specs from pydantic models: the schema strict mode accepts, and parsing by the same
model."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from mem0bench.llm.structured import parse_reply, spec_from_model, strict_schema
from mem0bench.llm.types import ReplyShapeError
from mem0bench.prompts.judge import JUDGE_SPEC


class Verdict(BaseModel):
    reasoning: str = Field(description="One short sentence on why.")
    label: Literal["CORRECT", "WRONG"]


class Entity(BaseModel):
    name: str
    type: str


class Entities(BaseModel):
    entities: list[Entity]
    note: str | None = None


def test_a_model_gives_the_hand_written_judge_schema() -> None:
    spec = spec_from_model(JUDGE_SPEC.name, JUDGE_SPEC.description, Verdict)
    assert spec == JUDGE_SPEC


def _objects(node: object) -> list[dict]:
    if isinstance(node, dict):
        own = [node] if node.get("type") == "object" else []
        return own + [o for value in node.values() for o in _objects(value)]
    if isinstance(node, list):
        return [o for item in node for o in _objects(item)]
    return []


def test_strict_schema_requires_everything_and_allows_nothing_else() -> None:
    schema = strict_schema(Entities)
    assert "$defs" not in schema and "$ref" not in str(schema) and "title" not in str(schema)
    objects = _objects(schema)
    assert len(objects) == 2  # the reply and the inlined Entity
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert schema["required"] == ["entities", "note"]  # optional in Python, still required (nullable)


def test_parse_reply_validates_with_the_same_model() -> None:
    verdict = parse_reply(Verdict, {"reasoning": "same date", "label": "CORRECT"})
    assert verdict.label == "CORRECT"
    with pytest.raises(ReplyShapeError, match="label"):
        parse_reply(Verdict, {"reasoning": "x", "label": "MAYBE"})
    with pytest.raises(ReplyShapeError):
        parse_reply(Entities, {"entities": "Ann"})
