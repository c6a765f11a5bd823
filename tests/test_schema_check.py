"""Our structured-output checker (mem0bench/llm/schema_check.py) against jsonschema, the library it replaces
on the run path: the same verdict and the same message (the model reads it in the repair prompt) for each
keyword, and for thousands of generated replies on every schema we ship."""

from __future__ import annotations

import ast
import copy
import random
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from jsonschema.exceptions import best_match

import mem0bench
from devtools.reply_fixtures import shipped_specs
from mem0bench.llm.replies import SchemaChecker
from mem0bench.llm.schema_check import UnsupportedSchemaError
from mem0bench.llm.types import StructuredSpec

PACKAGE = Path(mem0bench.__file__).resolve().parent

# The functions that build a spec. Every schema they can return is in devtools.reply_fixtures'
# `shipped_specs` (the one walk over the package's specs, which tests/test_reply_models.py pins too); a new
# one fails test_every_spec_factory_is_covered until it is listed here and reached there.
FACTORIES = {
    "mem0bench.llm.probes._probe_spec",
    "mem0bench.llm.structured.spec_from_model",  # every spec it makes is a module constant
    "mem0bench.prompts.extraction.extraction_spec",  # returns the module's constants
    "mem0bench.prompts.update.update_spec",  # returns the module's constants
    "mem0bench.prompts.update.batch_update_spec",  # built for several sizes there
}


def _modules_naming(words: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(w in path.read_text(encoding="utf-8") for w in words):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def _one_per_schema(specs: dict[str, StructuredSpec]) -> dict[str, StructuredSpec]:
    seen: set[int] = set()
    kept = {}
    for where, spec in specs.items():
        if id(spec.parameters) not in seen:
            seen.add(id(spec.parameters))
            kept[where] = spec
    return kept


SPECS = _one_per_schema(shipped_specs())


def test_every_spec_factory_is_covered() -> None:
    factories = set()
    for module in _modules_naming(("-> StructuredSpec",)):
        tree = ast.parse((PACKAGE.parent / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and ast.unparse(node.returns or ast.Constant(None)) in (
                "StructuredSpec",
                "'StructuredSpec'",
            ):
                factories.add(f"{module}.{node.name}")
    assert factories == FACTORIES
    # The 13 module constants (the judge's two, extraction's two, update's two, graph's five, the saved
    # notes' two), the probe's and 10 batched ones (five sizes, two operation sets).
    assert len(SPECS) == 24, sorted(SPECS)


def _jsonschema_says(data: Any, spec: StructuredSpec) -> str | None:
    """What the checker said when it was jsonschema (replies.py before this module): best_match's message
    with where it is."""
    if not isinstance(data, dict):
        return f"the output must be a JSON object, got {type(data).__name__}"
    cls = jsonschema.validators.validator_for(spec.parameters, default=jsonschema.Draft202012Validator)
    error = best_match(cls(spec.parameters).iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at {where or 'the top level'})"


def _spec(schema: dict[str, Any], name: str = "test_spec") -> StructuredSpec:
    return StructuredSpec(name, "", schema, "tool")


def _says(schema: dict[str, Any], data: Any) -> str | None:
    """Our checker's verdict, asserted equal to jsonschema's."""
    spec = _spec(schema)
    ours = SchemaChecker().check(data, spec)
    assert ours == _jsonschema_says(data, spec)
    return ours


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


# ---- keywords we do not check ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sub",
    [
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"const": "x"},
        {"$ref": "#/$defs/x"},
        {"type": "string", "pattern": "^a"},
        {"type": "string", "format": "date"},
        {"oneOf": [{"type": "string"}]},
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "array", "items": {"type": "string", "minLength": 1}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
    ],
)
def test_an_unsupported_keyword_is_refused_naming_it_and_the_spec(sub: dict[str, Any]) -> None:
    unsupported = next(k for k in _walk_keys(sub) if k not in {"type", "items"})
    spec = _spec(_prop(sub), name="record_things")
    with pytest.raises(UnsupportedSchemaError, match=rf"`record_things`.*{re.escape(f'`{unsupported}`')}"):
        SchemaChecker().check({"v": "x"}, spec)
    with pytest.raises(UnsupportedSchemaError, match="record_things"):
        SchemaChecker().check([], spec)  # before looking at the data: a bug, whatever the reply


def _walk_keys(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [k for key, value in node.items() for k in (key, *_walk_keys(value))]
    if isinstance(node, list):
        return [k for item in node for k in _walk_keys(item)]
    return []


def test_bad_keyword_values_and_a_draft_switch_are_refused() -> None:
    for schema in (
        {"type": "strnig"},
        {"type": []},
        {"required": "a"},
        {"additionalProperties": 0},
        {"properties": {"v": False}},  # jsonschema puts a false subschema's error one level too high
        {"items": True},
        {"minItems": -1},
        {"maximum": "2"},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
    ):
        with pytest.raises(UnsupportedSchemaError, match="`test_spec`"):
            SchemaChecker().check({}, _spec(schema))


def test_each_schema_is_compiled_once() -> None:
    checker = SchemaChecker()
    spec = SPECS["mem0bench.prompts.judge.JUDGE_SPEC"]
    first = checker.compiled(spec)
    assert checker.compiled(spec) is first
    assert checker.compiled(_spec(copy.deepcopy(spec.parameters))) is not first


# ---- every shipped schema, against jsonschema ---------------------------------------------------------------


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type", [])
    return [t] if isinstance(t, str) else list(t)


def _valid(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A random instance of `schema` (the shipped keywords only)."""
    if "enum" in schema:
        return copy.deepcopy(rng.choice(schema["enum"]))
    kind = rng.choice(_types(schema) or ["string"])
    if kind == "object":
        return {k: _valid(sub, rng, depth + 1) for k, sub in schema.get("properties", {}).items()}
    if kind == "array":
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + (3 if depth < 3 else 1))
        return [_valid(schema.get("items", {}), rng, depth + 1) for _ in range(rng.randint(low, high))]
    if kind == "integer":
        low, high = schema.get("minimum", -3), schema.get("maximum", 40)
        value = rng.randint(low, high)
        return float(value) if rng.random() < 0.1 else value  # 3.0 is an integer too
    if kind == "number":
        return rng.choice([rng.randint(-5, 5), rng.uniform(-5, 5)])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return rng.choice(["", "Caroline", "7 May 2023", "a 'quoted' fact", "ünïcode"])


def _places(value: Any, schema: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every (path, subschema) in a valid instance."""
    out: list[tuple[tuple[Any, ...], Any]] = [(path, schema)]
    if isinstance(value, dict) and isinstance(schema, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                out += _places(value[key], sub, (*path, key))
    elif isinstance(value, list) and isinstance(schema, dict):
        for i, item in enumerate(value):
            out += _places(item, schema.get("items", {}), (*path, i))
    return out


_WRONG = [None, True, False, 0, 1, 1.0, 2.5, -7, 10**6, "", "x", "MAYBE", [], [1], {}, {"a": 1}]


def _mutate(root: Any, schema: dict[str, Any], rng: random.Random) -> Any:
    """`root` with one thing broken somewhere (it may still be valid: 1.0 where integers go)."""
    path, sub = rng.choice(_places(root, schema))
    parent: Any = None
    value = root
    for step in path:
        parent, value = value, value[step]
    kinds = ["replace", "replace", "drop", "extra", "item", "enum", "count"]
    kind = rng.choice(kinds if path else ["drop", "extra"])  # the top level stays an object
    new: Any = value
    if kind == "drop" and isinstance(value, dict) and value:
        new = dict(value)
        del new[rng.choice(list(new))]
    elif kind == "extra" and isinstance(value, dict):
        new = dict(value)
        for key in rng.sample(["x", "note", "Zed", "extra_field", "a"], rng.randint(1, 3)):
            new[key] = rng.choice(_WRONG)
    elif kind == "item" and isinstance(value, list):
        new = [*value, rng.choice(_WRONG)]
        rng.shuffle(new)
    elif kind == "enum" and isinstance(sub, dict) and "enum" in sub:
        new = rng.choice([str(rng.choice(sub["enum"])).lower(), "MAYBE", None, 1])
    elif kind == "count" and isinstance(value, list):
        new = value[: rng.randint(0, len(value))] if rng.random() < 0.5 else value * 2 + value
    else:
        new = copy.deepcopy(rng.choice(_WRONG))
    if parent is None:
        return new
    parent[path[-1]] = new
    return root


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_shipped_schema_gets_jsonschemas_verdict_and_message(name: str) -> None:
    spec = SPECS[name]
    checker = SchemaChecker()
    rng = random.Random(f"schema-check {name}")
    valid = invalid = 0
    for i in range(400):
        data = _valid(spec.parameters, rng)
        for _ in range(i % 4):  # 0 to 3 things broken
            data = _mutate(data, spec.parameters, rng)
        expected = _jsonschema_says(data, spec)
        assert checker.check(data, spec) == expected, data
        valid += expected is None
        invalid += expected is not None
    assert valid >= 100 and invalid >= 150, (valid, invalid)  # both verdicts well exercised
