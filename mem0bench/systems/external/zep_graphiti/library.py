"""Loading graphiti-core lazily, and the FalkorDB graph each conversation lives in.

graphiti on FalkorDB keeps each `group_id` (graph partition) in a FalkorDB graph of the same name. One
conversation is one group; its name carries the graph config's prefix and the run id, as Mem0^g's
graphs do (`<prefix>_<run id>_<sample>_zep`), so reruns in other folders and parallel runs never share a
graph, and a resumed run finds its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.memory.graph.credentials import password_for
from mem0bench.systems.external.support import import_library

__all__ = ["EXTRA", "drop_graph", "group_id", "load", "run_tag"]

EXTRA = install_hint("zep")


def load() -> ModuleType:
    """Our client module (which imports graphiti), telemetry off; ConfigurationError naming the extra."""
    import_library("graphiti_core", "zep", "zep_graphiti")  # switches telemetry off first
    try:
        from graphiti_core.driver.falkordb_driver import FalkorDriver  # noqa: F401

        from mem0bench.systems.external.zep_graphiti import clients
    except ImportError as exc:  # graphiti without its falkordb extra
        raise ConfigurationError(
            f"zep_graphiti needs graphiti-core with FalkorDB support ({exc}): {EXTRA}"
        ) from None
    return clients


def run_tag(graph_config: Mapping[str, Any], state_dir: Path) -> str:
    """The run id the harness passes, or a stable tag of the state folder (as Mem0^g does)."""
    run_id = graph_config.get("run_id")
    return str(run_id) if run_id else hashlib.sha1(str(Path(state_dir).resolve()).encode()).hexdigest()[:8]


def group_id(graph_config: Mapping[str, Any], tag: str, sample_id: str) -> str:
    """The conversation's graphiti group id, which is also its FalkorDB graph name.

    Letters, digits and '_' only: graphiti refuses anything else but '-', and a '-' in a group id makes
    FalkorDB's fulltext (BM25) search find nothing (graphiti escapes it, the index does not match it). When
    characters had to be replaced, a short hash of the original keeps "mini-1" and "mini_1" apart."""
    prefix = str(graph_config.get("prefix", "mem0bench") or "mem0bench")
    raw = f"{prefix}_{tag}_{sample_id}"
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", raw)
    if safe != raw:
        safe += "_" + hashlib.sha1(raw.encode()).hexdigest()[:6]
    return f"{safe}_zep"


def address(graph_config: Mapping[str, Any]) -> tuple[str, int]:
    return str(graph_config.get("host") or "127.0.0.1"), int(graph_config.get("port") or 6379)


def falkordb_client(host: str, port: int, max_connections: int) -> Any:
    """An async FalkorDB client whose queries wait for one of `max_connections` connections."""
    from falkordb.asyncio import FalkorDB
    from redis.asyncio import BlockingConnectionPool

    # As the client's own pool, except the limit: no read timeout (a big graph's query may take a while;
    # a redis connection's default is 5 s), RESP2 as FalkorDB's client asks.
    pool = BlockingConnectionPool(
        host=host,
        port=port,
        password=password_for(host, port),
        max_connections=max_connections,
        timeout=None,
        socket_timeout=None,
        socket_connect_timeout=10,
        decode_responses=True,
        protocol=2,
    )
    return FalkorDB(connection_pool=pool)


async def ping(host: str, port: int) -> None:
    """ConfigurationError naming the address when no FalkorDB server answers there."""
    from falkordb.asyncio import FalkorDB

    db: Any = None
    try:
        # The client connects already in its constructor (it asks the server whether it is a cluster).
        db = FalkorDB(host=host, port=port, password=password_for(host, port), socket_connect_timeout=5)
        await db.connection.ping()
    except Exception as exc:
        raise ConfigurationError(
            f"zep_graphiti: cannot reach FalkorDB at {host}:{port} (set graph.host / graph.port): {exc}"
        ) from exc
    finally:
        if db is not None:
            with contextlib.suppress(Exception):
                await db.connection.aclose()


async def drop_graph(db: Any, name: str) -> None:
    """Delete a FalkorDB graph; a graph that does not exist is fine."""
    try:
        await db.select_graph(name).delete()
    except Exception as exc:
        text = str(exc).lower()
        if "empty key" not in text and "invalid graph" not in text:
            raise


async def graph_exists(db: Any, name: str) -> bool:
    return name in set(await db.list_graphs())
