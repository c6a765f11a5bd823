"""mem0ai 2.x (`mem0_v2`), in its own virtual environment behind the HTTP system protocol."""

from mem0bench.systems.external.mem0_v2.system import Mem0V2

__all__ = ["Mem0V2"]
