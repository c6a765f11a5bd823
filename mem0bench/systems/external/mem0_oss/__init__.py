"""mem0's own open-source library (`mem0ai`) behind the MemorySystem protocol: `mem0_oss` and, with its
embedded Kuzu graph store, `mem0_oss_graph`. The library is imported lazily (extra `mem0_oss`)."""

from mem0bench.systems.external.mem0_oss.system import Mem0OSS

__all__ = ["Mem0OSS"]
