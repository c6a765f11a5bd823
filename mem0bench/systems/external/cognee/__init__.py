"""cognee (1.6.x), in its own virtual environment behind the HTTP system protocol."""

from mem0bench.systems.external.cognee.system import Cognee

__all__ = ["Cognee"]
