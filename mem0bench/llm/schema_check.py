"""Checking data against our structured-output schemas, worded as jsonschema words it.

Every schema we send is machine-made (`llm/structured.py`'s `strict_schema` from a reply model, the
preflight probe's) and uses a small closed set of JSON Schema 2020-12 keywords. This module checks exactly
that set with 2020-12's meaning, and picks and words the error the way jsonschema 4's `best_match` does:
the message is what the model reads in the repair prompt and what a failure row records, so dropping
jsonschema (70-90 ms of every run's start-up) must change neither which replies count as malformed nor
what the model is told. tests/test_schema_check.py compares both with jsonschema on every shipped schema.

A keyword outside the set is refused when the schema is compiled, naming it and the spec: a programming
error, never a reply let through unchecked.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Checker", "Error", "UnsupportedSchemaError", "best_error", "compile_schema"]

Location = tuple[str | int, ...]
Error = tuple[Location, str]
"""Where in the instance (keys and indexes from the top), and jsonschema's message."""
Checker = Callable[[Any, Location, list[Error]], None]
"""Appends the instance's errors at `path` (and below) to the list, in jsonschema's order."""

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)
"""2020-12's meta-data keywords (and `$comment`): they never reject anything, so they are skipped."""


class UnsupportedSchemaError(Exception):
    """A schema this checker cannot check as jsonschema would: a bug in the schema's maker, not a reply."""


def _is_integer(value: Any) -> bool:
    # 2020-12: a number with no fractional part (3.0 too); bool is an int subclass in Python, not in JSON.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer,
    "null": lambda v: v is None,
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}


def _equal(one: Any, two: Any) -> bool:
    """JSON equality as `enum` wants it: 1 == 1.0, but True is not 1 (also inside lists and objects)."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return type(one) is type(two) and one == two
    return bool(one == two)


def best_error(errors: list[Error]) -> Error | None:
    """jsonschema's `best_match` over these keywords: the error nearest the top of the instance; among
    those, the greatest path (its relevance key compares paths too); among equals, the first found. (Its
    other criteria only separate errors at one path, and at one path our schemas have one subschema, so
    they are equal there.)"""
    return max(errors, key=lambda e: (-len(e[0]), e[0]), default=None)


def compile_schema(schema: Any, name: str) -> Checker:
    """A checker for `schema`; `name` (the spec's) is named when a keyword is not supported."""
    return _compile(schema, name, "#")


def _refuse(name: str, where: str, what: str) -> UnsupportedSchemaError:
    return UnsupportedSchemaError(
        f"the schema of `{name}` {what} at {where}: mem0bench/llm/schema_check.py checks only type, "
        "properties, required, additionalProperties, items, enum, minimum, maximum, minItems and maxItems"
    )


def _compile(schema: Any, name: str, where: str) -> Checker:
    # A boolean subschema is left out on purpose: jsonschema reports a `false` one's error one level too
    # high (without the key or index that led to it), which would tell the model the wrong place.
    if not isinstance(schema, dict):
        raise _refuse(name, where, f"is {schema!r}, not an object")
    checks = [
        _keyword(key, value, schema, name, f"{where}/{key}")
        for key, value in schema.items()
        if key not in _ANNOTATIONS
    ]

    def check(value: Any, path: Location, errors: list[Error]) -> None:
        for one in checks:
            one(value, path, errors)

    return check


def _keyword(key: str, value: Any, schema: dict[str, Any], name: str, where: str) -> Checker:
    """The check of one keyword, erring as jsonschema 4's function for that keyword does."""
    if key == "type":
        types = [value] if isinstance(value, str) else value
        if not isinstance(types, list) or not types or any(t not in _TYPES for t in types):
            raise _refuse(name, where, f"has the type {value!r}")
        tests = [_TYPES[t] for t in types]
        wanted = ", ".join(repr(t) for t in types)

        def type_(v: Any, path: Location, errors: list[Error]) -> None:
            if not any(test(v) for test in tests):
                errors.append((path, f"{v!r} is not of type {wanted}"))

        return type_
    if key == "properties":
        if not isinstance(value, dict):
            raise _refuse(name, where, "has properties that are not an object")
        subs = [(prop, _compile(sub, name, f"{where}/{prop}")) for prop, sub in value.items()]

        def properties(v: Any, path: Location, errors: list[Error]) -> None:
            if isinstance(v, dict):
                for prop, sub in subs:
                    if prop in v:
                        sub(v[prop], (*path, prop), errors)

        return properties
    if key == "required":
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise _refuse(name, where, "has a required list that is not a list of names")
        names = list(value)

        def required(v: Any, path: Location, errors: list[Error]) -> None:
            if isinstance(v, dict):
                errors.extend((path, f"{p!r} is a required property") for p in names if p not in v)

        return required
    if key == "additionalProperties":
        return _additional(value, schema, name, where)
    if key == "items":
        return _items(value, name, where)
    if key == "enum":
        if not isinstance(value, list):
            raise _refuse(name, where, "has an enum that is not a list")
        options = list(value)

        def enum(v: Any, path: Location, errors: list[Error]) -> None:
            if not any(_equal(option, v) for option in options):
                errors.append((path, f"{v!r} is not one of {options!r}"))

        return enum
    if key in ("minimum", "maximum"):
        return _bound(key, value, name, where)
    if key in ("minItems", "maxItems"):
        return _length(key, value, name, where)
    raise _refuse(name, where, f"uses the keyword `{key}`")


def _additional(value: Any, schema: dict[str, Any], name: str, where: str) -> Checker:
    declared = schema.get("properties", {})
    if isinstance(value, dict):
        sub = _compile(value, name, where)

        def each_extra(v: Any, path: Location, errors: list[Error]) -> None:
            if isinstance(v, dict):
                for key in v:
                    if key not in declared:
                        sub(v[key], (*path, key), errors)

        return each_extra
    if value is True:
        return lambda v, path, errors: None
    if value is not False:
        raise _refuse(name, where, f"has additionalProperties {value!r}")

    def no_extras(v: Any, path: Location, errors: list[Error]) -> None:
        if isinstance(v, dict):
            extras = sorted((key for key in v if key not in declared), key=str)
            if extras:
                verb = "was" if len(extras) == 1 else "were"
                listed = ", ".join(repr(key) for key in extras)
                errors.append((path, f"Additional properties are not allowed ({listed} {verb} unexpected)"))

    return no_extras


def _items(value: Any, name: str, where: str) -> Checker:
    sub = _compile(value, name, where)

    def items(v: Any, path: Location, errors: list[Error]) -> None:
        if isinstance(v, list):
            for index, item in enumerate(v):
                sub(item, (*path, index), errors)

    return items


def _bound(key: str, value: Any, name: str, where: str) -> Checker:
    if not _is_number(value):
        raise _refuse(name, where, f"has {key} {value!r}, not a number")
    low = key == "minimum"
    words = "less than the minimum" if low else "greater than the maximum"

    def bound(v: Any, path: Location, errors: list[Error]) -> None:
        if _is_number(v) and (v < value if low else v > value):
            errors.append((path, f"{v!r} is {words} of {value!r}"))

    return bound


def _length(key: str, value: Any, name: str, where: str) -> Checker:
    if not _is_integer(value) or value < 0:
        raise _refuse(name, where, f"has {key} {value!r}, not a count")
    low = key == "minItems"
    if low:
        words = "should be non-empty" if value == 1 else "is too short"
    else:
        words = "is expected to be empty" if value == 0 else "is too long"

    def length(v: Any, path: Location, errors: list[Error]) -> None:
        if isinstance(v, list) and (len(v) < value if low else len(v) > value):
            errors.append((path, f"{v!r} {words}"))

    return length
