"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# ---- LOCOMO data ----------------------------------------------------------------------------------
# The repository sits at X/<repo>; the shared data folder at X/shared (also in CI, beside the clone).
REPO_DIR = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_DIR.parent / "shared"


def locomo_candidates() -> tuple[Path, ...]:
    """Where the realdata tests look for the released locomo10.json: the clone's data/, the shared folder
    beside it, and the per-user data folder that `python -m mem0bench data download` (the advice the tests
    give) and every run use, so following the advice fixes the failure."""
    from mem0bench.paths import data_home

    return (
        REPO_DIR / "data" / "locomo10.json",
        SHARED_DIR / "data" / "locomo10.json",
        data_home() / "locomo10.json",
    )


# Our own synthetic LOCOMO-format file: every category, captions, odd turns, empty-session date keys.
LOCOMO_MINI = REPO_DIR / "tests" / "data" / "locomo_mini.json"

# No test reaches the Hugging Face hub: the suites' files are read from the committed mini files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# tiktoken cannot download its encodings here: use the shared cache unless one is configured.
if (SHARED_DIR / "tiktoken").is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED_DIR / "tiktoken"))


@pytest.fixture(scope="session")
def locomo_mini() -> Path:
    """The committed synthetic fixture: what end-to-end and reliability tests run on."""
    return LOCOMO_MINI


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """The real released locomo10.json, for the exact-statistics tests (marked `realdata`).

    Absent, the test fails with one line saying where to put the file: it never skips."""
    candidates = locomo_candidates()
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    pytest.fail(
        "the real LOCOMO file is needed by this realdata test and was found at none of "
        f"{', '.join(map(str, candidates))}: run `python -m mem0bench data download`, "
        "or deselect these tests with -m 'not realdata'",
        pytrace=False,
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Tests on the real file are marked `realdata` by the fixture they use, so they can be selected.
    for item in items:
        if "locomo_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.realdata)


# ---- the OpenAI-compatible stand-in server (mem0bench.llm tests) -----------------------------------
@pytest.fixture
def standin():
    """A running stand-in OpenAI server on 127.0.0.1 (fresh per test); `.base_url` ends in /v1."""
    from devtools.standin.server import StandinServer

    with StandinServer() as server:
        yield server


# ---- a real FalkorDB server, one per test session (Mem0^g's graph database backend) ----------------
from tests.falkordb_server import falkordb_server  # noqa: E402,F401 - registers the session fixture
