"""LangMem (langmem's memory store manager over LangGraph's InMemoryStore) as a MemorySystem."""

from mem0bench.systems.external.langmem.system import LangMem

__all__ = ["LangMem"]
