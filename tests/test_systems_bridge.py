"""The LLM bridge: a library's own OpenAI client, over real loopback HTTP, served through our LLMClient
(and from there the stand-in server): cache, ledger stages, timing scopes, failures, refusals."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from devtools.standin.server import HTTPError, StandinServer, ToolCall
from mem0bench.llm import timing
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.client import LLMClient
from mem0bench.llm.embedders import OpenAIEmbeddingBackend
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import LLMCallError
from mem0bench.systems.external.bridge import LLMBridge
from mem0bench.systems.external.support import LibraryLog

SECRET = "test-fake-SECRET-bridge-0123456789"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "save_note",
            "description": "Save one note.",
            "parameters": {
                "type": "object",
                "properties": {"note": {"type": "string"}},
                "required": ["note"],
            },
        },
    }
]


def make_client(server: StandinServer, cache: ResponseCache | None = None) -> LLMClient:
    settings = LLMSettings(
        base_url=server.base_url, api_key=SECRET, model="gpt-4o-mini", timeout_s=5.0, max_retries=2,
        backoff_base_s=0.01, backoff_max_s=0.02,
    )  # fmt: skip
    return LLMClient(settings, OpenAIEmbeddingBackend("text-embedding-3-small", batch_size=64), cache)


def library_client(bridge: LLMBridge, route: str) -> openai.OpenAI:
    """What an adapter gives a sync library: the bridge's URL, its token as the key, no retries of its own."""
    return openai.OpenAI(base_url=bridge.base_url(route), api_key=bridge.api_key, max_retries=0, timeout=10)


def test_chat_goes_through_the_client_with_its_model_cache_and_ledger(standin, tmp_path: Path):
    async def main() -> tuple[Any, Any, dict[str, Any]]:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        client = make_client(standin, cache)
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "conv-1")
            messages = [{"role": "user", "content": "Say something about Oslo."}]
            async with bridge.scope("conv-1", stage="lib_ingest"):
                first = await asyncio.to_thread(
                    lib.chat.completions.create, model="some-other-model", messages=messages, temperature=0.3
                )
                second = await asyncio.to_thread(
                    lib.chat.completions.create, model="some-other-model", messages=messages, temperature=0.3
                )
        usage = client.ledger.snapshot()
        await client.aclose()
        cache.close()
        return first, second, usage

    first, second, usage = asyncio.run(main())
    assert (
        first.choices[0].message.content
        and first.choices[0].message.content == second.choices[0].message.content
    )
    assert first.usage.prompt_tokens > 0
    chats = [body for ep, body in standin.requests if ep == "chat"]
    assert len(chats) == 1, "the second, identical request must come from the cache"
    assert chats[0]["model"] == "gpt-4o-mini" and chats[0]["temperature"] == 0.3
    stage = usage["stages"]["lib_ingest"]
    assert stage["calls"] == 2 and stage["cached_calls"] == 1


def test_logprobs_pass_through_both_ways_and_replay_from_the_cache(standin, tmp_path: Path):
    """A library that asks for logprobs (graphiti's reranker) gets the server's back, as OpenAI shapes them;
    they are part of the cache key, and a cached replay returns them too."""
    import httpx

    ask = {
        "messages": [{"role": "user", "content": "Is the passage relevant? Answer True or False."}],
        "temperature": 0, "max_tokens": 1, "logit_bias": {"6432": 1, "7983": 1},
        "logprobs": True, "top_logprobs": 2,
    }  # fmt: skip

    async def main() -> list[Any]:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        client = make_client(standin, cache)
        replies = []
        async with LLMBridge(client) as bridge:
            lib = openai.AsyncOpenAI(base_url=bridge.base_url("q"), api_key=bridge.api_key, max_retries=0)
            async with bridge.scope("q", stage="lib_search"):
                for kwargs in (
                    ask,
                    ask,
                    {k: v for k, v in ask.items() if k not in ("logprobs", "top_logprobs")},
                ):
                    replies.append(await lib.chat.completions.create(model="x", **kwargs))
            await lib.close()
        await client.aclose()
        cache.close()
        return replies

    first, replayed, plain = asyncio.run(main())
    chats = [body for ep, body in standin.requests if ep == "chat"]
    assert len(chats) == 2, "the repeat comes from the cache; without logprobs it is another request"
    assert chats[0]["logprobs"] is True and chats[0]["top_logprobs"] == 2 and chats[0]["logit_bias"]
    # What the stand-in answered, asked directly: the bridge returned exactly that.
    direct = httpx.post(f"{standin.base_url}/chat/completions", json={**chats[0]}, timeout=10).json()
    expected = direct["choices"][0]["logprobs"]
    (token,) = first.choices[0].logprobs.content  # max_tokens=1: one token
    assert first.choices[0].logprobs.model_dump()["content"] == expected["content"]
    assert len(token.top_logprobs) == 2 and token.top_logprobs[0].token == token.token
    assert token.token.strip() in ("True", "False") and token.bytes == list(token.token.encode())
    assert replayed.choices[0].logprobs.model_dump() == first.choices[0].logprobs.model_dump()
    assert plain.choices[0].logprobs is None


def test_the_library_never_sees_the_real_key(standin):
    async def main() -> None:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "r")
            await asyncio.to_thread(
                lib.chat.completions.create, model="x", messages=[{"role": "user", "content": "hi"}]
            )
            assert SECRET not in bridge.base_url("r") and SECRET not in bridge.api_key
        await client.aclose()

    asyncio.run(main())
    assert standin.count("chat", 200) == 1


def test_tool_calls_come_back_as_the_sdk_expects(standin):
    standin.script([ToolCall({"note": "Ann lives in Oslo"}, name="save_note")])

    async def main() -> Any:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "r")
            reply = await asyncio.to_thread(
                lib.chat.completions.create,
                model="x",
                messages=[{"role": "user", "content": "Ann moved to Oslo."}],
                tools=TOOLS,
                tool_choice="auto",
            )
        await client.aclose()
        return reply

    reply = asyncio.run(main())
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.name == "save_note" and '"Ann lives in Oslo"' in call.function.arguments
    assert call.id and call.type == "function"
    sent = next(body for ep, body in standin.requests if ep == "chat")
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "auto"


@pytest.mark.parametrize("fmt", ["float", "base64"])
def test_embeddings_match_the_clients_own(standin, fmt: str):
    async def main() -> tuple[np.ndarray, np.ndarray, int]:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "r")
            texts = ["Ann moved to Oslo", "Bob adopted a dog"]
            if fmt == "float":
                reply = await asyncio.to_thread(
                    lib.embeddings.create, model="x", input=texts, encoding_format="float"
                )
            else:  # the SDK asks for base64 by default and decodes it itself
                reply = await asyncio.to_thread(lib.embeddings.create, model="x", input=texts)
            got = np.array([d.embedding for d in reply.data], dtype=np.float32)
            direct = await client.embed(texts, stage="check")
            dims = await bridge.embedding_dims()
        await client.aclose()
        return got, direct, dims

    got, direct, dims = asyncio.run(main())
    assert got.shape == direct.shape == (2, dims)
    assert np.allclose(got, direct, atol=1e-6)


def test_calls_count_in_the_callers_timing_scope_and_unscoped_calls_in_the_route(standin):
    async def main() -> tuple[timing.CallTiming, dict[str, Any]]:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "conv-2")
            with timing.measure() as measured:
                async with bridge.scope("conv-2", stage="lib_search") as scope:
                    await asyncio.to_thread(
                        lib.chat.completions.create, model="x", messages=[{"role": "user", "content": "q"}]
                    )
                    await asyncio.to_thread(lib.embeddings.create, model="x", input="q")
                    assert scope.calls == 2
            # No scope open: served under the route's name, not counted in any question.
            await asyncio.to_thread(
                lib.chat.completions.create, model="x", messages=[{"role": "user", "content": "later"}]
            )
        usage = client.ledger.snapshot()
        await client.aclose()
        return measured, usage

    measured, usage = asyncio.run(main())
    assert measured.usage["lib_search"][0] == 1 and measured.usage["lib_search_embedding"][0] == 1
    assert measured.network_s > 0
    assert usage["stages"]["conv-2"]["calls"] == 1


def test_a_call_that_fails_for_good_is_recorded_and_returned_as_an_http_error(standin):
    standin.script([HTTPError(503, "down")] * 3)  # the client's 2 retries + 1

    async def main() -> tuple[Any, LLMCallError, dict[str, Any]]:
        client = make_client(standin)
        seen = []
        client.on_failure = seen.append
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "r")
            async with bridge.scope("r", stage="lib_ingest") as scope:
                with pytest.raises(openai.APIStatusError) as raised:
                    await asyncio.to_thread(
                        lib.chat.completions.create, model="x", messages=[{"role": "user", "content": "q"}]
                    )
                error = scope.error(raised.value, "somelib")
        usage = client.ledger.snapshot()
        await client.aclose()
        assert len(seen) == 1 and seen[0].kind == "server_error"
        return raised.value, error, usage

    exc, error, usage = asyncio.run(main())
    assert exc.status_code == 502 and "server_error" in str(exc)
    assert error.failure.kind == "server_error" and error.failure.stage == "lib_ingest"
    assert usage["stages"]["lib_ingest"]["failures"] == 1
    assert standin.count("chat") == 3


def test_a_library_exception_without_a_failed_call_is_a_local_error(standin):
    async def main() -> LLMCallError:
        client = make_client(standin)
        async with LLMBridge(client) as bridge, bridge.scope("r", stage="lib_search") as scope:
            error = scope.error(KeyError("memory"), "somelib")
        await client.aclose()
        return error

    error = asyncio.run(main())
    assert error.failure.kind == "local_error" and "somelib raised KeyError" in error.failure.message


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"stream": True}, "streaming is not supported"), ({"n": 2}, "n > 1 is not supported")],
)
def test_what_the_bridge_cannot_serve_is_refused_in_one_line(standin, kwargs: dict[str, Any], needle: str):
    async def main() -> Exception:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            lib = library_client(bridge, "r")
            with pytest.raises(openai.BadRequestError) as raised:
                await asyncio.to_thread(
                    lib.chat.completions.create,
                    model="x",
                    messages=[{"role": "user", "content": "q"}],
                    **kwargs,
                )
        await client.aclose()
        return raised.value

    assert needle in str(asyncio.run(main()))
    assert standin.count("chat") == 0


def test_scopes_on_one_route_are_serialized(standin):
    async def main() -> list[str]:
        client = make_client(standin)
        order: list[str] = []
        async with LLMBridge(client) as bridge:

            async def work(name: str) -> None:
                async with bridge.scope("r", stage=f"{name}_ingest"):
                    order.append(f"{name}+")
                    await asyncio.sleep(0.05)
                    order.append(f"{name}-")

            await asyncio.gather(work("a"), work("b"))
        await client.aclose()
        return order

    order = asyncio.run(main())
    assert order in (["a+", "a-", "b+", "b-"], ["b+", "b-", "a+", "a-"])


def test_stamped_scopes_on_one_route_overlap_and_keep_their_calls_apart(standin):
    """Two questions search one library instance (one route, one shared client) at once: neither waits
    for the other, and each question's timing scope and bridge scope get its own calls, no one else's."""
    delay = 0.3
    standin.latency_ms = delay * 1000

    async def main() -> tuple[float, dict[str, tuple[timing.CallTiming, int]], dict[str, Any]]:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            http = bridge.http_client(10.0)
            lib = openai.OpenAI(
                base_url=bridge.base_url("conv"), api_key=bridge.api_key, max_retries=0, http_client=http
            )

            def library_search(text: str) -> None:  # what a sync library does in its worker thread
                lib.chat.completions.create(model="x", messages=[{"role": "user", "content": text}])
                lib.embeddings.create(model="x", input=text)

            async def question(name: str, text: str) -> tuple[str, tuple[timing.CallTiming, int]]:
                with timing.measure() as measured:
                    async with bridge.scope("conv", stage="lib_search", stamped=True) as scope:
                        await bridge.run_blocking(library_search, text)
                return name, (measured, scope.calls)

            started = time.perf_counter()
            got = await asyncio.gather(question("long", "tell me " * 200), question("short", "hi"))
            wall = time.perf_counter() - started
            http.close()
        usage = client.ledger.snapshot()
        await client.aclose()
        return wall, dict(got), usage

    wall, got, usage = asyncio.run(main())
    # Each question waits 2 x delay on the server (chat, then embedding); taking turns would be 4 x delay.
    assert wall < 3 * delay
    for _name, (measured, calls) in got.items():
        assert calls == 2
        assert measured.usage["lib_search"][0] == 1 and measured.usage["lib_search_embedding"][0] == 1
        assert measured.network_s >= 2 * delay * 0.9
    assert got["long"][0].usage["lib_search"][1] > 200 > got["short"][0].usage["lib_search"][1]
    # Two chats and two embeddings, all under the scopes' stage (none unscoped, under the route's name).
    assert usage["stages"]["lib_search"]["calls"] == 4 and "conv" not in usage["stages"]


def test_an_async_library_on_the_harness_loop_stamps_its_requests_too(standin):
    """An async library (AsyncOpenAI on the bridge's async client) searching for two questions at once."""

    async def main() -> tuple[dict[str, timing.CallTiming], dict[str, Any]]:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            http = bridge.async_http_client(10.0)
            lib = openai.AsyncOpenAI(
                base_url=bridge.base_url("conv"), api_key=bridge.api_key, max_retries=0, http_client=http
            )

            async def question(name: str, n: int) -> tuple[str, timing.CallTiming]:
                with timing.measure() as measured:
                    async with bridge.scope("conv", stage="lib_search", stamped=True):
                        for i in range(n):
                            await lib.embeddings.create(model="x", input=f"{name} {i}")
                return name, measured

            got = dict(await asyncio.gather(question("one", 1), question("three", 3)))
            await http.aclose()
        usage = client.ledger.snapshot()
        await client.aclose()
        return got, usage

    got, usage = asyncio.run(main())
    assert got["one"].usage["lib_search_embedding"][0] == 1
    assert got["three"].usage["lib_search_embedding"][0] == 3
    assert "conv" not in usage["stages"]


def test_a_stamped_call_after_its_scope_closed_is_served_unscoped(standin):
    async def main() -> dict[str, Any]:
        client = make_client(standin)
        async with LLMBridge(client) as bridge:
            http = bridge.http_client(10.0)
            lib = openai.OpenAI(
                base_url=bridge.base_url("late"), api_key=bridge.api_key, max_retries=0, http_client=http
            )
            async with bridge.scope("late", stage="lib_search", stamped=True):
                context = contextvars.copy_context()  # a library task outliving the scope keeps its token
            ask = functools.partial(
                lib.chat.completions.create, model="x", messages=[{"role": "user", "content": "q"}]
            )
            await bridge.run_blocking(context.run, ask)
            http.close()
        usage = client.ledger.snapshot()
        await client.aclose()
        return usage

    usage = asyncio.run(main())
    assert usage["stages"]["late"]["calls"] == 1 and "lib_search" not in usage["stages"]


SOMELIB_LOG = LibraryLog(["somelib"])


def test_library_log_routes_each_record_to_the_call_that_logged_it():
    logger = logging.getLogger("somelib.sub")

    def library_call(name: str) -> None:
        logger.info("fine")
        logger.error("Error in new_retrieved_facts: %s", name)

    async def one(name: str, delay: float) -> list[Any]:
        with SOMELIB_LOG.capture() as records:
            await asyncio.sleep(delay)
            await asyncio.to_thread(library_call, name)
            await asyncio.sleep(0.02)
        return records

    async def main() -> tuple[list[Any], list[Any]]:
        a, b = await asyncio.gather(one("a", 0.0), one("b", 0.01))
        logger.error("outside any capture: not collected")
        return a, b

    a, b = asyncio.run(main())
    assert [(r.logger, r.level, r.message) for r in a] == [
        ("somelib.sub", logging.ERROR, "Error in new_retrieved_facts: a")
    ]
    assert [r.message for r in b] == ["Error in new_retrieved_facts: b"]


def test_the_bridge_reads_chunked_requests_and_answers_a_broken_head_with_400(standin):
    """The wire side no library client exercises every day: a chunked request body (requests sends one
    for a generator body), and a head that is not HTTP (one clear 400, the connection closed)."""
    body = b'{"model": "x", "input": ["hello", "world"], "encoding_format": "float"}'
    chunked = b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (body[:20], body[20:]))

    async def exchange(port: int, wire: bytes) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(wire)
        await writer.drain()
        reply = await reader.read()  # both replies end the connection: one asks to, one breaks it
        writer.close()
        return reply

    async def main() -> tuple[bytes, bytes]:
        async with LLMBridge(make_client(standin)) as bridge:
            port = int(bridge.base_url("c").split(":")[2].split("/")[0])
            good = await exchange(
                port,
                b"POST /r/c/v1/embeddings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                b"Authorization: Bearer " + bridge.api_key.encode() + b"\r\n"
                b"Connection: close\r\n\r\n" + chunked + b"0\r\n\r\n",
            )
            bad = await exchange(port, b"POST /r/c/v1/embeddings HTTP/1.1\r\nno colon here\r\n\r\n")
        return good, bad

    good, bad = asyncio.run(main())
    assert good.startswith(b"HTTP/1.1 200")
    assert len(json.loads(good.split(b"\r\n\r\n", 1)[1])["data"]) == 2  # both texts of the chunked body
    assert bad.startswith(b"HTTP/1.1 400") and b"bad request head" in bad


def test_the_bridge_refuses_a_request_without_its_token_and_forwards_or_reads_nothing(
    standin, tmp_path: Path
):
    """Another local user can reach the loopback port: with no key, a wrong key or another bridge's key,
    a request gets 401, the server sees nothing and the response cache is not read (a cached reply would
    otherwise leak); the library's own key is served, from the cache the second time."""
    import httpx

    ask = {"model": "x", "messages": [{"role": "user", "content": "What does Ann like?"}]}

    async def main() -> tuple[list[int], list[int], int, ResponseCache]:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        client = make_client(standin, cache)
        async with LLMBridge(client) as bridge, LLMBridge(client) as other, httpx.AsyncClient() as http:
            assert bridge.api_key != other.api_key and len(bridge.api_key) >= 32
            url = bridge.base_url("conv") + "/chat/completions"
            good = {"Authorization": f"Bearer {bridge.api_key}"}
            strangers = [
                {},
                {"Authorization": "Bearer mem0bench-bridge-not-a-secret"},
                {"Authorization": f"Bearer {other.api_key}"},
                {"Authorization": bridge.api_key},  # the token without the scheme
            ]
            async with bridge.scope("conv", stage="lib_ingest"):
                before = [(await http.post(url, json=ask, headers=h)).status_code for h in strangers]
                served = [(await http.post(url, json=ask, headers=good)).status_code for _ in range(2)]
                server_calls = len(standin.requests)
                hits = cache.hits + cache.misses
                after = [(await http.post(url, json=ask, headers=h)).status_code for h in strangers]
                after.append((await http.get(bridge.base_url("conv") + "/models")).status_code)
                assert cache.hits + cache.misses == hits, "a refused request read the cache"
        await client.aclose()
        cache.close()
        return before + after, served, server_calls, cache

    refused, served, server_calls, _ = asyncio.run(main())
    assert refused == [401] * 9
    assert served == [200, 200]
    assert server_calls == 1 and standin.count("chat") == 1, (
        "only the library's own first call reached the server"
    )


def _loopback_listeners(pid: int) -> list[int]:
    """The TCP ports a process listens on at 127.0.0.1, as any user can see them (/proc/net/tcp) matched
    to the process's own sockets."""
    import os

    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, port = fields[1].split(":")
        if fields[3] == "0A" and address == "0100007F" and fields[9] in inodes:  # LISTEN on 127.0.0.1
            ports.append(int(port, 16))
    return ports


@pytest.mark.slow
def test_during_a_run_a_stranger_gets_401_from_the_bridge_and_nothing_reaches_the_server(
    tmp_path, locomo_mini
):
    """As another local user would try it during a +exp=mem0_oss run: the run's loopback port, found as
    anyone can find it, answers a request without the bridge's token, or with a guessed one, 401; the
    server never sees the stranger's request; a request the run made already (its reply is in the cache)
    is refused too, so no cached reply is read out."""
    import httpx

    from devtools.e2e import FAST, TEST_KEY, cli_env
    from devtools.reliability import finish_cli, start_cli, wait_for
    from devtools.standin.mem0_oss_replies import mem0_handler

    probe = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "stranger-probe-7f3a"}]}
    args = ["run", "+exp=mem0_oss", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            "eval.max_questions=1", "judge.runs=1", f"hydra.run.dir={tmp_path / 'run'}", *FAST]  # fmt: skip
    with StandinServer(api_key=TEST_KEY, latency_ms=100) as server:
        server.set_handler(mem0_handler())
        proc = start_cli(args, cli_env(server.base_url, tmp_path / "cache"))
        wait_for(lambda: server.count("chat", 200) >= 2, proc)  # the library's calls are being served
        ports = _loopback_listeners(proc.pid)
        assert ports, "the run's bridge listens on a loopback port"
        seen = [body for endpoint, body in server.requests if endpoint == "chat"]
        statuses = []
        for port in ports:
            url = f"http://127.0.0.1:{port}/r/mini-1/v1/chat/completions"
            for headers in ({}, {"Authorization": "Bearer mem0bench-bridge-not-a-secret"}):
                for body in (probe, seen[0]):
                    statuses.append(httpx.post(url, json=body, headers=headers, timeout=10).status_code)
        done = finish_cli(proc, timeout=240)
        received = [json.dumps(body) for _, body in server.requests]
    assert done.returncode == 0, done.stderr[-3000:]
    assert statuses == [401] * 4 * len(ports)
    assert not [body for body in received if "stranger-probe-7f3a" in body]
