"""Typed settings for the LLM client and the embedding backend, built from the Hydra config dicts.

`configs/llm/*.yaml` -> `LLMSettings.from_config(section)`; `configs/embedder/*.yaml` ->
`EmbedderSettings.from_config(section)` (each section as plain data). Unknown keys are rejected with a `ConfigurationError` naming the key,
so a typo in a sweep (`llm.max_concurency=4`) fails before any money is spent instead of being ignored.

The API key is never part of the settings' public form: it is read from the environment variable named by
`api_key_env` at the last moment, or taken from an explicit `api_key` override that is excluded from
`repr()` and from `public_dict()`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal
from urllib.parse import urlparse

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.types import STRUCTURED_MODES, StructuredMode

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"

DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o-mini": {"prompt": 0.15, "completion": 0.60, "cached_prompt": 0.075},
    "text-embedding-3-small": {"prompt": 0.02, "completion": 0.0},
}


def _to_plain(value: Any) -> Any:
    """Mappings and sequences -> plain dicts/lists, recursively (the commands hand over plain data: the
    Hydra config is parsed above this package, in `pipeline.spec`)."""
    if isinstance(value, Mapping):
        return {str(k): _to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_plain(v) for v in value]
    return value


def _check_keys(cls: type, mapping: Mapping[str, Any], section: str) -> dict[str, Any]:
    data = _to_plain(mapping)
    if not isinstance(data, dict):
        raise ConfigurationError(f"{section} settings must be a mapping, got {type(mapping).__name__}")
    known = {f.name for f in fields(cls)}
    for key in data:
        if key not in known:
            raise ConfigurationError(
                f"unknown {section} setting '{key}' (known: {', '.join(sorted(known - {'api_key'}))})"
            )
    return data


def _positive(
    name: str, value: float | int | None, *, allow_none: bool = False, allow_zero: bool = False
) -> None:
    if value is None:
        if allow_none:
            return
        raise ConfigurationError(f"{name} must be set")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")


def unpriced_server_note(base_url: str) -> str:
    """The one sentence that says why a run against another server than OpenAI's costs $0, and what to do.

    A local or self-hosted server bills nothing, but a billing proxy does: only the user knows which."""
    parts = urlparse(base_url)  # host and port only: a URL may carry credentials
    host = (parts.hostname or "the server") + (f":{parts.port}" if parts.port else "")
    return (
        f"costs are $0.00 because {host} is not OpenAI's API, so llm.prices were not applied; "
        "to price its calls at llm.prices, set llm.price_any_server=true"
    )


_PRICE_KEYS = ("prompt", "completion", "cached_prompt", "batch_prompt", "batch_completion")
"""A price entry's keys (USD per 1M tokens); the batch rates default to half the online ones."""

_RENAMED = {"requests_per_minute": "rpm", "tokens_per_minute": "tpm"}
"""Old names of `llm` settings, read as the new ones (the config of a run folder from before the rename)."""


@dataclass(frozen=True)
class LLMSettings:
    """How to reach the chat model, and the client's retry / concurrency / rate-limit / price policy."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = None
    context_window: int | None = None
    """The model's context window in tokens (prompt and reply), overriding the known models' table
    (llm/windows.py): set it for a local server's model. None: the table's, or unknown (nothing checked)."""
    timeout_s: float = 60.0
    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    unreachable_after_s: float = 60.0
    """Connection failures / timeouts on every call for this long: the server is gone, the run stops."""
    price_any_server: bool = False
    """`prices` are OpenAI's: calls to another server cost 0 unless this is true (e.g. a billing proxy)."""
    repair_attempts: int = 1
    max_concurrency: int = 64
    """Requests in flight at once: 64 fits LOCOMO's 20 speaker streams, each a chain with calls run ahead of
    it (Mem0^g's ingest needs ~39k calls: 32 slots could not carry them within 1.5x of its chain), with room
    for answers and judgements. Conversations in flight stay at most 64 however high it goes."""
    rpm: float | None = None
    """The account's requests per minute, when the user knows it (else the server's `x-ratelimit-*`
    figures pace the run; with both, the tighter wins)."""
    tpm: float | None = None
    """The account's tokens per minute (prompt + `max_tokens`, as OpenAI counts them); as `rpm`."""
    check_models: bool = True
    structured: StructuredMode = "tool"
    """How structured output is asked for: a forced function call (`tool`), a `json_schema` response format,
    or a `json_object` response format carrying the schema (llama.cpp's server)."""
    probe: bool = True
    """Preflight sends one tiny request in the `structured` mode and one embedding request, so a server
    that rejects them stops the run before any work."""
    batch: bool = False
    """The answer and judge stages' requests go through the Batch API (`llm.batch`), at its price."""
    batch_poll_s: float = 30.0
    """How often an open batch is polled."""
    batch_window_s: float = 2.0
    """A batch is sent once no new request has come for this long."""
    prices: dict[str, dict[str, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    api_key: str | None = field(default=None, repr=False, compare=False)
    """An explicit key (command-line override). Never shown, never serialized, never cached."""

    def __post_init__(self) -> None:
        if not self.model:
            raise ConfigurationError("llm.model must be a non-empty model name")
        if self.structured not in STRUCTURED_MODES:
            raise ConfigurationError(
                f"llm.structured must be one of {', '.join(STRUCTURED_MODES)}, not {self.structured!r}"
            )
        _positive("llm.timeout_s", self.timeout_s)
        _positive("llm.max_retries", self.max_retries, allow_zero=True)
        _positive("llm.backoff_base_s", self.backoff_base_s, allow_zero=True)
        _positive("llm.backoff_max_s", self.backoff_max_s, allow_zero=True)
        _positive("llm.unreachable_after_s", self.unreachable_after_s)
        _positive("llm.repair_attempts", self.repair_attempts, allow_zero=True)
        _positive("llm.max_concurrency", self.max_concurrency)
        _positive("llm.rpm", self.rpm, allow_none=True)
        _positive("llm.tpm", self.tpm, allow_none=True)
        if not isinstance(self.batch, bool):
            raise ConfigurationError(f"llm.batch must be true or false, not {self.batch!r}")
        _positive("llm.batch_poll_s", self.batch_poll_s)
        _positive("llm.batch_window_s", self.batch_window_s, allow_zero=True)
        if self.context_window is not None and (
            isinstance(self.context_window, bool)
            or not isinstance(self.context_window, int)
            or self.context_window < 1
        ):
            raise ConfigurationError(
                f"llm.context_window must be null or an integer >= 1 (tokens), not {self.context_window!r}"
            )
        prices: dict[str, dict[str, float]] = {}
        for model, entry in (self.prices or {}).items():
            if not isinstance(entry, Mapping) or set(entry) - set(_PRICE_KEYS):
                raise ConfigurationError(
                    f"llm.prices.{model} must be a mapping with keys 'prompt', 'completion' and optionally "
                    "'cached_prompt', 'batch_prompt', 'batch_completion' (USD per 1M tokens)"
                )
            prices[str(model)] = {
                "prompt": float(entry.get("prompt", 0.0)),
                "completion": float(entry.get("completion", 0.0)),
                # Absent: the model has no cached rate, and cached prompt tokens are priced in full.
                **{k: float(entry[k]) for k in _PRICE_KEYS[2:] if k in entry},
            }
        object.__setattr__(self, "prices", prices)

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any], *, api_key: str | None = None) -> LLMSettings:
        """Build from the `llm` config section; unknown keys raise `ConfigurationError`."""
        data = _check_keys(cls, {_RENAMED.get(k, k): v for k, v in _to_plain(mapping).items()}, "llm")
        if api_key is not None:
            data["api_key"] = api_key
        try:
            return cls(**data)
        except TypeError as exc:  # pragma: no cover - defensive
            raise ConfigurationError(f"invalid llm settings: {exc}") from None

    def resolve_api_key(self) -> str | None:
        """The explicit `api_key` if given, else `os.environ[api_key_env]`; None when neither is set."""
        if self.api_key:
            return self.api_key
        value = os.environ.get(self.api_key_env, "")
        return value or None

    def resolve_base_url(self) -> str:
        """`base_url`, else `$OPENAI_BASE_URL`, else the OpenAI API; without a trailing slash."""
        url = self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
        return url.rstrip("/")

    def is_openai_url(self) -> bool:
        """True when requests go to api.openai.com (where a missing key can never work)."""
        host = urlparse(self.resolve_base_url()).hostname or ""
        return host == "api.openai.com" or host.endswith(".openai.com")

    def priced(self) -> bool:
        """Whether `prices` apply: on OpenAI's API, or anywhere with `price_any_server=true`."""
        return self.price_any_server or self.is_openai_url()

    def price_note(self) -> str | None:
        """Why every cost reads $0 (None when the prices apply)."""
        return None if self.priced() else unpriced_server_note(self.resolve_base_url())

    def public_dict(self) -> dict[str, Any]:
        """A JSON-able dict for run manifests; the API key is never included."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api_key"}
        out["prices"] = {k: dict(v) for k, v in self.prices.items()}
        return out

    to_dict = public_dict

    def replace(self, **changes: Any) -> LLMSettings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class EmbedderSettings:
    """Which embedding backend to use: `openai` (the LLM's server) or `minilm` (local CPU)."""

    backend: Literal["openai", "minilm"] = "openai"
    model: str = "text-embedding-3-small"
    batch_size: int = 256
    dimensions: int | None = None
    """OpenAI: passed as `dimensions` only when set. MiniLM: the expected output size (384)."""
    device: str = "cpu"
    model_path: str | None = None
    encoding_format: Literal["base64", "float"] = "base64"
    """OpenAI backend wire format; base64 is ~10x cheaper to parse. Use "float" for servers without it."""

    def __post_init__(self) -> None:
        if self.backend not in ("openai", "minilm"):
            raise ConfigurationError(f"embedder.backend must be 'openai' or 'minilm', got {self.backend!r}")
        if self.encoding_format not in ("base64", "float"):
            raise ConfigurationError(
                f"embedder.encoding_format must be 'base64' or 'float', got {self.encoding_format!r}"
            )
        _positive("embedder.batch_size", self.batch_size)
        _positive("embedder.dimensions", self.dimensions, allow_none=True)

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any]) -> EmbedderSettings:
        """Build from the `embedder` config section; unknown keys raise `ConfigurationError`."""
        data = _check_keys(cls, mapping, "embedder")
        return cls(**data)

    def public_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    to_dict = public_dict
