"""Structured-output specs from pydantic models: the schema strict mode accepts, and parsing by the same
model."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from mem0bench.llm.structured import parse_reply, strict_schema
from mem0bench.llm.types import ReplyShapeError
from mem0bench.prompts.judge import JUDGE_SPEC, Verdict


class Entity(BaseModel):
    name: str
    type: str


class Entities(BaseModel):
    entities: list[Entity]
    note: str | None = None


# The judge's schema as it was written by hand before it came from a model: requests (and so cache keys)
# must not change.
HAND_WRITTEN_JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "One short sentence on why."},
        "label": {"type": "string", "enum": ["CORRECT", "WRONG"]},
    },
    "required": ["reasoning", "label"],
    "additionalProperties": False,
}


def test_the_judge_spec_from_its_model_is_the_hand_written_one() -> None:
    assert JUDGE_SPEC.parameters == HAND_WRITTEN_JUDGE_SCHEMA
    assert JUDGE_SPEC.name == "record_verdict" and JUDGE_SPEC.mode == "tool"


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
    verdict = parse_reply(Verdict, {"reasoning": "same date", "label": "CORRECT"})  # the judge's model
    assert verdict.label == "CORRECT"
    with pytest.raises(ReplyShapeError, match="label"):
        parse_reply(Verdict, {"reasoning": "x", "label": "MAYBE"})
    with pytest.raises(ReplyShapeError):
        parse_reply(Entities, {"entities": "Ann"})


class Place(BaseModel):
    """A docstring for us, not for the LLM."""

    city: str


class Trip(BaseModel):
    """Neither is this one."""

    to: Place = Field(description="Where the trip goes.")


def test_only_field_descriptions_are_sent() -> None:
    schema = strict_schema(Trip)
    assert "docstring" not in str(schema) and "Neither" not in str(schema)
    assert schema["properties"]["to"]["description"] == "Where the trip goes."
    assert schema["properties"]["to"]["properties"] == {"city": {"type": "string"}}
