"""Hindsight (vectorize-io's hindsight-api-slim) in its own venv, behind the HTTP system protocol."""

from mem0bench.systems.external.hindsight.system import Hindsight

__all__ = ["Hindsight"]
