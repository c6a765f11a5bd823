"""A-Mem (agentic memory, Xu et al. 2025) behind the MemorySystem protocol: `+exp=amem`.

The library (`a-mem` on PyPI) is imported only when a conversation is ingested or retrieved, so this
package imports without the `amem` extra."""

from mem0bench.systems.external.amem.system import AMem

__all__ = ["AMem"]
