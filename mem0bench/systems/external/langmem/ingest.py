"""One LOCOMO message into LangMem, the way the Mem0 paper's harness fed it, in either of two ways.

The paper's harness (mem0's evaluation/src/langmem.py) kept one agent per speaker, each with its own
store under the namespace ("memories",), and sent every message of that speaker, in conversation order, as
one user message "<session date> | <speaker>: <text>" (LangMem has no timestamp field, so the date is in
the text). Here one InMemoryStore per conversation holds one namespace per speaker,
("memories", "speaker_a") and ("memories", "speaker_b"), and each message goes to its speaker's namespace:

* ``manager`` (default): LangMem's memory store manager (`create_memory_store_manager`) gets the one
  message; it searches the namespace for related memories (`query_limit`), then one trustcall extraction
  inserts, patches (and, with `enable_deletes`, removes) memories.
* ``agent`` (the paper's own setup): a LangGraph ReAct agent with LangMem's manage-memory and
  search-memory tools over the speaker's namespace, the namespace's memories searched into its system
  prompt, and a thread per speaker (the agent sees that speaker's earlier messages and its own replies);
  the threads are kept for the paper's retrieval (`ask`).
"""

from __future__ import annotations

from typing import Any

from mem0bench.systems.external.langmem.agents import final_reply, paper_agent

__all__ = ["AgentIngest", "ManagerIngest", "message_text"]


def message_text(date_text: str, speaker: str, text: str) -> str:
    """The paper's harness's message: f"{timestamp} | {speaker}: {text}"."""
    return f"{date_text} | {speaker}: {text}"


class ManagerIngest:
    """Each message through LangMem's memory store manager."""

    def __init__(
        self,
        lib: Any,
        *,
        model: Any,
        store: Any,
        query_limit: int,
        enable_deletes: bool,
        callbacks: list[Any],
    ) -> None:
        self.manager = lib.create_memory_store_manager(
            model,
            namespace=("memories", "{langgraph_user_id}"),
            store=store,
            query_limit=query_limit,
            enable_inserts=True,
            enable_deletes=enable_deletes,
        )
        self.callbacks = callbacks

    async def __call__(self, key: str, content: str) -> None:
        config = {"configurable": {"langgraph_user_id": key}, "callbacks": self.callbacks}
        await self.manager.ainvoke({"messages": [{"role": "user", "content": content}]}, config=config)


class AgentIngest:
    """Each message to a ReAct agent with LangMem's memory tools (one agent per speaker namespace)."""

    def __init__(
        self, lib: Any, *, model: Any, store: Any, thread: str, recursion_limit: int, callbacks: list[Any]
    ) -> None:
        self.lib, self.model, self.store = lib, model, store
        self.thread = thread
        self.recursion_limit = recursion_limit
        self.callbacks = callbacks
        self.checkpointer = lib.MemorySaver()
        self._agents: dict[str, Any] = {}

    def _agent(self, key: str) -> Any:
        if key not in self._agents:
            self._agents[key] = paper_agent(
                self.lib, model=self.model, store=self.store, namespace=("memories", key),
                checkpointer=self.checkpointer,
            )  # fmt: skip
        return self._agents[key]

    def _config(self, key: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"{self.thread}-{key}"}}

    async def threads(self) -> dict[str, list[dict[str, Any]]]:
        """Each speaker's thread as ingest left it (the messages, the agent's tool calls, the tools'
        answers and its replies), as LangChain's message dicts: the paper asked its questions on it."""
        out = {}
        for key, agent in sorted(self._agents.items()):
            state = await agent.aget_state(self._config(key))
            out[key] = self.lib.messages_to_dict(list(state.values.get("messages") or []))
        return out

    async def __call__(self, key: str, content: str) -> None:
        config = {
            **self._config(key),
            "callbacks": self.callbacks,
            "recursion_limit": self.recursion_limit,
        }
        result = await self._agent(key).ainvoke(
            {"messages": [{"role": "user", "content": content}]}, config=config
        )
        final_reply(result, self.recursion_limit)  # a message cut off at the step limit is a failed step
