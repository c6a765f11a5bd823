"""The LangMem, LangGraph and langchain-openai objects the adapter uses, imported lazily.

Everything the library sends goes to the harness's bridge: the chat model and the store's embedder are
langchain-openai clients whose base URL is the bridge's route for the conversation, with their own retries
off (the harness's client already retried) and the tracing/telemetry of LangChain off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import install_hint
from mem0bench.systems.external.support import quiet_telemetry

__all__ = ["Library", "load_library", "quiet_langchain"]

EXTRA = install_hint("langmem")
TIMEOUT_S = 600.0
"""The library clients' own timeout: generous, the harness's client (behind the bridge) times calls out."""

_QUIET = {
    # LangSmith tracing and LangChain's callbacks to a hosted tracer: off (nothing leaves the machine).
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_CALLBACKS_BACKGROUND": "false",
}


def quiet_langchain() -> None:
    """Turn LangChain's/LangSmith's tracing off before the library is imported (the shared switches plus
    LangChain's other spellings; a user's own explicit setting is left alone, as `quiet_telemetry` does)."""
    quiet_telemetry()
    for name, value in _QUIET.items():
        os.environ.setdefault(name, value)


@dataclass(frozen=True)
class Library:
    """The library entry points (modules are imported once, on first use)."""

    InMemoryStore: Any
    SearchOp: Any
    PutOp: Any
    Item: Any
    ChatOpenAI: Any
    OpenAIEmbeddings: Any
    create_memory_store_manager: Any
    create_manage_memory_tool: Any
    create_search_memory_tool: Any
    create_react_agent: Any
    MemorySaver: Any
    BaseCallbackHandler: Any
    messages_to_dict: Any
    messages_from_dict: Any

    def chat_model(self, *, base_url: str, api_key: str, model: str, temperature: float | None) -> Any:
        """A ChatOpenAI on the bridge: retries 0, a generous timeout, no streaming."""
        kwargs: dict[str, Any] = {}
        if temperature is not None:
            kwargs["temperature"] = temperature
        return self.ChatOpenAI(
            base_url=base_url, api_key=api_key, model=model, max_retries=0, timeout=TIMEOUT_S, **kwargs
        )

    def embeddings(self, *, base_url: str, api_key: str, model: str) -> Any:
        """OpenAIEmbeddings on the bridge. `check_embedding_ctx_length=False` makes it send the texts
        themselves (its default tokenizes them with tiktoken and sends token ids, which the bridge refuses
        and which would need the model's tokenizer offline)."""
        return self.OpenAIEmbeddings(
            base_url=base_url,
            api_key=api_key,
            model=model,
            max_retries=0,
            timeout=TIMEOUT_S,
            check_embedding_ctx_length=False,
            tiktoken_enabled=False,
        )

    def store(self, *, embeddings: Any, dims: int) -> Any:
        """LangGraph's InMemoryStore with a vector index over the whole value (the library's default
        `fields`, as the paper's harness used it)."""
        return self.InMemoryStore(index={"dims": dims, "embed": embeddings})


_LIBRARY: Library | None = None


def load_library() -> Library:
    """Import LangMem and its dependencies, or raise ConfigurationError naming the extra."""
    global _LIBRARY
    if _LIBRARY is not None:
        return _LIBRARY
    quiet_langchain()
    try:
        from langchain_core.callbacks import BaseCallbackHandler
        from langchain_core.messages import messages_from_dict, messages_to_dict
        from langchain_openai import ChatOpenAI, OpenAIEmbeddings
        from langgraph.checkpoint.memory import MemorySaver
        from langgraph.prebuilt import create_react_agent
        from langgraph.store.base import Item, PutOp, SearchOp
        from langgraph.store.memory import InMemoryStore
        from langmem import create_manage_memory_tool, create_memory_store_manager, create_search_memory_tool
    except ImportError as exc:
        raise ConfigurationError(
            f"method langmem needs LangMem and its dependencies ({exc.name or exc}): {EXTRA}"
        ) from exc
    from mem0bench.systems.external.langmem import determinism

    determinism.install()
    _LIBRARY = Library(
        InMemoryStore=InMemoryStore,
        SearchOp=SearchOp,
        PutOp=PutOp,
        Item=Item,
        ChatOpenAI=ChatOpenAI,
        OpenAIEmbeddings=OpenAIEmbeddings,
        create_memory_store_manager=create_memory_store_manager,
        create_manage_memory_tool=create_manage_memory_tool,
        create_search_memory_tool=create_search_memory_tool,
        create_react_agent=create_react_agent,
        MemorySaver=MemorySaver,
        BaseCallbackHandler=BaseCallbackHandler,
        messages_to_dict=messages_to_dict,
        messages_from_dict=messages_from_dict,
    )
    return _LIBRARY
