"""Probes of a server's behaviour before any work is paid for: one tiny structured request per chosen
output mode (`llm.structured`, `judge.mode`) and one embedding request, so a server that rejects the mode
or returns unpooled embeddings is named in one line (`ConfigurationError`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.types import (
    STRUCTURED_MODES,
    TRANSIENT_KINDS,
    CallFailure,
    LLMCallError,
    StructuredMode,
    StructuredSpec,
)

__all__ = ["Probe", "probe", "probe_server"]


async def probe(client: LLMClient, probes: Sequence[Probe] = ()) -> None:
    """With `llm.probe`: one tiny uncached structured request in `llm.structured` mode (plus one per
    entry of `probes`, e.g. the judge's model and mode) and one embedding request. Called after the
    offline checks, so a typo costs no request at all."""
    if client.settings.probe:
        own = Probe(model=client.settings.model, mode=client.settings.structured, setting="llm.structured")
        await probe_server(client, [own, *probes])


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


async def _try_mode(client: LLMClient, model: str, mode: StructuredMode) -> CallFailure | None:
    """None when `model` answers a tiny request in `mode` with valid output, else the failure."""
    try:
        await client.structured(
            _PROBE_MESSAGES,
            _probe_spec(mode),
            stage="preflight",
            salt=f"probe {client.base_url}",
            model=model,
        )
    except LLMCallError as exc:
        return exc.failure
    return None


def _said(failure: CallFailure) -> str:
    return f"{failure.kind}: {failure.message}"


def _not_the_mode(client: LLMClient, probe: Probe, failure: CallFailure) -> ConfigurationError:
    """A probe that failed for the server's state (a rate limit, an outage), past the client's retries and
    one more attempt: reported as what it is, with no advice to change the mode."""
    what = {"rate_limit": "rate-limited", "server_error": "failed with a server error on"}.get(
        failure.kind, f"got no answer ({failure.kind}) to"
    )
    return ConfigurationError(
        f"the server at {client.base_url} {what} the preflight probe of model '{probe.model}' "
        f"({probe.setting}={probe.mode}, {_said(failure)}): not a problem of the output mode; "
        "try again later (llm.probe=false skips the probe)"
    )


async def probe_server(client: LLMClient, probes: Sequence[Probe]) -> None:
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
            failure = await _try_mode(client, probe.model, probe.mode)
            if failure is not None and failure.kind in TRANSIENT_KINDS:
                # A 429, a 5xx, a timeout: the server's state, not (yet) the mode's. Asked once more;
                # a 5xx that stays may be a rejection (llama.cpp answers json_schema with HTTP 500).
                again = await _try_mode(client, probe.model, probe.mode)
                if again is not None and again.kind != "server_error" and again.kind in TRANSIENT_KINDS:
                    raise _not_the_mode(client, probe, again)
                failure = again
            if failure is None:
                continue
            working = [
                m
                for m in STRUCTURED_MODES
                if m != probe.mode and await _try_mode(client, probe.model, m) is None
            ]
            if failure.kind == "server_error":
                if not working:  # every mode failed: the server, not a mode
                    raise _not_the_mode(client, probe, failure)
                if await _try_mode(client, probe.model, probe.mode) is None:
                    continue  # the outage ended while the other modes were asked: the mode is fine
            hint = (
                f"set {probe.setting}={working[0]}"
                if working
                else f"no mode worked ({'|'.join(STRUCTURED_MODES)})"
            )
            raise ConfigurationError(
                f"model '{probe.model}' at {client.base_url} failed a structured-output probe with "
                f"{probe.setting}={probe.mode} ({_said(failure)}); {hint}"
            )
        await _probe_embeddings(client)
    finally:
        client.on_failure = hook


async def _probe_embeddings(client: LLMClient) -> None:
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
