"""Requests as OpenAI's API takes them: strict structured-output schemas."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import pytest

import mem0bench.prompts
from mem0bench.llm.payloads import structured_request
from mem0bench.llm.types import StructuredSpec
from tests.strict_schema import strict_schemas, strict_violations


def _all_specs() -> dict[str, StructuredSpec]:
    """Every structured-output spec the prompts define (module-level), by module and name."""
    specs: dict[str, StructuredSpec] = {}
    for info in pkgutil.walk_packages(mem0bench.prompts.__path__, "mem0bench.prompts."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, StructuredSpec):
                specs[f"{info.name}.{name}"] = value
    return specs


SPECS = _all_specs()


def test_the_specs_are_found() -> None:
    # The judge, Mem0's extraction and update, Mem0^g's entity, relation, obsolete and query specs.
    assert len(SPECS) >= 7, sorted(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_strict_schema_follows_openais_rules(name: str) -> None:
    # Whatever mode a spec is configured for, it must survive json_schema mode, where strict is on.
    for mode in ("tool", "json_schema"):
        fields, _ = structured_request(dataclasses.replace(SPECS[name], mode=mode))
        sent = strict_schemas(fields)
        if mode == "json_schema":
            assert sent, "json_schema mode must send its schema with strict: true"
        for where, schema in sent:
            problems = strict_violations(schema)
            assert not problems, f"{name} ({mode}) at {where}:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, "additionalProperties"),
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"],
          "additionalProperties": False}, "missing: b"),
        ({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}, "required": ["a"],
          "additionalProperties": False}, "'minLength' is not supported"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {
            "x": {"type": "string"}}, "required": ["x"]}}}, "required": ["a"], "additionalProperties": False},
         "$.properties.a.items: additionalProperties"),
        ({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}, "required": ["a"],
          "additionalProperties": False}, "'default'"),
        ({"type": "array", "items": {"type": "string"}}, "root must be an object"),
    ],
)  # fmt: skip
def test_the_checker_catches_each_rule(schema: dict, rule: str) -> None:
    assert any(rule in p for p in strict_violations(schema)), strict_violations(schema)
    assert strict_schemas({"response_format": {"json_schema": {"strict": True, "schema": schema}}})
