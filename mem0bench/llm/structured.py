"""Structured-output specs and their parsing from one definition: a pydantic reply model.

`spec_from_model` turns the model into the JSON schema sent to the server, in the form OpenAI's
`strict: true` accepts (every property required, `additionalProperties: false` on every object, nested
models inlined, no titles or defaults, `X | None` written as the type list `["x", "null"]`); `parse_reply`
validates a reply's data against the same model. So the schema the model is asked to follow and the check
of what it returned cannot drift apart.

The schema's JSON text (key order included) is part of every request and every response-cache key:
tests/test_structured_schemas.py pins each shipped one by its sha256.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from mem0bench.llm.types import ReplyShapeError, StructuredMode, StructuredSpec

__all__ = ["ReplyModel", "parse_reply", "spec_from_model", "strict_schema", "texts_or_empty"]


class ReplyModel(BaseModel):
    """The base of our reply models. Validation is pydantic's lax mode (an id given as a number, `"2"` for
    an integer: models write both) and keys the model does not have are ignored; the client has already
    checked the reply against the strict schema, which is what the LLM is held to. Frozen: a parsed reply
    is a value."""

    model_config = ConfigDict(frozen=True)


M = TypeVar("M", bound=BaseModel)


def texts_or_empty(value: Any) -> Any:
    """A `mode="before"` validator for a list of texts: a missing, null or empty value means none;
    non-string items are read as their text; anything else as it came (the list check then rejects it)."""
    if not value:
        return []
    return [str(item) for item in value] if isinstance(value, list) else value


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as strict structured output wants it."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    # A model's docstring is documentation for us, not an instruction to the LLM: only the descriptions
    # given with Field(description=...) are sent.
    schema.pop("description", None)

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            definition = dict(definitions[node.pop("$ref").rsplit("/", 1)[-1]])
            definition.pop("description", None)
            node = {**definition, **node}
        out = {key: clean(value) for key, value in node.items() if key not in ("title", "default")}
        simple = out.get("anyOf")
        if isinstance(simple, list) and all(isinstance(o, dict) and list(o) == ["type"] for o in simple):
            # `str | None` as one type list, the form strict mode documents (and our requests always used).
            out["type"] = [o["type"] for o in simple]
            del out["anyOf"]
        if out.get("type") == "object" and "properties" in out:
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    cleaned: dict[str, Any] = clean(schema)
    return cleaned


def spec_from_model(
    name: str, description: str, model: type[BaseModel], mode: StructuredMode | None = "tool"
) -> StructuredSpec:
    """The spec of `model`'s schema; `mode=None` leaves the form to the client's `llm.structured` setting."""
    return StructuredSpec(name=name, description=description, parameters=strict_schema(model), mode=mode)


def parse_reply(model: type[M], data: Any) -> M:
    """The reply's data as `model`; ReplyShapeError (one line: pydantic's first error, and where) when it
    does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = "/".join(str(p) for p in first["loc"]) or "the top level"
        raise ReplyShapeError(f"{first['msg']} (at {where})") from None
