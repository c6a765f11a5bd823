"""A-Mem's swallowed errors, made visible: what each library call asked, and what it got past.

A-Mem never raises for a failed LLM step. `analyze_content` prints the error and stores the note with no
keywords, context or tags; `process_memory` logs "Error in memory evolution" and stores the note without
links; a reply that is not a JSON object can also crash `add_note` (the note is then lost). So the adapter
- wraps the library's LLM controller (`RecordingLLM`): every call is recorded with its step (told by the
  JSON schema the library asks for), and a call that raised or a reply that does not parse the way the
  library reads it becomes a failed step;
- collects the library's WARNING+ log records of each call (`LIBRARY_LOG`), for what it logs
  without an LLM cause (a neighbour that could not be updated, a search error).
Each failed step is one `StepFailure` row, counted once.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from mem0bench.llm.types import FailureKind
from mem0bench.systems.external.failure_kinds import failure_kind
from mem0bench.systems.external.support import LibraryLog

__all__ = ["LIBRARY_LOG", "CallEvent", "RecordingLLM", "step_of"]

LIBRARY_LOGGER = "agentic_memory"


def step_of(response_format: Any) -> str:
    """The library step a call belongs to, from the properties of the JSON schema it asks for."""
    schema = (
        (response_format or {}).get("json_schema", {}).get("schema", {})
        if isinstance(response_format, dict)
        else {}
    )
    props = set((schema.get("properties") or {}) if isinstance(schema, dict) else ())
    if "should_evolve" in props:
        return "evolution"
    if {"keywords", "context", "tags"} <= props:
        return "analysis"
    if props == {"keywords"}:
        return "query_keywords"
    return "llm"


@dataclass(frozen=True)
class CallEvent:
    """One LLM call of the library: its step, and why it failed (kind None when the step went through)."""

    step: str
    kind: FailureKind | None = None
    message: str = ""


def _check_reply(reply: Any, response_format: Any) -> tuple[FailureKind, str] | None:
    """(kind, message) when the library cannot read `reply` the way it means to, else None: it loads the
    reply with json.loads and reads the schema's required keys from the object."""
    if reply is None or (isinstance(reply, str) and not reply.strip()):
        return "empty", "the reply had no content"
    try:
        value = json.loads(reply)
    except (TypeError, ValueError) as exc:
        return "malformed", f"the reply is not JSON ({exc}): {str(reply)[:120]!r}"
    if not isinstance(value, dict):
        return "malformed", f"the reply is JSON but not an object: {str(reply)[:120]!r}"
    schema = (response_format or {}).get("json_schema", {}).get("schema", {})
    missing = [k for k in schema.get("required") or () if k not in value]
    if missing:
        return "malformed", f"the reply lacks {', '.join(missing)}"
    return None


class RecordingLLM:
    """Stands in for the library's `llm_controller.llm`: the same `get_completion`, recorded."""

    def __init__(self, inner: Any = None, *, temperature: float | None = None) -> None:
        self.inner = inner
        """The library's own controller (set by `library.open_library`)."""
        self.temperature = temperature
        """The temperature every call goes out at; None: whatever the library asks (its default is 1.0)."""
        self.events: list[CallEvent] = []
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def get_completion(self, prompt: str, response_format: Any = None, temperature: float = 1.0) -> str:
        step = step_of(response_format)
        with self._lock:
            self.calls[step] = self.calls.get(step, 0) + 1
        if self.temperature is not None:
            temperature = self.temperature
        try:
            reply: str = self.inner.get_completion(
                prompt, response_format=response_format, temperature=temperature
            )
        except Exception as exc:
            self.failed(step, exc)
            raise
        problem = _check_reply(reply, response_format)
        self.add(CallEvent(step, *problem) if problem else CallEvent(step))
        return reply

    def failed(self, step: str, exc: BaseException) -> None:
        """A call of `step` raised `exc` (the library goes on without its result)."""
        self.add(CallEvent(step, failure_kind(exc), f"{type(exc).__name__}: {exc}"[:500]))

    def add(self, event: CallEvent) -> None:
        with self._lock:
            self.events.append(event)

    def drain(self) -> list[CallEvent]:
        """The calls recorded since the last drain, oldest first."""
        with self._lock:
            events, self.events = self.events, []
        return events


LIBRARY_LOG = LibraryLog([LIBRARY_LOGGER])
"""The library's WARNING+ log records, routed to the `add_note` or search call that logged them."""
