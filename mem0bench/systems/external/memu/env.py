"""memU's own venv: memu-py 0.1.7 pins httpx<0.28 (the harness needs httpx 0.28+), and only its 0.1.x line
installs on Python 3.11 (0.2.x needs 3.12; 1.x needs 3.13 and builds with maturin from crates.io)."""

from __future__ import annotations

from pathlib import Path

from mem0bench.systems.external.own_env.venv import OwnVenv

__all__ = ["ENV"]

ENV = OwnVenv(
    system="memu",
    requirements=Path(__file__).with_name("requirements.txt"),
    packages=("memu-py", "openai"),
    what="memu-py 0.1.x",
)
