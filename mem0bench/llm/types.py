"""Typed objects that cross the LLM client's boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Stage = Literal["ingest", "search", "answer", "judge", "preflight"]
STAGES: tuple[Stage, ...] = ("ingest", "search", "answer", "judge")

StructuredMode = Literal["tool", "json_schema", "json_object"]
STRUCTURED_MODES: tuple[StructuredMode, ...] = ("tool", "json_schema", "json_object")

Message = dict[str, Any]
"""An OpenAI chat message, e.g. {"role": "user", "content": "..."}."""

FailureKind = Literal[
    "rate_limit",  # 429s past the retry budget
    "server_error",  # 5xx past the retry budget
    "timeout",
    "connection",
    "malformed",  # output that never validated against the schema, repair included
    "empty",  # no choices / no content
    "bad_request",  # 4xx other than 429: not retried
    "local_error",  # an exception in our own process (a local model's failure, a bug): not the server's
]

TRANSIENT_KINDS: frozenset[str] = frozenset({"rate_limit", "server_error", "timeout", "connection"})
"""The failure kinds a later attempt may get past (the others would fail the same way again). The one
definition: ingestion replays, answer reruns and the run's retry bookkeeping all read it."""


class ReplyShapeError(ValueError):
    """A validated reply whose data a parser still cannot read (a field of the wrong type): the reply is
    malformed. Parsers raise it so callers never mistake a bug of ours for a malformed reply."""


@dataclass(frozen=True)
class StructuredSpec:
    """A structured-output contract: a JSON schema the reply must satisfy.

    Sent as a function (tool) call, a `response_format` JSON schema, or a `json_object` response format
    carrying the schema (llama.cpp's form). `mode=None`: the client's `llm.structured` setting decides.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    mode: StructuredMode | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ChatReply:
    text: str
    usage: Usage
    cached: bool = False


@dataclass(frozen=True)
class StructuredReply:
    data: dict[str, Any]
    """The validated arguments / JSON object."""
    usage: Usage
    cached: bool = False
    repairs: int = 0


@dataclass(frozen=True)
class CallFailure:
    """Why a call gave up after its bounded retries; the caller records it and goes on."""

    stage: str
    kind: FailureKind
    message: str
    attempts: int


class LLMCallError(Exception):
    """Raised by the client when a call fails for good. Carries a `CallFailure` to record."""

    def __init__(self, failure: CallFailure):
        super().__init__(
            f"{failure.stage}: {failure.kind} after {failure.attempts} attempt(s): {failure.message}"
        )
        self.failure = failure


@dataclass
class StageUsage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    cost_usd: float = 0.0
    failure_kinds: dict[str, int] = field(default_factory=dict)
