"""Building chat-completion request bodies, and the bytes and cache key they are sent and stored under.

The body is serialized once, canonically (sorted keys, compact): the same bytes go on the wire and
into the cache key, so a repeated request always finds its cached reply.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import Message, StructuredSpec

__all__ = [
    "chat_payload",
    "encode_body",
    "is_reasoning_model",
    "json_object_instruction",
    "request_adaptation",
    "request_key",
    "structured_request",
]

# OpenAI's reasoning families: o1, o3, o4-mini, ... and gpt-5 onward (gpt-5-mini, gpt-5.1, ...), except the
# `-chat` variants, which are ordinary chat models. A provider prefix ("openai/o3-mini") is ignored.
_REASONING_MODEL = re.compile(r"(?:o[1-9][0-9]*|gpt-(?:[5-9]|[1-9][0-9]+))(?:[.-][a-z0-9.-]*)?")


def is_reasoning_model(model: str) -> bool:
    """True for models that reject `temperature` (other than their default) and `max_tokens`."""
    name = model.rsplit("/", 1)[-1].lower()
    return bool(_REASONING_MODEL.fullmatch(name)) and "-chat" not in name


def request_adaptation(model: str, settings: LLMSettings) -> str | None:
    """How requests to `model` differ from the configured ones (for config.yaml), or None."""
    if not is_reasoning_model(model):
        return None
    changes = [
        f"temperature not sent (llm.temperature={settings.temperature}; the model takes only its default)"
    ]
    if settings.max_tokens is not None:
        changes.append(f"max_tokens={settings.max_tokens} sent as max_completion_tokens (reasoning included)")
    return "reasoning model: " + "; ".join(changes)


def chat_payload(
    settings: LLMSettings,
    messages: Sequence[Message],
    model: str | None,
    temperature: float | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """The body of a plain chat completion; None arguments fall back to `settings`.

    A reasoning model (`is_reasoning_model`) gets no temperature and `max_completion_tokens` in place of
    `max_tokens`, which is what OpenAI's API accepts from it; other models' bodies are unchanged.
    """
    s = settings
    name = model or s.model
    reasoning = is_reasoning_model(name)
    payload: dict[str, Any] = {"model": name, "messages": list(messages)}
    if not reasoning:
        payload["temperature"] = s.temperature if temperature is None else temperature
    if s.seed is not None:
        payload["seed"] = s.seed
    mt = s.max_tokens if max_tokens is None else max_tokens
    if mt is not None:
        payload["max_completion_tokens" if reasoning else "max_tokens"] = mt
    return payload


def encode_body(payload: dict[str, Any]) -> bytes:
    """Canonical UTF-8 JSON of a request body."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def request_key(body: bytes, salt: str) -> str:
    """sha256(body + "\\0" + salt): the cache key (== `ResponseCache.request_key(payload, salt)`).

    The API key is not part of it, so a cache can be shared across keys.
    """
    h = hashlib.sha256(body)
    h.update(b"\0")
    h.update(salt.encode("utf-8"))
    return h.hexdigest()


def structured_request(spec: StructuredSpec) -> tuple[dict[str, Any], str]:
    """-> (the request fields that ask for `spec`'s output, the repair instruction for a bad reply)."""
    if spec.mode == "tool":
        fields: dict[str, Any] = {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.parameters,
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": spec.name}},
        }
        return (
            fields,
            f"Call the function `{spec.name}` again with corrected arguments that satisfy its JSON schema.",
        )
    if spec.mode == "json_schema":
        fields = {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": spec.name, "schema": spec.parameters, "strict": True},
            }
        }
        return (
            fields,
            "Reply again with only a corrected JSON object that satisfies the required JSON schema.",
        )
    if spec.mode == "json_object":
        # llama.cpp's server takes the schema inside a json_object response format and turns it into a
        # grammar; servers that only force some JSON (vLLM, OpenAI) ignore it, so the schema is also
        # given in the prompt (`json_object_instruction`).
        fields = {"response_format": {"type": "json_object", "schema": spec.parameters}}
        return (
            fields,
            "Reply again with only a corrected JSON object that satisfies the required JSON schema.",
        )
    raise ConfigurationError(f"unknown structured output mode {spec.mode!r}")


def json_object_instruction(spec: StructuredSpec) -> Message:
    """The system message that tells the model the schema when the server is only asked for JSON."""
    schema = json.dumps(spec.parameters, sort_keys=True, separators=(",", ":"))
    return {
        "role": "system",
        "content": f"Reply with one JSON object only (no prose, no code fence) that satisfies this JSON schema: {schema}",
    }
