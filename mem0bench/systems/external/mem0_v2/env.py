"""mem0 2.x's own venv: mem0ai 2.x cannot share an environment with the 1.0.11 that `mem0_oss` and its
graph variant need."""

from __future__ import annotations

from pathlib import Path

from mem0bench.systems.external.own_env.venv import OwnVenv

__all__ = ["ENV"]

ENV = OwnVenv(
    system="mem0_v2",
    requirements=Path(__file__).with_name("requirements.txt"),
    packages=("mem0ai", "qdrant-client", "openai"),
    what="mem0ai 2.x",
)
