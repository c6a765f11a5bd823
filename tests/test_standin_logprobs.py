"""The stand-in answers `logprobs` / `top_logprobs` / `logit_bias` / `max_tokens` as OpenAI's chat API shapes
them (through the real OpenAI SDK over HTTP), deterministically, from the request alone."""

from __future__ import annotations

import math
from typing import Any

import openai
import pytest

from devtools.standin.server import StandinServer

MESSAGES = [{"role": "user", "content": "Tell me what Maya did with her dog Biscuit in Oslo last week."}]


def _ask(server: StandinServer, **kwargs: Any) -> Any:
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, **kwargs)  # type: ignore[arg-type]


def test_each_content_token_has_its_logprob_bytes_and_top_alternatives(standin: StandinServer) -> None:
    reply = _ask(standin, logprobs=True, top_logprobs=3)
    choice = reply.choices[0]
    content = choice.logprobs.content
    assert "".join(t.token for t in content) == choice.message.content and len(content) >= 3
    for token in content:
        assert token.bytes == list(token.token.encode()) and token.logprob < 0
        top = token.top_logprobs
        assert len(top) == 3 and top[0].token == token.token and top[0].logprob == token.logprob
        assert [t.logprob for t in top] == sorted((t.logprob for t in top), reverse=True)
        assert len({t.token for t in top}) == 3 and sum(math.exp(t.logprob) for t in top) <= 1.0
    # Deterministic, and asking for logprobs does not change the reply.
    again = _ask(standin, logprobs=True, top_logprobs=3)
    assert again.choices[0].logprobs.model_dump() == choice.logprobs.model_dump()
    plain = _ask(standin).choices[0]
    assert plain.message.content == choice.message.content and plain.logprobs is None
    assert _ask(standin, logprobs=True).choices[0].logprobs.content[0].top_logprobs == []


def test_a_raised_token_comes_first_and_max_tokens_cuts_the_reply(standin: StandinServer) -> None:
    # o200k_base (gpt-4o's tokenizer): 6432 is " True", 7983 is " False"; graphiti's reranker raises both.
    tokens = set()
    for question in ("Is it relevant?", "Is Oslo relevant?", "Is Maya relevant?", "Is the dog relevant?"):
        reply = openai.OpenAI(base_url=standin.base_url, api_key="x").chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": question}],
            max_tokens=1,
            logit_bias={"6432": 1, "7983": 1},
            logprobs=True,
            top_logprobs=2,
        )
        choice = reply.choices[0]
        (token,) = choice.logprobs.content
        assert choice.message.content == token.token and choice.finish_reason == "length"
        assert {t.token for t in token.top_logprobs} == {" True", " False"}
        tokens.add(token.token)
    assert tokens == {" True", " False"}, "the stand-in should pick either raised token, by the request"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"top_logprobs": 2}, "needs logprobs"), ({"logprobs": True, "top_logprobs": 21}, "from 0 to 20")],
)
def test_invalid_logprob_requests_are_refused_as_openai_does(
    standin: StandinServer, kwargs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=needle):
        _ask(standin, **kwargs)
