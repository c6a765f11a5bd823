"""Reading chat-completion replies: the raw parts we keep, usage, and structured-output parsing.

Pure functions over the raw reply dict that `LLMClient` caches; no I/O, no accounting.
"""

from __future__ import annotations

import json
from typing import Any

from mem0bench.llm.types import StructuredSpec, Usage

__all__ = [
    "InvalidSchemaError",
    "SchemaChecker",
    "add_usage",
    "parse_structured",
    "raw_reply",
    "reply_usage",
    "strip_fences",
]


def strip_fences(text: str) -> str:
    """Drop a ```json ... ``` fence around a reply; models add one even when asked for bare JSON."""
    s = text.strip()
    if s.startswith("```"):
        s = s[3:]
        if s[:4].lower() == "json":
            s = s[4:]
        if s.rstrip().endswith("```"):
            s = s.rstrip()[:-3]
    return s.strip()


def raw_reply(body: Any) -> dict[str, Any]:
    """The parts of a chat completion we keep (and cache): content, tool calls, finish reason, usage, and
    the first choice's `logprobs` when the server gave them (a request that asked for them: graphiti's
    reranker reads them; absent otherwise, so replies cached before they were kept read the same)."""
    if not isinstance(body, dict):
        raise ValueError("the reply body is not a JSON object")
    choices = body.get("choices") or []
    usage = body.get("usage") or {}
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    cached = int((details or {}).get("cached_tokens") or 0) if isinstance(details, dict) else 0
    raw: dict[str, Any] = {
        "choices": len(choices),
        "content": None,
        "tool_calls": [],
        "finish_reason": None,
        "usage": {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            # Only when the server reported some, so replies cached before it was kept read the same.
            **({"cached_tokens": cached} if cached > 0 else {}),
        },
    }
    if choices:
        choice = choices[0] or {}
        message = choice.get("message") or {}
        raw["content"] = message.get("content")
        raw["finish_reason"] = choice.get("finish_reason")
        if choice.get("logprobs") is not None:
            raw["logprobs"] = choice["logprobs"]
        for call in message.get("tool_calls") or []:
            fn = (call or {}).get("function") or {}
            raw["tool_calls"].append({"name": fn.get("name"), "arguments": fn.get("arguments")})
    return raw


def reply_usage(raw: dict[str, Any]) -> Usage:
    """The token usage of a raw reply."""
    u = raw.get("usage") or {}
    prompt = int(u.get("prompt_tokens") or 0)
    # Never more than the prompt: a cached share above 100% would price tokens below zero.
    cached = min(int(u.get("cached_tokens") or 0), prompt)
    return Usage(prompt, int(u.get("completion_tokens") or 0), cached)


def add_usage(a: Usage, b: Usage) -> Usage:
    """Sum of two usages (a call's total over its repair rounds)."""
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.cached_tokens + b.cached_tokens,
    )


class InvalidSchemaError(Exception):
    """A spec whose schema is not valid JSON Schema: a bug in the schema's maker, found before a request."""


class SchemaChecker:
    """Validates data against JSON schemas with jsonschema, compiling each schema object once (specs are
    module constants).

    jsonschema is imported on first use, not with this module: commands that never check a reply do not
    pay for it (~70 ms)."""

    def __init__(self) -> None:
        # Keyed by id() with the schema kept alive in the entry, so a reused id cannot alias a dead schema.
        self._validators: dict[int, tuple[dict[str, Any], Any]] = {}

    def compiled(self, spec: StructuredSpec) -> Any:
        """The validator of `spec`'s schema (built on first sight: call it before paying for a request);
        InvalidSchemaError, naming the spec, when the schema is not valid JSON Schema."""
        schema = spec.parameters
        entry = self._validators.get(id(schema))
        if entry is None or entry[0] is not schema:
            import jsonschema

            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                where = "/".join(str(p) for p in exc.absolute_path) or "the top level"
                raise InvalidSchemaError(
                    f"the schema of `{spec.name}` is not valid JSON Schema: {exc.message} (at {where})"
                ) from None
            entry = (schema, cls(schema))
            self._validators[id(schema)] = entry
        return entry[1]

    def check(self, data: Any, spec: StructuredSpec) -> str | None:
        """None when `data` is valid, else one line naming the most relevant error (jsonschema's
        `best_match`, the message the model reads in the repair prompt) and where it is."""
        validator = self.compiled(spec)
        if not isinstance(data, dict):
            return f"the output must be a JSON object, got {type(data).__name__}"
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(data))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message} (at {where or 'the top level'})"


def parse_structured(
    raw: dict[str, Any], spec: StructuredSpec, checker: SchemaChecker
) -> tuple[dict[str, Any] | None, str, str, str]:
    """-> (data or None, failure kind, error text, the bad output to show the model)."""
    if not raw.get("choices"):
        return None, "empty", "the reply had no choices", ""
    content = raw.get("content")
    if spec.mode == "tool":
        calls = raw.get("tool_calls") or []
        call = next((c for c in calls if c.get("name") == spec.name), calls[0] if calls else None)
        if call is None:
            if isinstance(content, str) and content.strip():
                try:  # some OpenAI-compatible servers answer a forced tool call in the content
                    data = json.loads(strip_fences(content))
                except ValueError:
                    data = None
                if data is not None and checker.check(data, spec) is None:
                    return data, "", "", ""
                return None, "malformed", f"the reply did not call the function `{spec.name}`", content
            return None, "empty", f"the reply had neither a call to `{spec.name}` nor content", ""
        text = call.get("arguments")
        if not isinstance(text, str) or not text.strip():
            return None, "malformed", f"the call to `{spec.name}` had no arguments", str(text or "")
    else:
        if not isinstance(content, str) or not content.strip():
            return None, "empty", "the reply had no content", ""
        text = content
    try:
        data = json.loads(text if spec.mode == "tool" else strip_fences(text))
    except ValueError as exc:
        return None, "malformed", f"the output is not valid JSON: {exc}", text
    error = checker.check(data, spec)
    if error is not None:
        return None, "malformed", f"the output does not match the schema: {error}", text
    return data, "", "", ""
