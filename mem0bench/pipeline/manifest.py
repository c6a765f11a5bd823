"""What run.json says about a run beyond its config: its scope and its server (so that tables can tell
runs apart, and a cost can be read right)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mem0bench.data.model import Question
from mem0bench.llm.client import LLMClient
from mem0bench.pipeline.config_change import IGNORED, flatten, is_neutral
from mem0bench.pipeline.spec import ScopeSpec

__all__ = ["SHARD_KEY", "config_sha256", "result_config", "run_scope", "server_record", "shard_record"]

SHARD_KEY = "run.shard"


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


def result_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The result-changing settings of a saved config (dotted keys), without the shard: what every shard
    of one whole run shares (a shard's cache folder, concurrency or server may differ)."""
    return {
        k: v for k, v in flatten(config).items() if k != SHARD_KEY and k not in IGNORED and not is_neutral(k)
    }


def config_sha256(config: Mapping[str, Any]) -> str:
    text = json.dumps(result_config(config), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def shard_record(
    scope: ScopeSpec,
    saved_config: Mapping[str, Any],
    dataset_sha256: str,
    whole: dict[str, list[Question]],
    part: dict[str, list[Question]],
) -> dict[str, Any]:
    """run.json's `shard` (none for a whole run): which part of which whole this run is, so that `merge`
    can check that its shards make one whole run, each once."""
    if scope.shard is None:
        return {}
    k, n = scope.shard
    return {
        "shard": {
            "index": k,
            "of": n,
            "conversations": [sid for sid, qs in part.items() if qs],
            "whole": {
                "conversations": [sid for sid, qs in whole.items() if qs],
                "scope": run_scope(scope, whole),
                "dataset_sha256": dataset_sha256,
                "config_sha256": config_sha256(saved_config),
            },
        }
    }
