"""Opening mem0's `AsyncMemory` for one speaker of one conversation, pointed at the LLM bridge.

One instance per (conversation, speaker): its qdrant collection (local, on-disk mode: no server), its
history database and, for the graph variant, its Kuzu database all live in that speaker's folder, so a
finished conversation is reopened from disk and an unfinished one is removed and rebuilt.
The library is imported here only, lazily: mem0bench imports without the `mem0_oss` extra.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import random
import re
import threading
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.systems.external.support import import_library

__all__ = [
    "EXTRACTION_DATES",
    "HARNESS_INSTRUCTIONS",
    "LibraryEndpoint",
    "Speaker",
    "close_memory",
    "extraction_prompt",
    "import_mem0",
    "open_memory",
]

EXTRA = install_hint("mem0_oss")
COLLECTION = "mem0"  # mem0's default collection name
CLIENT_TIMEOUT_S = 900.0
"""Generous: our LLMClient already times out, retries and rate-limits behind the bridge."""

# mem0's evaluation harness (evaluation/src/memzero/add.py, Apache-2.0) set these project-level custom
# instructions on the hosted platform before adding LOCOMO. The open-source library has no such project
# setting; `harness_instructions: true` appends them to the library's own fact-extraction prompt.
HARNESS_INSTRUCTIONS = """Generate personal memories that follow these guidelines:

1. Each memory should be self-contained with complete context, including:
   - The person's name, do not use "user" while creating memories
   - Personal details (career aspirations, hobbies, life circumstances)
   - Emotional states and reactions
   - Ongoing journeys or future plans
   - Specific dates when events occurred

2. Include meaningful personal narratives focusing on:
   - Identity and self-acceptance journeys
   - Family planning and parenting
   - Creative outlets and hobbies
   - Mental health and self-care activities
   - Career aspirations and education goals
   - Important life events and milestones

3. Make each memory rich with specific details rather than general statements
   - Include timeframes (exact dates when possible)
   - Name specific activities (e.g., "charity race for mental health" rather than just "exercise")
   - Include emotional context and personal growth elements

4. Extract memories only from user messages, not incorporating assistant responses

5. Format each memory as a paragraph with a clear narrative structure that captures the person's experience, challenges, and aspirations
"""

_TODAY = re.compile(r"Today's date is \d{4}-\d{2}-\d{2}\.")
_import_lock = threading.Lock()


def import_mem0() -> Any:
    """The `mem0` package, with its telemetry off (MEM0_TELEMETRY is read once, at mem0's import)."""
    with _import_lock:
        return import_library("mem0", "mem0_oss", "mem0_oss")


def _import_graph_deps() -> None:
    for module in ("kuzu", "rank_bm25"):
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigurationError(
                f"mem0_oss_graph needs {module} (mem0's embedded Kuzu graph store): {EXTRA} ({error})"
            ) from error


EXTRACTION_DATES = ("session", "today")
"""`method.extraction_date`: what mem0's extraction prompt gives as "Today's date". `session` (our help, the
default): the session's date. `today`: the library's own, the machine's date when mem0 was imported (what
the harness's inputs met in the library; its prompt, and so the LLM cache, then changes every day)."""


def extraction_prompt(session_date: datetime | None, instructions: bool) -> str:
    """mem0's user-memory extraction prompt as the library ships it, with 'Today's date' set to the
    session's date instead of the machine's clock (which would also change the prompt, and miss the LLM
    cache, every day), or left as the library has it when `session_date` is None
    (`method.extraction_date=today`), and the harness's instructions appended when asked."""
    prompts = importlib.import_module("mem0.configs.prompts")
    text: str = prompts.USER_MEMORY_EXTRACTION_PROMPT
    if session_date is not None:
        text = _TODAY.sub(f"Today's date is {session_date.strftime('%Y-%m-%d')}.", text, count=1)
    if instructions:
        text = f"{text}\n{HARNESS_INSTRUCTIONS}"
    return text


@dataclass(frozen=True)
class LibraryEndpoint:
    """Where the library's OpenAI clients go: the bridge's route for this speaker."""

    base_url: str
    api_key: str
    model: str
    embedding_model: str
    embedding_dims: int


@dataclass(frozen=True)
class Speaker:
    """One speaker's mem0 instance: its user id and folder."""

    user_id: str
    folder: Path


def memory_config(speaker: Speaker, endpoint: LibraryEndpoint, graph: bool) -> dict[str, Any]:
    """mem0's MemoryConfig as a dict: openai LLM and embedder at the bridge, local qdrant, Kuzu."""
    config: dict[str, Any] = {
        "llm": {
            "provider": "openai",
            "config": {
                "model": endpoint.model,
                "api_key": endpoint.api_key,
                "openai_base_url": endpoint.base_url,
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": endpoint.embedding_model,
                "api_key": endpoint.api_key,
                "openai_base_url": endpoint.base_url,
                "embedding_dims": endpoint.embedding_dims,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": COLLECTION,
                "embedding_model_dims": endpoint.embedding_dims,
                "path": str(speaker.folder / "qdrant"),
                "on_disk": True,
            },
        },
        "history_db_path": str(speaker.folder / "history.db"),
        "version": "v1.1",
    }
    if graph:
        config["graph_store"] = {"provider": "kuzu", "config": {"db": str(speaker.folder / "graph.kuzu")}}
    return config


_TIE_MARGIN = 20
"""Extra candidates asked of the vector store, so ties at the `limit` boundary are broken by id."""
_seed: ContextVar[random.Random | None] = ContextVar("mem0bench_mem0_oss_ids", default=None)
_ids_lock = threading.Lock()


class _SeededUUID:
    """The `uuid` module as mem0's memory code sees it: inside `seeded(...)`, `uuid4()` comes from the
    add call's own generator (memory ids then repeat from one ingest to the next); elsewhere, the real one."""

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)

    @staticmethod
    def uuid4() -> uuid.UUID:
        rng = _seed.get()
        if rng is None:
            return uuid.uuid4()
        with _ids_lock:
            bits = rng.getrandbits(128)
        return uuid.UUID(int=bits, version=4)


@contextlib.contextmanager
def seeded(seed: str) -> Iterator[None]:
    """Memory ids made in this block (and the tasks and threads it starts) come from `seed`. AsyncMemory
    takes an ADD's id before its first await, in the order of the update reply, so the ids repeat."""
    main = importlib.import_module("mem0.memory.main")
    if getattr(main, "uuid", None) is uuid:
        main.uuid = _SeededUUID()  # type: ignore[attr-defined]
    token = _seed.set(random.Random(seed))
    try:
        yield
    finally:
        _seed.reset(token)


def open_memory(speaker: Speaker, endpoint: LibraryEndpoint, graph: bool, http_client: Any = None) -> Any:
    """A mem0 AsyncMemory for one speaker (blocking: opens files; call it in a worker thread). Its OpenAI
    clients send their requests through `http_client` when given (the bridge's, which names each request's
    scope), and close it with the memory."""
    mem0 = import_mem0()
    if graph:
        _import_graph_deps()
    if os.environ.get("OPENROUTER_API_KEY"):
        # mem0's OpenAI LLM sends every call to OpenRouter when this is set, past our bridge.
        raise ConfigurationError(
            "mem0_oss: unset OPENROUTER_API_KEY (mem0 would send its calls to OpenRouter)"
        )
    speaker.folder.mkdir(parents=True, exist_ok=True)
    memory = mem0.AsyncMemory.from_config(memory_config(speaker, endpoint, graph))
    _tune_clients(memory, http_client)
    memory.vector_store = _Serialized(memory.vector_store)
    if getattr(memory, "graph", None) is not None and hasattr(memory.graph, "kuzu_execute"):
        memory.graph.kuzu_execute = _locked(memory.graph.kuzu_execute)
    return memory


def _locked(fn: Any) -> Any:
    """`fn` one call at a time: a speaker's searches run at once, each in its own threads, and share one
    Kuzu connection (its query and the reading of its rows, which `kuzu_execute` does, go together)."""
    lock = threading.Lock()

    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return fn(*args, **kwargs)

    return call


class _Serialized:
    """The vector store with one call at a time: AsyncMemory searches and writes it from several worker
    threads at once within one `add`, and qdrant's local mode (numpy arrays + SQLite) has no lock.

    Its searches are also made repeatable: memories with equal scores (identical texts, common with the
    stand-in's replies) came back in qdrant's internal order, which depends on the order AsyncMemory's
    concurrent inserts happened to finish; the update prompt lists them in that order, so a re-ingest sent
    different prompts and missed the LLM cache. Here ties are broken by memory id (seeded: see `seeded`),
    over a wider candidate list, so the top `limit` no longer depends on insertion order."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.RLock()

    def search(self, *args: Any, limit: int = 5, **kwargs: Any) -> Any:
        with self._lock:
            found = list(self._inner.search(*args, limit=limit + _TIE_MARGIN, **kwargs) or [])
        found.sort(key=lambda hit: (-round(float(hit.score or 0.0), 6), str(hit.id)))
        return found[:limit]

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return call


def _tune_clients(memory: Any, http_client: Any) -> None:
    """No retries in the library's OpenAI clients (our LLMClient behind the bridge already retried), a
    generous timeout, `http_client` when given, and no `dimensions` parameter on embedding requests (the
    bridge's embedder has one size; mem0 only sends it because we tell it the size for the vector store)."""
    llms = [memory.llm]
    embedders = [memory.embedding_model]
    if getattr(memory, "graph", None) is not None:
        llms.append(memory.graph.llm)
        embedders.append(memory.graph.embedding_model)
    for holder in (*llms, *embedders):
        options: dict[str, Any] = {"max_retries": 0, "timeout": CLIENT_TIMEOUT_S}
        if http_client is not None:
            options["http_client"] = http_client
        holder.client = holder.client.with_options(**options)
    for embedder in embedders:
        if hasattr(embedder, "_pass_dimensions_to_api"):
            embedder._pass_dimensions_to_api = False


def close_memory(memory: Any) -> None:
    """Release the instance's files: the history database, the local qdrant lock, the Kuzu database."""
    for close in (
        lambda: memory.close(),
        lambda: memory.llm.client.close(),  # and the HTTP client every one of its clients shares
        lambda: memory.vector_store._inner.client.close(),
        lambda: memory.graph.graph.close() if getattr(memory, "graph", None) is not None else None,
        lambda: memory.graph.db.close() if getattr(memory, "graph", None) is not None else None,
    ):
        with contextlib.suppress(Exception):  # best effort: the files are ours to delete anyway
            close()
