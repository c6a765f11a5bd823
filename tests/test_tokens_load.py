"""tiktoken's encoding at start-up: checked from tiktoken's own cache file (no load), loaded on a thread or
at the first count, and the one-line error when the file is missing offline (what a run's import path
leaves out is tests/test_cli_startup.py's)."""

from __future__ import annotations

import pytest
import tiktoken.load
import tiktoken.registry
import tiktoken_ext.openai_public

from mem0bench import tokens
from mem0bench.common.errors import ConfigurationError


@pytest.fixture
def fresh(monkeypatch):
    """No encoding loaded in this process (ours or tiktoken's registry), and no download possible."""
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})

    def offline(blobpath: str) -> bytes:
        raise ConnectionError(f"no network for {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", offline)
    tokens.encoding.cache_clear()
    yield
    tokens.encoding.cache_clear()  # the next user loads it again from the real cache


def _real_blob() -> bytes:
    path = tokens.cached_blob()
    # No skip: every token count of the suite needs this file (.ci/run points TIKTOKEN_CACHE_DIR at it).
    assert path is not None and path.is_file(), f"tiktoken's cl100k_base file is not at {path}"
    return path.read_bytes()


def test_url_and_hash_are_tiktokens_own(monkeypatch):
    seen = {}

    def capture(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen.update(url=blobpath, sha256=expected_hash)
        return {}

    monkeypatch.setattr(tiktoken_ext.openai_public, "load_tiktoken_bpe", capture)
    tiktoken_ext.openai_public.cl100k_base()
    assert seen == {"url": tokens.BLOB_URL, "sha256": tokens.BLOB_SHA256}


@pytest.mark.parametrize("variable", ["TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"])
def test_cached_blob_is_the_file_tiktoken_reads(tmp_path, monkeypatch, fresh, variable):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    path = tokens.cached_blob()
    assert path is not None and path.parent == tmp_path
    path.write_bytes(b"marker")
    # tiktoken's own lookup (no expected hash: any content is taken) finds our file, offline.
    assert tiktoken.load.read_file_cached(tokens.BLOB_URL) == b"marker"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # caching off: no file to check
    assert tokens.cached_blob() is None


def test_an_intact_cached_file_is_checked_without_loading(tmp_path, monkeypatch, fresh):
    blob = _real_blob()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / tokens.cached_blob().name).write_bytes(blob)  # type: ignore[union-attr]
    tokens.check_encoding()
    assert not tokens.is_loaded() and not tiktoken.registry.ENCODINGS
    assert tokens.count_tokens("hello world") == 2  # the first count loads it, from that file, offline
    assert tokens.is_loaded()


@pytest.mark.parametrize("content", [None, b"not the encoding"])
def test_missing_or_damaged_file_offline_is_one_line(tmp_path, monkeypatch, fresh, content):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    if content is not None:
        (tmp_path / tokens.cached_blob().name).write_bytes(content)  # type: ignore[union-attr]
    with pytest.raises(ConfigurationError) as info:
        tokens.check_encoding()
    message = str(info.value)
    assert "\n" not in message and "cl100k_base" in message and f"TIKTOKEN_CACHE_DIR={tmp_path}" in message


def test_background_load_is_the_one_counts_use(tmp_path, monkeypatch, fresh):
    blob = _real_blob()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / tokens.cached_blob().name).write_bytes(blob)  # type: ignore[union-attr]
    tokens.load_in_background()
    # A count made while the thread may still be loading waits for it (tiktoken's lock): one encoding.
    assert tokens.count_tokens("hello world") == 2
    assert tokens.encoding() is tiktoken.registry.ENCODINGS["cl100k_base"]


def test_background_load_failure_is_left_to_the_first_count(tmp_path, monkeypatch, fresh):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    tokens.load_in_background()  # fails quietly on its thread
    with pytest.raises(ConfigurationError):
        tokens.count_tokens("hello")


def test_data_package_still_offers_the_statistics():
    import mem0bench.data as data

    assert callable(data.dataset_stats) and callable(data.format_stats_table)
    with pytest.raises(AttributeError):
        _ = data.no_such_name


def test_cached_blob_default_folder(monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    path = tokens.cached_blob()
    assert path is not None and path.parent.name == "data-gym-cache"
    assert path.is_absolute()
