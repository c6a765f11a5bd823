"""Stand-in replies in A-Mem's own formats (a StandinServer.set_handler function).

The analysis prompt gets every field filled with words of the turn, the evolution prompt links to the
neighbours the prompt itself shows (so links are made and followed). It knows A-Mem's output contract,
nothing of LOCOMO or of the questions (no score inflation); other requests get the stand-in's default.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["amem_replies", "prompt_text"]

_MEMORY_ID = re.compile(r"memory_id:(\S+)\t")


def prompt_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])


def amem_replies(endpoint: str, body: dict[str, Any]) -> Any:
    """A-Mem's expected formats: analysis with every field, evolution linking to the shown neighbours."""
    if endpoint != "chat":
        return None
    prompt = prompt_text(body)
    if "memory evolution agent" in prompt:
        ids = _MEMORY_ID.findall(prompt)
        return {
            "should_evolve": True,
            "actions": ["strengthen", "update_neighbor"],
            "suggested_connections": ids[:2],
            "tags_to_update": ["conversation", "stand-in"],
            "new_context_neighborhood": ["updated context"] * len(ids),
            "new_tags_neighborhood": [["updated"]] * len(ids),
        }
    if "structured analysis" in prompt:
        words = re.findall(r"[A-Za-z]{4,}", prompt.split("Content for analysis:", 1)[-1])[:3] or ["none"]
        return {"keywords": words, "context": "A turn of a conversation.", "tags": ["chat", "turn", "test"]}
    return None
