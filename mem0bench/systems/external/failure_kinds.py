"""The failure kind of an exception a third-party library raised: one rule for every adapter.

A library's LLM calls go through the bridge; when the harness's client gives up on one, the bridge answers
an HTTP error whose body names the client's failure kind (`{"error": {"type": kind, "code": kind}}`), and
the library's OpenAI SDK raises it back as an `APIStatusError` carrying that body. The kind is read from
there first, so a library's failure means exactly what the same failure of our own systems means (and
`TRANSIENT_KINDS` decides the same retries). Without a body (a library that wraps the SDK's error, an
error before any reply) the exception's type and HTTP status decide; a reply the library could not parse
is `malformed`; anything else is the library's own `library_error`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mem0bench.llm.types import CALL_KINDS, FailureKind, as_failure_kind

__all__ = ["CALL_KINDS", "LIBRARY_ERROR", "bridged_kind", "failure_kind"]

LIBRARY_ERROR: FailureKind = "library_error"
"""An exception of the library's own, with no failed call behind it (not retried: it would fail again).
An adapter records it for a step it caught; an exception that escapes an adapter's `retrieve` is the
run's `system_error` (pipeline.failures.SYSTEM_ERROR) instead, unless it carries a bridged kind."""

_MALFORMED_TYPES = frozenset({"ValidationError", "OutputParserException", "JSONDecodeError"})
"""Exceptions a library raises when a reply (HTTP 200) does not fit what it parses it as (pydantic's,
LangChain's, json's), matched by name so that no library must be importable here."""


def failure_kind(exc: BaseException) -> FailureKind:
    """One of `CALL_KINDS` or `LIBRARY_ERROR` for an exception out of a library call."""
    bridged = bridged_kind(exc)
    if bridged is not None:
        return bridged
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    # By name, so no SDK is imported here: openai's APITimeoutError / APIConnectionError, httpx's and
    # the libraries' own timeout and connection errors all match (a timeout is checked first: the SDK's
    # APITimeoutError is an APIConnectionError too).
    if any("Timeout" in n for n in names):
        return "timeout"
    if any("Connection" in n for n in names):
        return "connection"
    if status == 429 or "RateLimitError" in names:  # graphiti wraps openai's in its own RateLimitError
        return "rate_limit"
    if isinstance(status, int) and status >= 500:
        return "server_error"
    if isinstance(status, int) and 400 <= status < 500:
        return "bad_request"
    if isinstance(exc, json.JSONDecodeError) or names & _MALFORMED_TYPES:
        return "malformed"
    if "EmptyResponseError" in names:  # graphiti: a reply with no content
        return "empty"
    return LIBRARY_ERROR


def bridged_kind(exc: BaseException) -> FailureKind | None:
    """The kind the bridge wrote in the error body, if `exc` (or an exception it wraps) carries one: a
    call the harness's client failed for good, whatever code let the exception through."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        body: Any = getattr(current, "body", None)
        if isinstance(body, Mapping):
            # The SDK keeps the body's "error" object, or the whole body when it has none.
            error = body.get("error", body)
            if isinstance(error, Mapping):
                for key in ("code", "type"):
                    if error.get(key) in CALL_KINDS:
                        return as_failure_kind(error[key])
        current = current.__cause__ or current.__context__
    return None
