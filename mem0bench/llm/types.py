"""Typed objects that cross the LLM client's boundary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, cast, get_args

Stage = Literal["ingest", "search", "answer", "judge", "preflight"]
STAGES: tuple[Stage, ...] = ("ingest", "search", "answer", "judge")

StructuredMode = Literal["tool", "json_schema", "json_object"]
STRUCTURED_MODES: tuple[StructuredMode, ...] = ("tool", "json_schema", "json_object")

Message = dict[str, Any]
"""An OpenAI chat message, e.g. {"role": "user", "content": "..."}."""

CallFailureKind = Literal[
    "rate_limit",  # 429s past the retry budget
    "server_error",  # 5xx past the retry budget
    "timeout",
    "connection",
    "malformed",  # output that never validated against the schema, repair included
    "empty",  # no choices / no content
    "bad_request",  # 4xx other than 429: not retried
    "local_error",  # an exception in our own process (a local model's failure, a bug): not the server's
]
"""The kinds the LLM client gives up with (`CallFailure`); the bridge writes them in its error bodies."""

FailureKind = Literal[
    CallFailureKind,
    "library_error",  # a third-party library's own exception, no failed call behind it
    "system_error",  # a system's `retrieve` raised something other than a failed call
    "context_window",  # the answer prompt is longer than the answer model's context window: never sent
    "unknown",  # a row that names no kind, or one this version does not know (an older or newer file)
]
"""Every kind a failures.jsonl row, a StepFailure or an ingest row can carry. `FAILURE_KINDS` gives each
one's properties; nothing else lists kinds."""


@dataclass(frozen=True)
class KindTraits:
    """What a failure kind means for a rerun."""

    meaning: str
    transient: bool = False
    """A later attempt may get past it (the rerun of the same command retries it)."""
    from_cache: bool = False
    """The reply is in the cache: the same request gets it back, so only run.retry_failed=true (asking
    past the cache) can change the outcome."""
    remedy: str = ""
    """What to change when asking again cannot help (empty for the transient kinds)."""


_ANOTHER_MODEL = "try another llm.model (or judge.model), a larger llm.max_tokens, or llm.repair_attempts=2"

FAILURE_KINDS: Mapping[FailureKind, KindTraits] = MappingProxyType(
    {
        "rate_limit": KindTraits("429s past the retry budget", transient=True),
        "server_error": KindTraits("5xx (or an unreadable reply) past the retry budget", transient=True),
        "timeout": KindTraits("no reply in time, past the retry budget", transient=True),
        "connection": KindTraits("the server could not be reached, past the retry budget", transient=True),
        "malformed": KindTraits(
            "a reply that never validated against its schema, repair included",
            from_cache=True,
            remedy=_ANOTHER_MODEL,
        ),
        "empty": KindTraits("a reply with no choices or no content", from_cache=True, remedy=_ANOTHER_MODEL),
        "bad_request": KindTraits(
            "the server refused the request (a 4xx not retried): it refuses it again",
            remedy="change the setting the server's message names (failures.jsonl): another llm.model, "
            "a smaller llm.max_tokens, a shorter context",
        ),
        "local_error": KindTraits(
            "an exception in our own process (a local model's failure)",
            remedy="fix the local model's setup (failures.jsonl names the exception)",
        ),
        "library_error": KindTraits(
            "a third-party library's own exception, no failed call behind it",
            remedy="see the library's message in failures.jsonl: a setting of the method or a fix of the "
            "library",
        ),
        "system_error": KindTraits(
            "the system's own code raised (not a failed LLM call)",
            remedy="fix the system (failures.jsonl names the exception and where), then rerun the same "
            "command to retry them",
        ),
        "context_window": KindTraits(
            "the prompt is longer than the model's context window (never sent)",
            remedy="a model with a larger window, llm.context_window when the server's is larger than "
            "the table's, method.truncate=oldest (full_context) or eval.context_tokens_max",
        ),
        "unknown": KindTraits(
            "a kind this version does not know", remedy="see failures.jsonl for what failed"
        ),
    }
)
"""The one table of failure kinds and their properties (a test checks it covers `FailureKind`)."""

TRANSIENT_KINDS: frozenset[str] = frozenset(k for k, t in FAILURE_KINDS.items() if t.transient)
"""The failure kinds a later attempt may get past (the others would fail the same way again): ingestion
replays, answer reruns and the run's retry bookkeeping all read it."""

CALL_KINDS: frozenset[str] = frozenset(get_args(CallFailureKind))
"""The LLM client's kinds: the only ones the bridge writes in an error body."""

UNKNOWN: FailureKind = "unknown"


def as_failure_kind(value: object) -> FailureKind:
    """The kind a row names, read back: a kind this version does not know (or none) is "unknown", so that
    rows written by another version still read."""
    return cast(FailureKind, value) if isinstance(value, str) and value in FAILURE_KINDS else UNKNOWN


def kind_traits(kind: str) -> KindTraits:
    """The properties of `kind` (those of "unknown" for a kind this version does not know)."""
    return FAILURE_KINDS[as_failure_kind(kind)]


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
    cached_tokens: int = 0
    """Of `prompt_tokens`, those the server served from its prompt cache
    (`usage.prompt_tokens_details.cached_tokens`), billed at the model's cached rate."""


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
