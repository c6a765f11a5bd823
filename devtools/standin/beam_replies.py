"""Stand-in replies for BEAM's rubric judge (a StandinServer.set_handler function).

A rubric item gets a JSON verdict whose score cycles over 1, 0.5, 0 by the prompt's length (so every scale
point occurs); the event-ordering alignment gets NO (each reply line stays itself). It knows the judge's
output contract, nothing of the questions (no score inflation); other requests get the stand-in's default.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JUDGE_HEAD", "SAME_HEAD", "beam_replies"]

JUDGE_HEAD = "You are checking one reply against ONE requirement"
SAME_HEAD = "You decide whether two snippets describe the same event"


def beam_replies(endpoint: str, body: dict[str, Any]) -> Any:
    if endpoint != "chat":
        return None
    text = " ".join(str(m.get("content") or "") for m in body.get("messages") or [])
    if text.lstrip().startswith(JUDGE_HEAD):
        return json.dumps({"score": (1.0, 0.5, 0.0)[len(text) % 3], "reason": "stand-in"})
    if text.startswith(SAME_HEAD):
        return "NO"
    return None
