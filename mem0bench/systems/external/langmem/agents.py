"""The Mem0 paper's LangMem agent: one LangGraph ReAct agent per speaker namespace, with LangMem's
manage-memory and search-memory tools over that namespace and, in its system message, the namespace's
memories nearest to the last message (mem0's evaluation/src/langmem.py: `prompt`, `LangMem.__init__`).

Ingest (`ingest.AgentIngest`) and the paper's retrieval (`ask.AgentAsk`) build the same agent, so the
question is put to the agent exactly as the messages were.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STEP_LIMIT_REPLY", "StepLimitReached", "final_reply", "paper_agent", "reply_text"]

STEP_LIMIT_REPLY = "Sorry, need more steps to process this request."
"""What LangGraph's `create_react_agent` puts in place of the model's reply when the model still calls tools
with fewer than two steps left before the recursion limit: no exception, a reply that reads like an answer
(langgraph.prebuilt.chat_agent_executor)."""


class StepLimitReached(RuntimeError):
    """The agent was still calling tools when its step limit ran out (LangGraph answered for it)."""


def paper_agent(lib: Any, *, model: Any, store: Any, namespace: tuple[str, ...], checkpointer: Any) -> Any:
    """`create_react_agent` with the paper's prompt and the two memory tools over `namespace`
    (`checkpointer` None: the caller passes the thread itself)."""

    async def prompt(state: Any) -> list[Any]:
        # The paper's prompt: the namespace's memories most similar to the last message (the store's default
        # limit, 10), as the store returns them, in the system message.
        messages = state["messages"]
        memories = await store.asearch(namespace, query=reply_text(messages[-1]))
        system = f"You are a helpful assistant.\n\n## Memories\n<memories>\n{memories}\n</memories>\n"
        return [{"role": "system", "content": system}, *messages]

    return lib.create_react_agent(
        model,
        prompt=prompt,
        tools=[
            lib.create_manage_memory_tool(namespace=namespace),
            lib.create_search_memory_tool(namespace=namespace),
        ],
        store=store,
        checkpointer=checkpointer,
    )


def reply_text(message: Any) -> str:
    """A LangChain message's text: its string content, or the text parts of a content list."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content or []]
    return "".join(p for p in parts if isinstance(p, str))


def final_reply(result: Any, recursion_limit: int) -> str:
    """The text of the agent's last message, or StepLimitReached when that is LangGraph's stand-in reply
    (which would otherwise pass as the agent's answer)."""
    text = reply_text(result["messages"][-1]).strip()
    if text == STEP_LIMIT_REPLY:
        raise StepLimitReached(
            f"the agent still called tools at its step limit (method.agent_recursion_limit={recursion_limit})"
        )
    return text
