"""Baseline memory systems on the same Protocol as Mem0: RAG over chunks, and the full conversation."""

from baselines.full_context import FullContext
from baselines.rag import RAG, Chunk, chunk_conversation

__all__ = ["RAG", "Chunk", "FullContext", "chunk_conversation"]
