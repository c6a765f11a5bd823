"""Structured-output specs from reply models: the schema strict mode accepts, and parsing by the same
model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mem0bench.llm.structured import parse_reply, reply_field, reply_model, strict_schema
from mem0bench.llm.types import ReplyShapeError, StructuredSpec
from mem0bench.prompts import extraction, graph, update
from mem0bench.prompts.judge import JUDGE_SPEC, Verdict
from mem0bench.systems.methods.mem0.update import Decision, parse_decision
from tests.strict_schema import strict_violations


@reply_model
class Entity:
    name: str
    type: str


@reply_model
class Entities:
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


@reply_model
class Place:
    """A docstring for us, not for the LLM."""

    city: str


@reply_model
class Trip:
    """Neither is this one."""

    to: Place = reply_field(description="Where the trip goes.")


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
