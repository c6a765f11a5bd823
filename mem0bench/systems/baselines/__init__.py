"""Baseline memory systems on the same Protocol as Mem0: RAG over chunks, the full conversation, and the
two bounds of every table (oracle: the evidence turns only; no_memory: no context at all)."""

from mem0bench.systems.baselines.full_context import FullContext
from mem0bench.systems.baselines.no_memory import NoMemory
from mem0bench.systems.baselines.oracle import Oracle
from mem0bench.systems.baselines.rag import RAG, Chunk, chunk_conversation

__all__ = ["RAG", "Chunk", "FullContext", "NoMemory", "Oracle", "chunk_conversation"]
