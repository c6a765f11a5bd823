"""OpenAI's rules for a JSON schema sent with `strict: true` (Structured Outputs), as a checker.

The rules (platform.openai.com/docs/guides/structured-outputs, "Supported schemas"): the root is an
object, not `anyOf`; every object lists all its properties in `required` and has `additionalProperties:
false`; only a subset of JSON Schema keywords is accepted; at most 10 levels of nesting and 5,000 object
properties in all; enums of at most 1,000 values.
"""

from __future__ import annotations

from typing import Any

TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
KEYWORDS = {
    # structure
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const",
    "$ref", "$defs", "definitions", "description", "title",
    # strings
    "pattern", "format",
    # numbers
    "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    # arrays
    "minItems", "maxItems",
}  # fmt: skip
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
MAX_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM = 1000


def strict_violations(schema: Any) -> list[str]:
    """Every way `schema` breaks the strict rules, as "<json path>: <rule>" lines; [] when it is valid."""
    problems: list[str] = []
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append("$: the root must be an object schema")
    if isinstance(schema, dict) and "anyOf" in schema:
        problems.append("$: the root must not be anyOf")
    counter = [0]
    _walk(schema, "$", 0, problems, counter)
    if counter[0] > MAX_PROPERTIES:
        problems.append(f"$: {counter[0]} object properties, more than {MAX_PROPERTIES}")
    return problems


def _walk(node: Any, path: str, depth: int, problems: list[str], counter: list[int]) -> None:
    if not isinstance(node, dict):
        problems.append(f"{path}: a schema must be an object, not {type(node).__name__}")
        return
    if depth > MAX_DEPTH:
        problems.append(f"{path}: nested deeper than {MAX_DEPTH} levels")
    for key in node:
        if key not in KEYWORDS:
            problems.append(f"{path}: keyword {key!r} is not supported in strict mode")
    types = node.get("type")
    type_list = types if isinstance(types, list) else [types] if types is not None else []
    for t in type_list:
        if t not in TYPES:
            problems.append(f"{path}: type {t!r} is not supported")
    if "format" in node and node["format"] not in FORMATS:
        problems.append(f"{path}: format {node['format']!r} is not supported")
    if "enum" in node and len(node["enum"]) > MAX_ENUM:
        problems.append(f"{path}: enum of {len(node['enum'])} values, more than {MAX_ENUM}")
    if "object" in type_list or "properties" in node:
        props = node.get("properties")
        if not isinstance(props, dict):
            problems.append(f"{path}: an object must list its properties")
            props = {}
        counter[0] += len(props)
        if node.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        required = node.get("required")
        if not isinstance(required, list) or set(required) != set(props):
            missing = sorted(set(props) - set(required or []))
            problems.append(f"{path}: every property must be required (missing: {', '.join(missing) or '-'})")
        for name, sub in props.items():
            _walk(sub, f"{path}.properties.{name}", depth + 1, problems, counter)
    if "items" in node:
        _walk(node["items"], f"{path}.items", depth + 1, problems, counter)
    for i, sub in enumerate(node.get("anyOf", [])):
        _walk(sub, f"{path}.anyOf[{i}]", depth + 1, problems, counter)
    for defs in ("$defs", "definitions"):
        for name, sub in (node.get(defs) or {}).items():
            _walk(sub, f"{path}.{defs}.{name}", depth + 1, problems, counter)


def strict_schemas(body: Any, path: str = "body") -> list[tuple[str, Any]]:
    """Every schema in a request body (or a part of one) that is sent with `strict: true`."""
    found: list[tuple[str, Any]] = []
    if isinstance(body, dict):
        if body.get("strict") is True:
            found.append((path, body.get("schema", body.get("parameters"))))
        for key, value in body.items():
            found += strict_schemas(value, f"{path}.{key}")
    elif isinstance(body, list):
        for i, value in enumerate(body):
            found += strict_schemas(value, f"{path}[{i}]")
    return found
