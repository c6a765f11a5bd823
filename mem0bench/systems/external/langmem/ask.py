"""The Mem0 paper's LangMem retrieval: each speaker's agent is asked the question; its reply is the context.

mem0's harness (evaluation/src/langmem.py, `search_memory`) invoked each speaker's agent with the question
as a new user message on the thread ingest had used, and gave its answer prompt the two agents' last
messages. Here the agent (`agents.paper_agent`, the one ingest used) gets the speaker's thread as ingest
left it plus the question, and a copy of the conversation's store: the manage tool stays offered, as in
the paper, but what it writes while answering goes with the copy. Every question so sees the memory ingest
built, whatever order the questions run in, and a rerun repeats its requests exactly; the paper's
questions instead piled up on the thread and the store (a departure, docs/systems/langmem.md).
"""

from __future__ import annotations

from typing import Any

from mem0bench.systems.external.langmem.agents import final_reply, paper_agent

__all__ = ["ask_agent", "store_copy"]


def store_copy(lib: Any, store: Any) -> Any:
    """A new InMemoryStore (same embedder) holding `store`'s items and vectors; writes to it stay there."""
    copy = lib.store(embeddings=store.embeddings, dims=store.index_config["dims"])
    for namespace, items in store._data.items():
        copy._data[namespace] = dict(items)
    for namespace, by_key in store._vectors.items():
        for key, by_path in by_key.items():
            copy._vectors[namespace][key] = dict(by_path)
    return copy


async def ask_agent(
    lib: Any,
    *,
    model: Any,
    store: Any,
    namespace: tuple[str, ...],
    thread: list[dict[str, Any]],
    question: str,
    recursion_limit: int,
    callbacks: list[Any],
) -> str:
    """The agent's reply to `question` after `thread` (LangChain message dicts), on a copy of `store`
    (StepLimitReached when LangGraph cut it off)."""
    agent = paper_agent(
        lib, model=model, store=store_copy(lib, store), namespace=namespace, checkpointer=None
    )
    messages = [*lib.messages_from_dict(thread), {"role": "user", "content": question}]
    config = {"callbacks": callbacks, "recursion_limit": recursion_limit}
    result = await agent.ainvoke({"messages": messages}, config=config)
    return final_reply(result, recursion_limit)
