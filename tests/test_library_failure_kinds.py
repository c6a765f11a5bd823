"""One failure classifier for every third-party library (systems/external/failure_kinds.py): the kind the
bridge wrote in the error body wins; else the exception's type and status; never a kind of its own."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from pydantic import BaseModel, ValidationError

from mem0bench.llm.types import TRANSIENT_KINDS
from mem0bench.systems.external.failure_kinds import CALL_KINDS, LIBRARY_ERROR, failure_kind

REQUEST = httpx.Request("POST", "http://127.0.0.1/r/x/v1/chat/completions")


def _status(code: int, body: object) -> openai.APIStatusError:
    return openai.APIStatusError("m", response=httpx.Response(code, request=REQUEST), body=body)


@pytest.mark.parametrize("kind", sorted(CALL_KINDS))
def test_the_kind_in_the_bridges_error_body_wins(kind: str) -> None:
    # The SDK keeps the body's "error" object (or the whole body): both shapes, and a status that
    # alone would say otherwise (502 for malformed, 500 for local_error).
    error = {"message": "m", "type": kind, "code": kind}
    assert failure_kind(_status(502, error)) == kind
    assert failure_kind(_status(500, {"error": error})) == kind


def test_a_library_that_wraps_the_sdks_error_keeps_the_bridges_kind() -> None:
    class WrappedError(Exception):
        pass

    try:
        try:
            raise _status(502, {"message": "m", "type": "malformed", "code": "malformed"})
        except openai.APIStatusError as inner:
            raise WrappedError("the library gave up") from inner
    except WrappedError as outer:
        assert failure_kind(outer) == "malformed"


def test_without_a_body_the_type_and_status_decide() -> None:
    assert failure_kind(_status(429, None)) == "rate_limit"
    assert failure_kind(_status(503, None)) == "server_error"
    assert failure_kind(_status(400, None)) == "bad_request"
    assert failure_kind(_status(400, {"error": {"type": "llm_error"}})) == "bad_request"  # unknown: ignored
    assert failure_kind(openai.APITimeoutError(request=REQUEST)) == "timeout"
    assert failure_kind(openai.APIConnectionError(request=REQUEST)) == "connection"

    class RateLimitError(Exception):  # graphiti's own, wrapping openai's without its body
        pass

    class EmptyResponseError(Exception):
        pass

    assert failure_kind(RateLimitError()) == "rate_limit"
    assert failure_kind(EmptyResponseError()) == "empty"


def test_a_reply_the_library_cannot_parse_is_malformed() -> None:
    class Reply(BaseModel):
        n: int

    with pytest.raises(ValidationError) as invalid:
        Reply.model_validate({"n": "x"})
    assert failure_kind(invalid.value) == "malformed"
    with pytest.raises(json.JSONDecodeError) as bad_json:
        json.loads("{")
    assert failure_kind(bad_json.value) == "malformed"


def test_anything_else_is_the_librarys_own_error_and_no_kind_is_invented() -> None:
    assert failure_kind(ValueError("x")) == LIBRARY_ERROR == "library_error"
    assert LIBRARY_ERROR not in TRANSIENT_KINDS  # a bug of the library would fail the same way again
    assert TRANSIENT_KINDS <= CALL_KINDS
