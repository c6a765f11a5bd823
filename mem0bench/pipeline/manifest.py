"""What run.json says about a run beyond its config: its scope and its server (so that tables can tell
runs apart, and a cost can be read right)."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mem0bench.data.model import Question
from mem0bench.llm.client import LLMClient
from mem0bench.pipeline.spec import ScopeSpec

__all__ = ["run_scope", "server_record"]


def run_scope(scope: ScopeSpec, questions: dict[str, list[Question]]) -> dict[str, Any]:
    """What run.json says about the run's scope, so that tables can tell runs apart: conversations and
    questions, how they were chosen, and the answer key the answers are scored against."""
    key = scope.answer_key
    key_sha = None
    if key:
        with contextlib.suppress(OSError):
            key_sha = hashlib.sha256(Path(str(key)).read_bytes()).hexdigest()
    return {
        "conversations": len(questions),
        "questions": sum(len(qs) for qs in questions.values()),
        "include_adversarial": scope.include_adversarial,
        "max_questions": scope.max_questions,
        "sample": scope.sample,
        "seed": scope.seed,
        "answer_key": {"path": str(key), "sha256": key_sha, "mode": scope.answer_key_mode} if key else None,
    }


def server_record(client: LLMClient) -> dict[str, Any]:
    """What run.json says about the server: its base URL (no credentials) and whether it was priced."""
    parts = urlsplit(client.base_url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return {
        "base_url": urlunsplit((parts.scheme, netloc, parts.path, "", "")),
        "priced": not client.ledger.free,
    }
