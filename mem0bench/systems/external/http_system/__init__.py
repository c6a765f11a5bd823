"""A memory system that runs as an HTTP service, in any language: `+exp=http_system method.url=...`.

The JSON protocol is docs/http_system.openapi.yaml; examples/http_service/ is a reference service.
"""

from mem0bench.systems.external.http_system.system import HttpSystem

__all__ = ["HttpSystem"]
