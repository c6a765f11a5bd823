"""How a structured reply is checked (mem0bench/llm/replies.py's SchemaChecker, on jsonschema): the verdict
and the one-line message for each keyword our schemas use. The message is what the model reads in the repair
prompt (part of the repair request, and so of its cache key) and what a failure row records, so a jsonschema
upgrade that rewords one fails here."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mem0bench.llm.replies import InvalidSchemaError, SchemaChecker
from mem0bench.llm.types import StructuredSpec
from mem0bench.prompts.judge import JUDGE_SPEC


def _spec(schema: dict[str, Any], name: str = "test_spec") -> StructuredSpec:
    return StructuredSpec(name, "", schema, "tool")


def _says(schema: dict[str, Any], data: Any) -> str | None:
    return SchemaChecker().check(data, _spec(schema))


def _prop(sub: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": sub}, "required": ["v"], "additionalProperties": False}


# ---- one keyword at a time --------------------------------------------------------------------------------


def test_integer() -> None:
    s = _prop({"type": "integer"})
    assert _says(s, {"v": 3}) is None and _says(s, {"v": 3.0}) is None and _says(s, {"v": -0.0}) is None
    assert _says(s, {"v": True}) == "True is not of type 'integer' (at v)"
    assert _says(s, {"v": 3.5}) == "3.5 is not of type 'integer' (at v)"
    assert _says(s, {"v": "3"}) == "'3' is not of type 'integer' (at v)"
    assert _says(s, {"v": float("inf")}) == "inf is not of type 'integer' (at v)"


def test_number_boolean_null_string_object_array() -> None:
    assert _says(_prop({"type": "number"}), {"v": 2}) is None
    assert _says(_prop({"type": "number"}), {"v": 0.5}) is None
    assert _says(_prop({"type": "number"}), {"v": False}) == "False is not of type 'number' (at v)"
    assert _says(_prop({"type": "boolean"}), {"v": False}) is None
    assert _says(_prop({"type": "boolean"}), {"v": 0}) == "0 is not of type 'boolean' (at v)"
    assert _says(_prop({"type": "null"}), {"v": None}) is None
    assert _says(_prop({"type": "null"}), {"v": 0}) == "0 is not of type 'null' (at v)"
    assert _says(_prop({"type": "string"}), {"v": 1}) == "1 is not of type 'string' (at v)"
    assert _says(_prop({"type": "object"}), {"v": []}) == "[] is not of type 'object' (at v)"
    assert _says(_prop({"type": "array"}), {"v": {}}) == "{} is not of type 'array' (at v)"
    assert _says(_prop({"type": "array"}), {"v": (1,)}) == "(1,) is not of type 'array' (at v)"


def test_a_type_list() -> None:
    s = _prop({"type": ["string", "null"]})
    assert _says(s, {"v": None}) is None and _says(s, {"v": "x"}) is None
    assert _says(s, {"v": 1}) == "1 is not of type 'string', 'null' (at v)"


def test_enum() -> None:
    s = _prop({"type": "string", "enum": ["CORRECT", "WRONG"]})
    assert _says(s, {"v": "WRONG"}) is None
    assert _says(s, {"v": "MAYBE"}) == "'MAYBE' is not one of ['CORRECT', 'WRONG'] (at v)"
    assert _says(s, {"v": "wrong"}) == "'wrong' is not one of ['CORRECT', 'WRONG'] (at v)"
    numbers = _prop({"enum": [1, [1, 2], {"a": 0}, None]})
    assert _says(numbers, {"v": 1.0}) is None and _says(numbers, {"v": [1.0, 2]}) is None
    assert _says(numbers, {"v": {"a": 0.0}}) is None and _says(numbers, {"v": None}) is None
    assert _says(numbers, {"v": True}) == "True is not one of [1, [1, 2], {'a': 0}, None] (at v)"
    assert _says(numbers, {"v": [True, 2]}) == "[True, 2] is not one of [1, [1, 2], {'a': 0}, None] (at v)"
    assert (
        _says(numbers, {"v": {"a": False}}) == "{'a': False} is not one of [1, [1, 2], {'a': 0}, None] (at v)"
    )
    assert _says(_prop({"enum": [False]}), {"v": 0}) == "0 is not one of [False] (at v)"


def test_required_and_additional_properties() -> None:
    s = {
        "type": "object",
        "properties": {"a": {}, "b": {}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert _says(s, {"a": 1, "b": 2}) is None
    assert _says(s, {"b": 2}) == "'a' is a required property (at the top level)"
    assert _says(s, {}) == "'a' is a required property (at the top level)"  # the first in the list
    assert (
        _says(s, {"a": 1, "b": 2, "x": 3})
        == "Additional properties are not allowed ('x' was unexpected) (at the top level)"
    )
    assert (
        _says(s, {"a": 1, "b": 2, "y": 3, "x": 4})
        == "Additional properties are not allowed ('x', 'y' were unexpected) (at the top level)"
    )
    assert _says({**s, "additionalProperties": True}, {"a": 1, "b": 2, "x": 3}) is None
    typed = {**s, "additionalProperties": {"type": "integer"}}
    assert _says(typed, {"a": 1, "b": 2, "x": 3}) is None
    assert _says(typed, {"a": 1, "b": 2, "x": "3"}) == "'3' is not of type 'integer' (at x)"
    assert _says({"type": "object", "additionalProperties": False}, {"x": 1}) == (
        "Additional properties are not allowed ('x' was unexpected) (at the top level)"
    )


def test_items_and_counts() -> None:
    s = _prop({"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3})
    assert _says(s, {"v": ["a", "b"]}) is None
    assert _says(s, {"v": ["a", 1]}) == "1 is not of type 'string' (at v/1)"
    assert _says(s, {"v": ["a"]}) == "['a'] is too short (at v)"
    assert _says(s, {"v": ["a"] * 4}) == "['a', 'a', 'a', 'a'] is too long (at v)"
    assert _says(_prop({"type": "array", "minItems": 1}), {"v": []}) == "[] should be non-empty (at v)"
    assert _says(_prop({"type": "array", "maxItems": 0}), {"v": [1]}) == "[1] is expected to be empty (at v)"


def test_minimum_and_maximum() -> None:
    s = _prop({"type": "integer", "minimum": 0, "maximum": 2})
    assert _says(s, {"v": 0}) is None and _says(s, {"v": 2.0}) is None
    assert _says(s, {"v": -1}) == "-1 is less than the minimum of 0 (at v)"
    assert _says(s, {"v": 3}) == "3 is greater than the maximum of 2 (at v)"
    assert _says(s, {"v": True}) == "True is not of type 'integer' (at v)"  # a bool is not compared
    assert _says(_prop({"maximum": 2}), {"v": "9"}) is None  # only numbers are bounded


def test_annotations_are_ignored() -> None:
    noted = _prop({"type": "string", "title": "T", "description": "d", "$comment": "c", "default": "x"})
    assert _says(noted, {"v": "x"}) is None and _says(noted, {"v": 1}) == "1 is not of type 'string' (at v)"


def test_the_top_level_must_be_an_object() -> None:
    assert _says(_prop({}), [1]) == "the output must be a JSON object, got list"


def test_the_best_error_is_the_shallowest_then_the_greatest_path_then_the_first() -> None:
    s = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": _prop({"type": "string"})},
        "required": ["a", "b", "c"],
        "additionalProperties": False,
    }
    # Two errors at depth 1: jsonschema's relevance key takes the greater path, 'b' over 'a'.
    assert _says(s, {"a": 1, "b": 2, "c": {"v": "x"}}) == "2 is not of type 'string' (at b)"
    # A top-level error beats any deeper one; among top-level ones, the first found (keyword order).
    assert _says(s, {"a": 1, "b": 2, "c": {"v": 3}, "x": 0}) == (
        "Additional properties are not allowed ('x' was unexpected) (at the top level)"
    )
    assert _says(s, {"b": 2, "x": 0}) == "'a' is a required property (at the top level)"
    reordered = {"additionalProperties": False, **s}
    assert _says(reordered, {"b": 2, "x": 0}) == (
        "Additional properties are not allowed ('x' was unexpected) (at the top level)"
    )
    # Array items: the greater index wins at one depth.
    items = _prop({"type": "array", "items": {"type": "string"}})
    assert _says(items, {"v": [1, "x", 2]}) == "2 is not of type 'string' (at v/2)"
    # At one path, the first keyword of the schema: type before enum, or enum before type.
    both = _prop({"type": "string", "enum": ["A"]})
    assert _says(both, {"v": 1}) == "1 is not of type 'string' (at v)"
    assert _says(_prop({"enum": ["A"], "type": "string"}), {"v": 1}) == "1 is not one of ['A'] (at v)"


# ---- a schema that is not JSON Schema ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [{"type": "strnig"}, {"type": []}, {"required": "a"}, {"additionalProperties": 0}, {"minItems": -1}],
)
def test_an_invalid_schema_is_refused_naming_the_spec(schema: dict[str, Any]) -> None:
    spec = _spec(schema, name="record_things")
    with pytest.raises(InvalidSchemaError, match="`record_things` is not valid JSON Schema"):
        SchemaChecker().check({}, spec)
    with pytest.raises(InvalidSchemaError, match="record_things"):
        SchemaChecker().check([], spec)  # before looking at the data: a bug, whatever the reply


def test_each_schema_is_compiled_once() -> None:
    checker = SchemaChecker()
    spec = JUDGE_SPEC
    first = checker.compiled(spec)
    assert checker.compiled(spec) is first
    assert checker.compiled(_spec(copy.deepcopy(spec.parameters))) is not first
