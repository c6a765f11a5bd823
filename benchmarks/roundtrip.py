"""Hidden subcommand `roundtrip BASE_URL CHAINS CALLS`: what one call costs a bare client.

CHAINS parallel chains of CALLS sequential function-call requests (a ~850-token prompt, the size of an
ingestion call) through the OpenAI SDK, as the harness sends them; prints the mean and p50 seconds per
call as one JSON line. Run in its own process so that the harness's imports and state play no part.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from benchmarks.settings import BENCH_KEY
from mem0bench.metrics import percentile

_WORDS = " ".join(f"word{i % 97} fact about the session" for i in range(170))
_TOOL: dict[str, Any] = {"type": "function", "function": {"name": "facts", "parameters": {
    "type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"]}}}  # fmt: skip


async def measure_roundtrip(base_url: str, chains: int, calls: int) -> dict[str, float]:
    """Mean and p50 seconds per call over `chains` x `calls` requests (after one warm-up chain)."""
    import httpx2
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key=BENCH_KEY, max_retries=0)
    times: list[float] = []

    async def chain(c: int) -> None:
        for i in range(calls):
            body = {"model": "gpt-4o-mini", "temperature": 0, "tools": [_TOOL],
                    "messages": [{"role": "user", "content": f"{c} {i} {_WORDS}"}]}  # fmt: skip
            content = json.dumps(body).encode()
            t0 = time.perf_counter()
            response = await client.post("/chat/completions", cast_to=httpx2.Response, content=content)
            response.json()
            times.append(time.perf_counter() - t0)

    await chain(-1)  # warm-up: connection, first-use costs
    times.clear()
    await asyncio.gather(*(chain(c) for c in range(chains)))
    await client.close()
    return {"mean_s": sum(times) / len(times), "p50_s": percentile(times, 50) or 0.0}


def serve_roundtrip(argv: list[str]) -> int:
    base_url, chains, calls = argv[0], int(argv[1]), int(argv[2])
    print(json.dumps(asyncio.run(measure_roundtrip(base_url, chains, calls))))
    return 0
