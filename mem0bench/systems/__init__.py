"""Adapters of other memory systems behind the MemorySystem protocol, one package each."""
