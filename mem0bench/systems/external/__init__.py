"""Adapters for other teams' memory systems (third-party libraries), behind the same MemorySystem protocol.

One subpackage per system; each imports its library lazily (an optional extra), so the package imports
without any of them. `bridge` serves the libraries' LLM calls through the harness's client; `support`
holds what every adapter needs besides (log capture, telemetry switches, a missing extra named).
"""
