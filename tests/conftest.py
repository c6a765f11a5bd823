"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# ---- LOCOMO data (mem0bench.data tests) ------------------------------------------------------------
# The repository sits at X/<repo>; the shared data folder at X/shared (also in CI, beside the clone).
SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"
LOCOMO_PATH = SHARED_DIR / "data" / "locomo10.json"

# tiktoken cannot download its encodings here: use the shared cache unless one is configured.
if (SHARED_DIR / "tiktoken").is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED_DIR / "tiktoken"))


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """The real released locomo10.json; tests that use it are skipped when it is absent."""
    if not LOCOMO_PATH.is_file():
        pytest.skip(f"real LOCOMO file not found at {LOCOMO_PATH} (expected ../shared/data beside the repo)")
    return LOCOMO_PATH


# ---- the OpenAI-compatible stand-in server (mem0bench.llm tests) -----------------------------------
@pytest.fixture
def standin():
    """A running stand-in OpenAI server on 127.0.0.1 (fresh per test); `.base_url` ends in /v1."""
    from tests.standin.server import StandinServer

    with StandinServer() as server:
        yield server


# ---- a real FalkorDB server, one per test session (Mem0^g's graph database backend) ----------------
from tests.falkordb_server import falkordb_server  # noqa: E402,F401 - registers the session fixture
