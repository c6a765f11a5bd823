"""Structured-output specs and their parsing from one definition: a reply model.

A reply model (`@reply_model`, a frozen dataclass whose fields are declared with `reply_field`: the
description sent to the LLM, a bound or a length, a `before` hook that tidies the raw value) gives both the
JSON schema sent to the server (`spec_from_model`, `strict_schema`) and the reading of what came back
(`parse_reply`), so the two cannot drift apart. The field types in use are `str`, `int`, `Any`, string
`Literal`s, `X | None`, `list[X]` and nested reply models.

The models were pydantic models until pydantic's import (~0.17 s of every start-up) left the run path. What
they sent and how they read replies did not change: tests/data/reply_models.json pins every schema's JSON
text (key order included: it is part of every request and cache key) and pydantic's result, value or
message, for thousands of replies. So the messages below keep pydantic's wording.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from mem0bench.llm.types import ReplyShapeError, StructuredMode, StructuredSpec

__all__ = [
    "parse_reply",
    "reply_field",
    "reply_model",
    "spec_from_model",
    "strict_schema",
    "texts_or_empty",
]

M = TypeVar("M")

_NO_VALUE: Any = dataclasses.MISSING


def reply_field(
    *,
    default: Any = _NO_VALUE,
    default_factory: Callable[[], Any] | None = None,
    description: str | None = None,
    ge: int | None = None,
    le: int | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    before: Callable[[Any], Any] | None = None,
    items_schema: dict[str, Any] | None = None,
) -> Any:
    """A reply model's field. `before` tidies the raw value when the reply has the key (not for a default);
    `items_schema` is what the schema says about the items of a `list[Any]`."""
    metadata = {
        "description": description,
        "ge": ge,
        "le": le,
        "min_length": min_length,
        "max_length": max_length,
        "before": before,
        "items_schema": items_schema,
    }
    meta = {key: value for key, value in metadata.items() if value is not None}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@typing.dataclass_transform(frozen_default=True, field_specifiers=(reply_field,))
def reply_model(cls: type[M]) -> type[M]:
    """A reply model: a frozen dataclass whose fields are declared with `reply_field`."""
    return dataclasses.dataclass(frozen=True)(cls)


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    type: Any
    meta: typing.Mapping[str, Any]
    required: bool
    default: Callable[[], Any]


@functools.cache
def _fields(model: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(model)
    out = []
    for f in dataclasses.fields(model):
        if f.default_factory is not dataclasses.MISSING:
            default: Callable[[], Any] = f.default_factory
        else:
            default = functools.partial(lambda value: value, f.default)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_Field(f.name, hints[f.name], f.metadata, required, default))
    return tuple(out)


def texts_or_empty(value: Any) -> Any:
    """A `before` hook for a list of texts: a missing, null or empty value means none; non-string items are
    read as their text; anything else as it came (the list check then rejects it)."""
    if not value:
        return []
    return [str(item) for item in value] if isinstance(value, list) else value


# ---- the schema -------------------------------------------------------------------------------------------


def spec_from_model(
    name: str, description: str, model: type, mode: StructuredMode | None = "tool"
) -> StructuredSpec:
    """The spec of `model`'s schema; `mode=None` leaves the form to the client's `llm.structured` setting."""
    return StructuredSpec(name=name, description=description, parameters=strict_schema(model), mode=mode)


def strict_schema(model: type) -> dict[str, Any]:
    """The model's JSON schema as OpenAI's `strict: true` wants it: every property required,
    `additionalProperties: false` on every object, nested models inlined, no titles or defaults, `X | None`
    as the type list `["x", "null"]`. Keys come in the order pydantic gave them (sorted within a property,
    fields in declaration order), because the schema's JSON text is part of every request and cache key."""
    return _object_schema(model)


def _object_schema(model: type, description: str | None = None) -> dict[str, Any]:
    fields = _fields(model)
    names = [f.name for f in fields]
    any_required = any(f.required for f in fields)
    node: dict[str, Any] = {"properties": {f.name: _field_schema(f) for f in fields}}
    if any_required:
        node["required"] = names
    node["type"] = "object"
    if description is not None:
        node["description"] = description
    if not any_required:
        node["required"] = names
    node["additionalProperties"] = False
    return node


def _field_schema(f: _Field) -> dict[str, Any]:
    meta = f.meta
    if dataclasses.is_dataclass(f.type):
        return _object_schema(typing.cast(type, f.type), meta.get("description"))
    node = _type_schema(f.type, meta)
    for key, word in (
        ("description", "description"),
        ("ge", "minimum"),
        ("le", "maximum"),
        ("min_length", "minItems"),
        ("max_length", "maxItems"),
    ):
        if key in meta:
            node[word] = meta[key]
    return dict(sorted(node.items()))


# Only what `_read` reads: a model with another field type fails when its spec is built (at import).
_SIMPLE = {str: "string", int: "integer"}


def _type_schema(tp: Any, meta: typing.Mapping[str, Any]) -> dict[str, Any]:
    origin = get_origin(tp)
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if origin is Literal:
        return {"enum": list(get_args(tp)), "type": "string"}
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(tp) if a is not type(None)]
        return {"type": [_SIMPLE[inner], "null"]}
    if origin is list:
        (item,) = get_args(tp)
        if item is Any:
            return {"items": dict(meta["items_schema"]), "type": "array"}
        if dataclasses.is_dataclass(item):
            return {"items": _object_schema(typing.cast(type, item)), "type": "array"}
        return {"items": _type_schema(item, {}), "type": "array"}
    raise TypeError(f"reply_model: no schema for the field type {tp!r}")


# ---- reading a reply --------------------------------------------------------------------------------------


class _Invalid(Exception):
    def __init__(self, message: str, where: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


def parse_reply(model: type[M], data: Any) -> M:
    """The reply's data as `model`; ReplyShapeError (one line: what is wrong, and where) when it does not
    fit. Keys the model does not have are ignored."""
    try:
        return typing.cast(M, _read_model(model, data, ()))
    except _Invalid as error:
        where = "/".join(str(p) for p in error.where) or "the top level"
        raise ReplyShapeError(f"{error.message} (at {where})") from None


def _read_model(model: type, data: Any, where: tuple[str | int, ...]) -> Any:
    if isinstance(data, model):
        return data
    if not isinstance(data, dict):
        raise _Invalid(f"Input should be a valid dictionary or instance of {model.__name__}", where)
    values = {}
    for f in _fields(model):
        if f.name not in data:
            if f.required:
                raise _Invalid("Field required", (*where, f.name))
            values[f.name] = f.default()
            continue
        value = data[f.name]
        before = f.meta.get("before")
        if before is not None:
            value = before(value)
        values[f.name] = _read(f.type, f.meta, value, (*where, f.name))
    return model(**values)


def _read(tp: Any, meta: typing.Mapping[str, Any], value: Any, where: tuple[str | int, ...]) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _Invalid("Input should be a valid string", where)
        return value
    if tp is int:
        return _bounded(_integer(value, where), meta, where)
    if origin is Literal:
        choices = get_args(tp)
        if isinstance(value, str) and value in choices:
            return value
        quoted = [repr(c) for c in choices]
        listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        raise _Invalid(f"Input should be {listed}", where)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        (inner,) = [a for a in get_args(tp) if a is not type(None)]
        return _read(inner, meta, value, where)
    if origin is list:
        return _list(get_args(tp)[0], meta, value, where)
    if dataclasses.is_dataclass(tp):
        return _read_model(typing.cast(type, tp), value, where)
    raise TypeError(f"reply_model: cannot read the field type {tp!r}")


def _items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _list(item: Any, meta: typing.Mapping[str, Any], value: Any, where: tuple[str | int, ...]) -> list[Any]:
    if not isinstance(value, list):
        raise _Invalid("Input should be a valid list", where)
    # pydantic's order: too long is found before the items are read, too short after.
    most = meta.get("max_length")
    if most is not None and len(value) > most:
        raise _Invalid(f"List should have at most {_items(most)} after validation, not {len(value)}", where)
    out = [_read(item, {}, v, (*where, i)) for i, v in enumerate(value)]
    least = meta.get("min_length")
    if least is not None and len(out) < least:
        raise _Invalid(f"List should have at least {_items(least)} after validation, not {len(out)}", where)
    return out


# An integer written as text, as pydantic's lax mode reads it: ASCII digits, single underscores between
# them, an optional sign and an optional all-zero fraction, spaces around.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")


def _integer(value: Any, where: tuple[str | int, ...]) -> int:
    if isinstance(value, int):  # bool included: pydantic's lax mode reads True as 1
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid("Input should be a finite number", where)
        if not value.is_integer():
            raise _Invalid("Input should be a valid integer, got a number with a fractional part", where)
        if abs(value) >= 2**63:
            raise _Invalid("Unable to parse input string as an integer, exceeded maximum size", where)
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER_TEXT.fullmatch(text):
            return int(text.split(".")[0].replace("_", ""))
        raise _Invalid("Input should be a valid integer, unable to parse string as an integer", where)
    raise _Invalid("Input should be a valid integer", where)


def _bounded(number: int, meta: typing.Mapping[str, Any], where: tuple[str | int, ...]) -> int:
    if "ge" in meta and number < meta["ge"]:
        raise _Invalid(f"Input should be greater than or equal to {meta['ge']}", where)
    if "le" in meta and number > meta["le"]:
        raise _Invalid(f"Input should be less than or equal to {meta['le']}", where)
    return number
