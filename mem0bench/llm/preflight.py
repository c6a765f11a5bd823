"""Preflight: check the key, the server and the models before any work, failing with one clear line.

A run that would fail on its first call should say why in one line, not after minutes of setup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.transport import HTTPConnectError, HTTPStatusError, HTTPTimeout, JsonTransport

__all__ = ["PREFLIGHT_TIMEOUT_S", "run_preflight"]


async def _check_batch_api(transport: JsonTransport, url: str, scrub: Callable[[str], str]) -> None:
    """`llm.batch=true` needs the Batch API: GET /batches (OpenAI lists them) must not be 404 / 405, as
    on vLLM, Ollama and llama.cpp. A server that cannot be reached is reported by the /models check."""
    try:
        await transport.get("/batches?limit=1", timeout_s=PREFLIGHT_TIMEOUT_S)
    except (HTTPTimeout, HTTPConnectError, ValueError):
        return
    except HTTPStatusError as exc:
        if exc.status_code in (404, 405, 501):
            raise ConfigurationError(
                f"llm.batch=true but the LLM server at {url} has no Batch API (GET /batches: HTTP "
                f"{exc.status_code}); set llm.batch=false to send the requests one by one"
            ) from None
        if exc.status_code not in (401, 403):  # a rejected key is reported by the /models check
            raise ConfigurationError(
                f"llm.batch=true but the LLM server at {url} answered GET /batches with HTTP "
                f"{exc.status_code}: {scrub(exc.message)}"
            ) from None


PREFLIGHT_TIMEOUT_S = 5.0
"""Short on purpose: a server that does not answer GET /models in 5 s is down or misconfigured."""


async def run_preflight(
    transport: JsonTransport,
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
    if settings.batch:
        await _check_batch_api(transport, url, scrub)
    try:
        listing = await transport.get("/models", timeout_s=PREFLIGHT_TIMEOUT_S)
    except HTTPTimeout:
        raise ConfigurationError(
            f"cannot reach the LLM server at {url}: no answer within {PREFLIGHT_TIMEOUT_S:g} s; "
            "is it running? set llm.base_url or OPENAI_BASE_URL"
        ) from None
    except HTTPConnectError as exc:
        reason = scrub(str(exc))
        raise ConfigurationError(
            f"cannot reach the LLM server at {url}: {reason}; is it running? set llm.base_url or OPENAI_BASE_URL"
        ) from None
    except HTTPStatusError as exc:
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
    except ValueError:
        return  # a 2xx that is not JSON: not a model list, nothing to check
    if not settings.check_models:
        return
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return  # not a model list: nothing to check
    listed = {str(m.get("id")) for m in listing["data"] if isinstance(m, dict)}
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
