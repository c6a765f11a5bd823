"""Baseline memory systems on the same Protocol as Mem0: RAG over chunks, and the full conversation."""

from mem0bench.systems.baselines.full_context import FullContext
from mem0bench.systems.baselines.rag import RAG, Chunk, chunk_conversation

__all__ = ["RAG", "Chunk", "FullContext", "chunk_conversation"]
