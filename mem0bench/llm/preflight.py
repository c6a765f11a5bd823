"""Preflight: check the key, the server and the models before any work, failing with one clear line.

A run that would fail on its first call should say why in one line, not after minutes of setup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import numpy as np
import openai

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import (
    STRUCTURED_MODES,
    CallFailure,
    LLMCallError,
    Message,
    StructuredMode,
    StructuredReply,
    StructuredSpec,
)


class ProbedClient(Protocol):
    """What the probes use of `LLMClient` (stated here so that this module need not import the client,
    which imports it)."""

    base_url: str
    embedder: Any
    on_failure: Callable[[CallFailure], None] | None

    async def structured(
        self,
        messages: Sequence[Message],
        spec: StructuredSpec,
        *,
        stage: str,
        salt: str = "",
        model: str | None = None,
    ) -> StructuredReply: ...

    async def embed(self, texts: Sequence[str], *, stage: str) -> np.ndarray: ...


__all__ = ["PREFLIGHT_TIMEOUT_S", "Probe", "probe_server", "run_preflight"]

PREFLIGHT_TIMEOUT_S = 5.0
"""Short on purpose: a server that does not answer GET /models in 5 s is down or misconfigured."""


async def run_preflight(
    sdk: openai.AsyncOpenAI,
    settings: LLMSettings,
    *,
    base_url: str,
    has_key: bool,
    embedder: Any,
    scrub: Callable[[str], str],
    extra_models: Sequence[str] = (),
) -> None:
    """Raise `ConfigurationError` unless the key, the server and every wanted model look usable.

    Checks the chat model, the embedding model (for a remote embedder) and `extra_models` (e.g. the
    judge's) against GET /models; a server without that endpoint (404) or without a list passes.
    `scrub` removes the key from any error text shown.
    """
    url = base_url
    if not has_key and settings.is_openai_url():
        raise ConfigurationError(
            f"{settings.api_key_env} is not set: export it, or point llm.base_url "
            "(or OPENAI_BASE_URL) at an OpenAI-compatible server"
        )
    check = getattr(embedder, "check_available", None)
    if check is not None:
        check()
    try:
        response = await sdk.get("/models", cast_to=httpx2.Response, options={"timeout": PREFLIGHT_TIMEOUT_S})
    except openai.APITimeoutError:
        raise ConfigurationError(
            f"cannot reach the LLM server at {url}: no answer within {PREFLIGHT_TIMEOUT_S:g} s; "
            "is it running? set llm.base_url or OPENAI_BASE_URL"
        ) from None
    except openai.APIConnectionError as exc:
        reason = scrub(str(exc.__cause__ or exc.message))
        raise ConfigurationError(
            f"cannot reach the LLM server at {url}: {reason}; is it running? set llm.base_url or OPENAI_BASE_URL"
        ) from None
    except openai.APIStatusError as exc:
        status = exc.status_code
        if status == 404:
            return  # no /models endpoint: nothing to check
        if status in (401, 403):
            raise ConfigurationError(
                f"the LLM server at {url} rejected the API key (HTTP {status}): check {settings.api_key_env}"
            ) from None
        raise ConfigurationError(
            f"the LLM server at {url} answered GET /models with HTTP {status}: {scrub(exc.message)}"
        ) from None
    if not settings.check_models:
        return
    try:
        listed = {str(m.get("id")) for m in response.json().get("data") or [] if isinstance(m, dict)}
    except (ValueError, AttributeError):
        return  # not a model list: nothing to check
    if not listed:
        return
    wanted = [settings.model]
    if isinstance(embedder, OpenAIEmbeddingBackend):
        wanted.append(embedder.model)
    wanted += [m for m in extra_models if m and m not in wanted]
    for model in wanted:
        if model not in listed:
            shown = ", ".join(sorted(listed)[:20]) + (" ..." if len(listed) > 20 else "")
            raise ConfigurationError(f"model '{model}' is not served by {url}; available: {shown}")


@dataclass(frozen=True)
class Probe:
    """One structured-output probe: this model, asked in this mode; `setting` is what the user changes."""

    model: str
    mode: StructuredMode
    setting: str
    """The config key that chose `mode`, named in the error (`llm.structured`, `judge.mode`)."""


_PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
_PROBE_MESSAGES = [{"role": "user", "content": "Connectivity check: reply with ok set to true."}]
_EMBED_PROBE = ["mem0bench preflight probe"]


def _probe_spec(mode: StructuredMode) -> StructuredSpec:
    return StructuredSpec(
        "preflight_check", "Confirms the server follows the output format.", _PROBE_SCHEMA, mode
    )


async def _try_mode(client: ProbedClient, model: str, mode: StructuredMode) -> str | None:
    """None when `model` answers a tiny request in `mode` with valid output, else why not (one line)."""
    try:
        await client.structured(
            _PROBE_MESSAGES,
            _probe_spec(mode),
            stage="preflight",
            salt=f"probe {client.base_url}",
            model=model,
        )
    except LLMCallError as exc:
        return f"{exc.failure.kind}: {exc.failure.message}"
    return None


async def probe_server(client: ProbedClient, probes: Sequence[Probe]) -> None:
    """Raise `ConfigurationError` naming the setting to change when a probe fails.

    Each distinct (model, mode) is asked once; on failure the other modes are tried too, so the message
    can say which one this server accepts. Then the embedding endpoint is asked for one vector, and its
    shape is checked (a model without pooling returns one vector per token).
    """
    # A probe's failure is not a failure of the run. Its reply is cached like any other, under a salt
    # holding the server's URL: a rerun against the same server pays nothing, another server is asked.
    hook, client.on_failure = client.on_failure, None
    try:
        seen: set[tuple[str, str]] = set()
        for probe in probes:
            if (probe.model, probe.mode) in seen:
                continue
            seen.add((probe.model, probe.mode))
            error = await _try_mode(client, probe.model, probe.mode)
            if error is None:
                continue
            working = [
                m
                for m in STRUCTURED_MODES
                if m != probe.mode and await _try_mode(client, probe.model, m) is None
            ]
            hint = (
                f"set {probe.setting}={working[0]}"
                if working
                else f"no mode worked ({'|'.join(STRUCTURED_MODES)})"
            )
            raise ConfigurationError(
                f"model '{probe.model}' at {client.base_url} failed a structured-output probe with "
                f"{probe.setting}={probe.mode} ({error}); {hint}"
            )
        await _probe_embeddings(client)
    finally:
        client.on_failure = hook


async def _probe_embeddings(client: ProbedClient) -> None:
    backend = client.embedder
    if not isinstance(backend, OpenAIEmbeddingBackend):
        return  # a local model: checked when it loads
    where = f"embedding model '{backend.model}' at {client.base_url}"
    try:
        vectors = await client.embed(list(_EMBED_PROBE), stage="preflight")
    except LLMCallError as exc:
        raise ConfigurationError(
            f"{where} failed an embedding request ({exc.failure.kind}: {exc.failure.message}); "
            "set embedder.model, or use local embeddings with embedder=minilm"
        ) from None
    if backend.dimensions and vectors.shape[1] != backend.dimensions:
        raise ConfigurationError(
            f"{where} returned {vectors.shape[1]}-dimensional vectors, not embedder.dimensions="
            f"{backend.dimensions} (the server may ignore `dimensions`): set embedder.dimensions=null"
        )
