"""memU (`memu`): its authors' LOCOMO harness on memu-py 0.1.7, in memU's own virtual environment behind
the HTTP system protocol."""

from mem0bench.systems.external.memu.system import MemU

__all__ = ["MemU"]
