"""cognee's own venv: cognee 1.6.x pins openai 2.x, and older pandas, SQLAlchemy and huggingface_hub than
the harness's environment holds (installed together, pip would downgrade them)."""

from __future__ import annotations

from pathlib import Path

from mem0bench.systems.external.own_env.venv import OwnVenv

__all__ = ["ENV"]

ENV = OwnVenv(
    system="cognee",
    requirements=Path(__file__).with_name("requirements.txt"),
    packages=("cognee", "litellm", "instructor", "openai", "ladybug", "lancedb"),
    what="cognee 1.6.x",
)
