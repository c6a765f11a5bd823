"""Preflight probes against a stand-in that behaves like servers that differ from OpenAI.

The stand-in is told how to misbehave the way llama-cpp-python does (reject `json_schema`, return one
vector per token, ignore `dimensions`); the probe must stop with one line naming the setting to change.
The same differences are met for real in tests/test_llamacpp_e2e.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtools.e2e import TEST_KEY
from devtools.standin.server import HTTPError, Raw
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.probes import Probe, probe
from mem0bench.llm.settings import LLMSettings


def _client(standin: Any, *, dimensions: int | None = None, **settings: Any) -> LLMClient:
    options = dict(base_url=standin.base_url, api_key=TEST_KEY, max_retries=0, timeout_s=60.0)
    embedder = OpenAIEmbeddingBackend("emb", dimensions=dimensions, encoding_format="float")
    return LLMClient(LLMSettings(model="chat", **{**options, **settings}), embedder)


def _probe(client: LLMClient, probes: list[Probe] | None = None) -> None:
    async def go() -> None:
        try:
            await probe(client, probes or [])
        finally:
            await client.aclose()

    asyncio.run(go())


def _like_llama_cpp(endpoint: str, body: dict[str, Any]) -> Any:
    """llama-cpp-python's server: no `json_schema` response format (a validation error sent as HTTP 500)."""
    if endpoint == "chat" and (body.get("response_format") or {}).get("type") == "json_schema":
        return HTTPError(500, message="1 validation error: Input should be 'text' or 'json_object'")
    return None


def test_every_mode_passes_a_server_that_takes_it(standin):
    for mode in ("tool", "json_schema", "json_object"):
        _probe(_client(standin, structured=mode))  # no error


def test_a_rejected_mode_names_the_setting_and_the_mode_that_works(standin):
    standin.set_handler(_like_llama_cpp)
    with pytest.raises(ConfigurationError) as info:
        _probe(_client(standin, structured="json_schema"))
    message = str(info.value)
    assert "\n" not in message
    assert (
        "llm.structured=json_schema" in message
        and "HTTP 500" in message
        and "set llm.structured=tool" in message
    )


def test_the_judge_probe_names_judge_mode(standin):
    standin.set_handler(_like_llama_cpp)
    with pytest.raises(ConfigurationError, match=r"judge\.mode=json_schema .*set judge\.mode=tool"):
        _probe(_client(standin), [Probe("judge-model", "json_schema", "judge.mode")])


def test_probe_off_sends_nothing(standin):
    standin.set_handler(_like_llama_cpp)
    _probe(_client(standin, structured="json_schema", probe=False))
    assert standin.count("chat") == 0 and standin.count("embeddings") == 0


def test_per_token_embeddings_are_named(standin):
    def per_token(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint != "embeddings":
            return None
        tokens = [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]  # one vector per token: a model without pooling
        return Raw({"data": [{"index": 0, "embedding": tokens}], "usage": {"prompt_tokens": 2}})

    standin.set_handler(per_token)
    with pytest.raises(ConfigurationError, match="2 per-token vectors .*--pooling mean"):
        _probe(_client(standin))


def test_ignored_dimensions_are_named(standin):
    def fixed_size(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint != "embeddings":
            return None
        return Raw({"data": [{"index": 0, "embedding": [0.5] * 8}], "usage": {"prompt_tokens": 2}})

    standin.set_handler(fixed_size)
    with pytest.raises(ConfigurationError, match="8-dimensional vectors, not embedder.dimensions=256"):
        _probe(_client(standin, dimensions=256))


def test_a_json_object_request_carries_the_schema_in_the_format_and_the_prompt(standin):
    seen: list[dict[str, Any]] = []

    def record(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint == "chat":
            seen.append(body)
        return None

    standin.set_handler(record)
    _probe(_client(standin, structured="json_object"))
    (body,) = seen
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["required"] == ["ok"]
    assert '"required":["ok"]' in body["messages"][-1]["content"]


def _failing(status: int, times: int, *, mode: str | None = None):
    """A handler failing the first `times` chat requests (in `mode` only, when given) with `status`."""
    left = [times]

    def handler(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint != "chat" or left[0] <= 0:
            return None
        if mode is not None and (body.get("response_format") or {}).get("type") != mode:
            return None
        left[0] -= 1
        return HTTPError(status, message=f"stand-in {status}")

    return handler


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_passing_429_or_5xx_at_preflight_is_asked_again_not_blamed_on_the_mode(standin, status):
    standin.set_handler(_failing(status, 1))
    _probe(_client(standin, structured="json_schema"))  # no error, and no advice to change the mode
    assert standin.count("chat", status) == 1  # the probe did meet the failure


@pytest.mark.parametrize(("status", "kind"), [(429, "rate-limited"), (503, "server error")])
def test_a_lasting_429_or_5xx_is_reported_as_the_servers_without_mode_advice(standin, status, kind):
    standin.set_handler(_failing(status, 100))
    with pytest.raises(ConfigurationError) as info:
        _probe(_client(standin, structured="json_schema"))
    message = str(info.value)
    assert kind in message and f"HTTP {status}" in message and "not a problem of the output mode" in message
    assert "set llm.structured" not in message and "\n" not in message


def test_a_5xx_outage_that_ends_while_other_modes_are_asked_is_no_mode_advice(standin):
    standin.set_handler(_failing(503, 2, mode="json_schema"))  # the first ask and its second attempt
    _probe(_client(standin, structured="json_schema"))
    assert standin.count("chat", 503) == 2
