"""A crash-safe response cache on SQLite: paid-for LLM replies and embeddings are never bought twice.

* Chat: `key -> JSON of the raw reply` (message content, tool calls as name + arguments string, finish
  reason, usage). The RAW reply of every HTTP 200 is stored before it is validated, so a malformed reply
  that was paid for is not re-bought after a crash; validation and repair rerun on the cached raw.
* Embeddings: `sha256(model + "\\0" + text) -> float32 bytes`.

WAL mode with `synchronous=NORMAL` and a commit per put: a SIGKILL loses nothing that was put (only a
power loss can lose the last transactions). One connection shared by threads behind a `threading.Lock`.
The API key is never part of a key or a value. The replies are the conversations' content: the cache's
folder is 0700 and its files (the database, its -wal and -shm) 0600, whatever the umask.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mem0bench.common.private import private_dir, private_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL
);
"""


def canonical_json(payload: Mapping[str, Any]) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(payload: Mapping[str, Any], salt: str = "") -> str:
    """The cache key of a request: sha256 of its canonical JSON plus the salt.

    `payload` is the whole request body as sent (model, messages, tools, tool_choice, response_format,
    temperature, seed, max_tokens); `salt` separates otherwise identical calls (e.g. judge run 3 of 10).
    """
    h = hashlib.sha256(canonical_json(payload).encode("utf-8"))
    h.update(b"\0")
    h.update(salt.encode("utf-8"))
    return h.hexdigest()


def _private_database(path: Path) -> None:
    """The cache's folder 0700 and its database 0600, made so before SQLite opens it: SQLite gives the
    -wal and -shm files it makes the database's mode. Files made before this rule are tightened."""
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):  # an empty file is a new database to SQLite
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        private_file(path.with_name(name))


def embedding_key(model: str, text: str) -> str:
    """sha256(model + "\\0" + text)."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


_BUSY_TIMEOUT_S = 30.0


def _while_busy(step: Callable[[], object]) -> None:
    """Run a setup step again while SQLite refuses it as locked without calling its busy handler (the
    switch of a new file to WAL, which parallel runs sharing one cache make at once), for at most
    `_BUSY_TIMEOUT_S`."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class ResponseCache:
    """SQLite-backed cache of raw chat replies and embedding vectors. Safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            _private_database(self.path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(path), check_same_thread=False, isolation_level=None, timeout=_BUSY_TIMEOUT_S
        )
        with self._lock:  # `timeout` above is SQLite's busy timeout: every lock below waits that long
            _while_busy(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
            self._conn.execute("PRAGMA synchronous=NORMAL")
            # One write transaction taken at once (IMMEDIATE, which waits for the lock): processes opening
            # a new cache together would otherwise each read the schema, then deadlock upgrading to write,
            # which SQLite answers with "database is locked" at once.
            self._conn.executescript("BEGIN IMMEDIATE;" + _SCHEMA + "COMMIT;")
        self.hits = 0
        self.misses = 0

    # ---- chat ------------------------------------------------------------------------------------
    def get_chat(self, key: str) -> dict[str, Any] | None:
        """The raw reply stored under `key`, or None."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM chat WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put_chat(self, key: str, raw: Mapping[str, Any]) -> None:
        """Store (or overwrite) a raw reply; committed before returning."""
        value = json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO chat (key, value) VALUES (?, ?)", (key, value))

    # ---- embeddings ------------------------------------------------------------------------------
    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Cached vectors for `texts` (None where missing), in input order."""
        if not texts:
            return []
        keys = [embedding_key(model, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # stay under SQLite's variable limit
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, dim, blob in self._conn.execute(
                    f"SELECT key, dim, vector FROM embeddings WHERE key IN ({marks})", chunk
                ):
                    found[key] = np.frombuffer(blob, dtype=np.float32, count=dim)
        out = [found.get(k) for k in keys]
        n_hit = sum(v is not None for v in out)
        self.hits += n_hit
        self.misses += len(out) - n_hit
        return out

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray | Sequence[np.ndarray]) -> None:
        """Store one float32 vector per text, in one committed transaction."""
        if len(texts) != len(vectors):
            raise ValueError(f"put_many: {len(texts)} texts but {len(vectors)} vectors")
        rows = []
        for text, vec in zip(texts, vectors, strict=True):
            arr = np.ascontiguousarray(vec, dtype=np.float32).reshape(-1)
            rows.append((embedding_key(model, text), int(arr.shape[0]), arr.tobytes()))
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (key, dim, vector) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # ---- housekeeping ----------------------------------------------------------------------------
    def close(self) -> None:
        """Checkpoint the WAL and close the connection (idempotent)."""
        with self._lock:
            if self._conn is None:
                return
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()
            self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
