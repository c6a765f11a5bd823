"""Stand-in replies in mem0's own free-text JSON formats (a StandinServer.set_handler function).

mem0 asks for its facts and update decisions with `response_format: json_object` and no schema, and parses
the content itself: the stand-in's default (an empty object) is not mem0's format. This handler answers
those two prompts in mem0's format with the same kind of content the stand-in gives every system: words of
the request, drawn deterministically from a hash of the body. It knows mem0's output contract, nothing of
LOCOMO or of the questions (no score inflation). Graph memory's tool calls are left to the stand-in's
schema-driven default.

* fact extraction (mem0's "Personal Information Organizer" prompt): {"facts": [0..3 phrases of the input]}
* update (the "smart memory manager" prompt): one decision per new fact, ADD (new id) mostly, sometimes
  UPDATE / DELETE / NONE of a memory id the prompt showed.
* `malformed=True`: both answer with text that is not JSON (what a weak model sometimes does), so mem0
  logs and swallows the error.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections.abc import Callable
from typing import Any

from devtools.standin.server import Text, _last_user_words, _phrase

__all__ = ["mem0_handler"]

EXTRACTION_MARK = "Personal Information Organizer"
UPDATE_MARK = "smart memory manager"
_BLOCK = re.compile(r"```\s*(.*?)\s*```", re.S)


def _contents(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [] if isinstance(m, dict))


def _rng(body: dict[str, Any]) -> random.Random:
    return random.Random(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())


def _facts(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    messages = body.get("messages") or []
    text = str(messages[-1].get("content") or "") if messages else ""
    words = re.findall(r"[A-Za-z0-9']+", text.replace("Input:", "")) or ["nothing"]
    return {"facts": [_phrase(rng, words, 3, 7) for _ in range(rng.randint(0, 3))]}


def _update(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    text = _contents(body)
    tail = text.split("The new retrieved facts are mentioned in the triple backticks", 1)
    head_blocks = _BLOCK.findall(tail[0]) if "Below is the current content of my memory" in tail[0] else []
    old: list[dict[str, Any]] = []
    if head_blocks:
        try:
            parsed = ast.literal_eval(head_blocks[-1])
            old = [m for m in parsed if isinstance(m, dict)]
        except (ValueError, SyntaxError):
            old = []
    facts: list[str] = []
    fact_blocks = _BLOCK.findall(tail[1]) if len(tail) > 1 else []
    if fact_blocks:
        try:
            facts = [str(f) for f in ast.literal_eval(fact_blocks[0])]
        except (ValueError, SyntaxError):
            facts = []
    decisions = []
    for n, fact in enumerate(facts):
        draw = rng.random()
        if old and draw < 0.15:
            target = old[rng.randrange(len(old))]
            decisions.append(
                {"id": target["id"], "text": fact, "event": "UPDATE", "old_memory": target["text"]}
            )
        elif old and draw < 0.2:
            target = old[rng.randrange(len(old))]
            decisions.append({"id": target["id"], "text": target["text"], "event": "DELETE"})
        elif old and draw < 0.3:
            target = old[rng.randrange(len(old))]
            decisions.append({"id": target["id"], "text": target["text"], "event": "NONE"})
        else:
            decisions.append({"id": str(len(old) + n), "text": fact, "event": "ADD"})
    return {"memory": decisions}


def mem0_handler(*, malformed: bool = False) -> Callable[[str, dict[str, Any]], Any]:
    """A set_handler function for mem0's two free-text JSON prompts; None (the default) for the rest."""

    def handle(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint != "chat" or body.get("tools"):
            return None
        fmt = body.get("response_format") or {}
        if not (isinstance(fmt, dict) and fmt.get("type") == "json_object" and "schema" not in fmt):
            return None
        text = _contents(body)
        if EXTRACTION_MARK in text:
            reply = _facts(body, _rng(body))
        elif UPDATE_MARK in text:
            reply = _update(body, _rng(body))
        else:
            return None
        if malformed:
            words = _last_user_words(body.get("messages") or [])
            return Text("Sure! " + " ".join(words[:8]))
        return Text(json.dumps(reply))

    return handle
