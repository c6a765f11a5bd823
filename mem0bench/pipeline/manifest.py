"""What run.json says about a run beyond its config: its scope and its server (so that tables can tell
runs apart, and a cost can be read right)."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from omegaconf import DictConfig

from mem0bench.data.model import Question
from mem0bench.llm.client import LLMClient

__all__ = ["run_scope", "server_record"]


def run_scope(cfg: DictConfig, questions: dict[str, list[Question]]) -> dict[str, Any]:
    """What run.json says about the run's scope, so that tables can tell runs apart: conversations and
    questions, how they were chosen, and the answer key the answers are scored against."""
    key = cfg.dataset.get("answer_key")
    key_sha = None
    if key:
        with contextlib.suppress(OSError):
            key_sha = hashlib.sha256(Path(str(key)).read_bytes()).hexdigest()
    return {
        "conversations": len(questions),
        "questions": sum(len(qs) for qs in questions.values()),
        "include_adversarial": bool(cfg.eval.include_adversarial),
        "max_questions": cfg.eval.max_questions,
        "sample": str(cfg.eval.get("sample", "first")),
        "seed": cfg.eval.get("seed", 0),
        "answer_key": {"path": str(key), "sha256": key_sha, "mode": str(cfg.dataset.get("answer_key_mode"))}
        if key
        else None,
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
