"""Structured-output specs from reply models: the schema strict mode accepts, and parsing by the same
model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import Field, field_validator

from mem0bench.llm.structured import ReplyModel, parse_reply, strict_schema
from mem0bench.llm.types import ReplyShapeError, StructuredSpec
from mem0bench.prompts import extraction, graph, update
from mem0bench.prompts.judge import JUDGE_SPEC, Verdict
from mem0bench.systems.methods.mem0.update import Decision, parse_decision
from tests.strict_schema import strict_violations


class Entity(ReplyModel):
    name: str
    type: str


class Entities(ReplyModel):
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


class Place(ReplyModel):
    """A docstring for us, not for the LLM."""

    city: str


class Trip(ReplyModel):
    """Neither is this one."""

    to: Place = Field(description="Where the trip goes.")


def test_only_field_descriptions_are_sent() -> None:
    schema = strict_schema(Trip)
    assert "docstring" not in str(schema) and "Neither" not in str(schema)
    assert schema["properties"]["to"]["description"] == "Where the trip goes."
    assert schema["properties"]["to"]["properties"] == {"city": {"type": "string"}}


# ---- every prompt's spec comes from a model, and requests did not change --------------------------------

# The specs as they were written by hand before they came from models (name, description, mode, schema):
# requests, and so cache keys, must stay the same.
BEFORE_MODELS = json.loads(
    (Path(__file__).parent / "data" / "structured_specs_before_models.json").read_text()
)


def _current_specs() -> dict[str, StructuredSpec]:
    specs = {
        "record_facts": extraction.EXTRACTION_SPEC,
        "decide_memory_operation": update.UPDATE_SPEC,
        "record_entities": graph.ENTITIES_SPEC,
        "record_relations": graph.RELATIONS_SPEC,
        "mark_obsolete": graph.OBSOLETE_SPEC,
        "record_query_entities": graph.QUERY_ENTITIES_SPEC,
        "record_verdict": JUDGE_SPEC,
    }
    specs.update({f"decide_memory_operations_{n}": update.batch_update_spec(n) for n in (0, 1, 4)})
    return specs


@pytest.mark.parametrize("key", sorted(BEFORE_MODELS))
def test_each_spec_from_its_model_is_the_hand_written_one(key: str) -> None:
    spec = _current_specs()[key]
    assert dataclasses.asdict(spec) == BEFORE_MODELS[key]
    assert strict_violations(spec.parameters) == []


def test_the_batched_spec_keeps_its_exact_count_and_is_built_once_per_count() -> None:
    operations = update.batch_update_spec(3).parameters["properties"]["operations"]
    assert operations["minItems"] == operations["maxItems"] == 3
    assert operations["items"]["properties"]["fact"]["maximum"] == 2
    assert update.batch_update_spec(3) is update.batch_update_spec(3)  # one schema object to compile
    model = update.batch_operations_model(2)
    one = {"fact": 0, "event": "ADD", "id": None, "text": "x"}
    assert len(parse_reply(model, {"operations": [one, {**one, "fact": 1}]}).operations) == 2  # type: ignore[attr-defined]
    with pytest.raises(ReplyShapeError, match="operations"):
        parse_reply(model, {"operations": [one]})
    with pytest.raises(ReplyShapeError, match="fact"):
        parse_reply(model, {"operations": [one, {**one, "fact": 2}]})


def test_the_models_validate_as_leniently_as_the_hand_written_parsers_did() -> None:
    # Missing or null lists are empty; items of the wrong shape are dropped or reported, not fatal.
    assert extraction.parse_facts({}) == [] and extraction.parse_facts({"facts": None}) == []
    assert extraction.parse_facts({"facts": ["Ann  runs", 3, "ann runs"]}) == ["Ann runs", "3"]
    assert graph.parse_entities({"entities": [{"type": "city"}, {"name": "Oslo"}, 4]}) == [("Oslo", "entity")]
    assert graph.parse_relations({"relations": [{"source": "A", "relation": "r"}]}) == []
    assert graph.parse_query_entities({"entities": [{"name": "Jon"}, 5, "Ann"]}) == ["Jon", "Ann"]
    assert parse_decision({"event": " replace ", "id": 3}, "the fact") == Decision("REPLACE", "3", "the fact")
    assert parse_decision({"event": "MERGE"}, "f") is None and parse_decision(["ADD"], "f") is None
    # A field that is not a list is a malformed reply, named in one line.
    for parse, field in ((extraction.parse_facts, "facts"), (graph.parse_query_entities, "entities")):
        with pytest.raises(ReplyShapeError, match=field):
            parse({field: "Ann"})


# ---- parse_reply's one-line message: pydantic's first error and where it is -------------------------------


class Item(ReplyModel):
    n: int = Field(ge=1, le=3, description="A number.")


class Box(ReplyModel):
    """Not sent."""

    kind: Literal["a", "b"]
    items: list[Item] = Field(min_length=1, max_length=2)
    note: str | None = None

    _empty_is_none = field_validator("note", mode="before")(lambda v: v or None)


def _error(data: Any) -> str:
    with pytest.raises(ReplyShapeError) as caught:
        parse_reply(Box, data)
    return str(caught.value)


def test_a_reply_that_does_not_fit_is_one_line_naming_the_field() -> None:
    # Lax where models are sloppy ("2" for 2, 3.0 for 3, an unknown key), a named field where it matters.
    assert parse_reply(Box, {"kind": "a", "items": [{"n": "2"}], "x": 1}) == Box(kind="a", items=[Item(n=2)])
    assert parse_reply(Box, {"kind": "b", "items": [{"n": 3.0}], "note": ""}).note is None
    assert _error([]) == "Input should be a valid dictionary or instance of Box (at the top level)"
    assert _error({"items": []}) == "Field required (at kind)"
    assert _error({"kind": "c"}) == "Input should be 'a' or 'b' (at kind)"
    assert _error({"kind": "a", "items": []}) == (
        "List should have at least 1 item after validation, not 0 (at items)"
    )
    assert _error({"kind": "a", "items": [{"n": 0}]}) == (
        "Input should be greater than or equal to 1 (at items/0/n)"
    )
    assert _error({"kind": "a", "items": [{"n": 1.5}]}) == (
        "Input should be a valid integer, got a number with a fractional part (at items/0/n)"
    )
    assert _error({"kind": "a", "items": [{"n": 1}], "note": 5}) == "Input should be a valid string (at note)"
    assert json.dumps(strict_schema(Box)) == (
        '{"properties": {"kind": {"enum": ["a", "b"], "type": "string"}, "items": {"items": {"properties": '
        '{"n": {"description": "A number.", "maximum": 3, "minimum": 1, "type": "integer"}}, "required": ["n"], '
        '"type": "object", "additionalProperties": false}, "maxItems": 2, "minItems": 1, "type": "array"}, '
        '"note": {"type": ["string", "null"]}}, "required": ["kind", "items", "note"], "type": "object", '
        '"additionalProperties": false}'
    )


def test_a_wrongly_typed_reply_names_its_field_in_each_prompts_parser() -> None:
    with pytest.raises(ReplyShapeError, match=r"valid string \(at reasoning\)"):
        parse_reply(Verdict, {"reasoning": 3, "label": "WRONG"})
    with pytest.raises(ReplyShapeError, match=r"valid list \(at obsolete\)"):
        graph.parse_obsolete({"obsolete": "0"}, 1)
