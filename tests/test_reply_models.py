"""Our reply models (mem0bench/llm/structured.py) against what the pydantic models they replaced gave:
every schema we send byte for byte, and the result of thousands of replies, recorded in
tests/data/reply_models.json by devtools/reply_fixtures.py before the port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from devtools.reply_fixtures import outcome, reply_models, shipped_specs
from mem0bench.llm.structured import parse_reply, reply_field, reply_model, strict_schema
from mem0bench.llm.types import ReplyShapeError

RECORDED = json.loads((Path(__file__).parent / "data" / "reply_models.json").read_text(encoding="utf-8"))


def test_every_schema_we_send_is_byte_identical() -> None:
    now = {where: json.dumps(spec.parameters) for where, spec in shipped_specs().items()}
    assert now == RECORDED["schemas"]


@pytest.mark.parametrize("name", sorted(RECORDED["replies"]))
def test_every_recorded_reply_reads_as_it_did(name: str) -> None:
    model = reply_models()[name]
    # As JSON text: 1 == 1.0 == True in Python, not in what a reply's value was read as.
    differ = [
        (case["in"], got)
        for case in RECORDED["replies"][name]
        if json.dumps(got := outcome(model, case["in"]))
        != json.dumps({k: v for k, v in case.items() if k != "in"})
    ]
    assert differ == [], differ[:5]


def test_the_corpus_holds_many_kinds_of_failure_and_success() -> None:
    # A corpus of only valid (or only broken) replies would prove little.
    errors = {
        case["error"].split(" (at ")[0]
        for rows in RECORDED["replies"].values()
        for case in rows
        if "error" in case
    }
    assert len(errors) >= 15 and sum("ok" in c for rows in RECORDED["replies"].values() for c in rows) > 2000


# ---- the facility itself ----------------------------------------------------------------------------------


@reply_model
class Item:
    n: int = reply_field(ge=1, le=3, description="A number.")


@reply_model
class Box:
    """Not sent."""

    kind: Literal["a", "b"]
    items: list[Item] = reply_field(min_length=1, max_length=2)
    note: str | None = reply_field(default=None, before=lambda v: v or None)


def _error(data: Any) -> str:
    with pytest.raises(ReplyShapeError) as caught:
        parse_reply(Box, data)
    return str(caught.value)


def test_the_facility() -> None:
    assert parse_reply(Box, {"kind": "a", "items": [{"n": "2"}], "x": 1}) == Box("a", [Item(2)], None)
    assert parse_reply(Box, {"kind": "b", "items": [{"n": 3.0}], "note": ""}).note is None
    assert _error([]) == "Input should be a valid dictionary or instance of Box (at the top level)"
    assert _error({"items": []}) == "Field required (at kind)"
    assert _error({"kind": "c"}) == "Input should be 'a' or 'b' (at kind)"
    assert (
        _error({"kind": "a", "items": []})
        == "List should have at least 1 item after validation, not 0 (at items)"
    )
    assert (
        _error({"kind": "a", "items": [1, 2, 3]})
        == "List should have at most 2 items after validation, not 3 (at items)"
    )
    assert (
        _error({"kind": "a", "items": [{"n": 0}]})
        == "Input should be greater than or equal to 1 (at items/0/n)"
    )
    assert _error({"kind": "a", "items": [{"n": 1.5}]}) == (
        "Input should be a valid integer, got a number with a fractional part (at items/0/n)"
    )
    assert _error({"kind": "a", "items": [{"n": 1}], "note": 5}) == "Input should be a valid string (at note)"
    schema = strict_schema(Box)
    assert json.dumps(schema) == (
        '{"properties": {"kind": {"enum": ["a", "b"], "type": "string"}, "items": {"items": {"properties": '
        '{"n": {"description": "A number.", "maximum": 3, "minimum": 1, "type": "integer"}}, "required": ["n"], '
        '"type": "object", "additionalProperties": false}, "maxItems": 2, "minItems": 1, "type": "array"}, '
        '"note": {"type": ["string", "null"]}}, "required": ["kind", "items", "note"], "type": "object", '
        '"additionalProperties": false}'
    )


def test_a_field_type_the_reader_cannot_read_fails_when_the_schema_is_built() -> None:
    @reply_model
    class Flag:
        on: bool

    with pytest.raises(TypeError, match="no schema"):
        strict_schema(Flag)
