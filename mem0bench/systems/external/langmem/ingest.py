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
  prompt, and a thread per speaker (the agent sees that speaker's earlier messages and its own replies).
"""

from __future__ import annotations

from typing import Any

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
            namespace = ("memories", key)
            store = self.store

            async def prompt(state: Any) -> list[Any]:
                # The paper's prompt: the namespace's memories most similar to the last message, as the
                # store returns them, in the system message.
                messages = state["messages"]
                memories = await store.asearch(namespace, query=messages[-1].content)
                system = f"You are a helpful assistant.\n\n## Memories\n<memories>\n{memories}\n</memories>\n"
                return [{"role": "system", "content": system}, *messages]

            self._agents[key] = self.lib.create_react_agent(
                self.model,
                prompt=prompt,
                tools=[
                    self.lib.create_manage_memory_tool(namespace=namespace),
                    self.lib.create_search_memory_tool(namespace=namespace),
                ],
                store=store,
                checkpointer=self.checkpointer,
            )
        return self._agents[key]

    async def __call__(self, key: str, content: str) -> None:
        config = {
            "configurable": {"thread_id": f"{self.thread}-{key}"},
            "callbacks": self.callbacks,
            "recursion_limit": self.recursion_limit,
        }
        await self._agent(key).ainvoke({"messages": [{"role": "user", "content": content}]}, config=config)
