"""Stand-in replies in LangMem's own formats (for `StandinServer.set_handler`), so a test exercises the
adapter's whole path, not the stand-in's ignorance of trustcall.

The default stand-in answers a tool request with the first tool and random schema-valid arguments. For
trustcall's update step (tools PatchDoc + Memory) that is a PatchDoc naming a random json_doc_id, which
trustcall rejects and drops (tests/test_system_langmem.py relies on that to test failure counting). This
handler answers in the library's format instead, deterministically from the request: a PatchDoc that
replaces an existing memory's content (its id taken from the `<instance id=...>` block trustcall sent), or
a new Memory; for the memory-tool agent, a `manage_memory` create call, then a plain reply once the tool
has answered, and for a question (the paper's retrieval) a `search_memory` call, then a reply made of words
of what the search returned. The texts are words of the request, as the stand-in's own; nothing here knows the questions.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from devtools.standin.server import Text, ToolCall

__all__ = ["reply"]

_INSTANCE = re.compile(r'<instance id=(\S+) schema_type="')
_SESSION = re.compile(r"<session_[^>]*>\s*(.*?)\s*</session_", re.S)
_WORD = re.compile(r"[A-Za-z0-9']+")
_MESSAGE = re.compile(r"[^|\n]+ \| [^:\n]+: ")
"""A conversation message as the adapter sends it, '<session date> | <speaker>: <text>' (else a question)."""


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _words(text: str, digest: str, n: int = 8) -> str:
    words = _WORD.findall(text) or ["ok"]
    seed = int(digest[:8], 16)
    return " ".join(words[(seed + 7 * i) % len(words)] for i in range(n))


def reply(endpoint: str, body: dict[str, Any]) -> Any:
    """The handler: a reply for LangMem's tool requests, None (the stand-in's default) for the rest."""
    if endpoint != "chat":
        return None
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    messages = body.get("messages") or []
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    if "manage_memory" in names:  # the memory-tool agent
        answered = bool(messages) and isinstance(messages[-1], dict) and messages[-1].get("role") == "tool"
        users = [_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        asked = users[-1] if users else ""
        if _MESSAGE.match(asked):  # a conversation message: one create, then an acknowledgement
            if answered:
                return Text("Noted.")
            return ToolCall({"content": _words(asked, digest), "action": "create"}, name="manage_memory")
        if answered:  # a question, after the search: a reply made of words of what the search found
            return Text(_words(_text(messages[-1]), digest))
        return ToolCall({"query": asked}, name="search_memory")
    if "Memory" not in names:
        return None
    prompt = "\n".join(_text(m) for m in messages)
    session = _SESSION.search(prompt)
    source = session.group(1) if session else prompt
    ids = _INSTANCE.findall(prompt)
    if "PatchDoc" in names and ids and int(digest[8:10], 16) % 3 == 0:
        target = ids[int(digest[10:14], 16) % len(ids)]
        patch = {"op": "replace", "path": "/content", "value": _words(source, digest)}
        args = {"json_doc_id": target, "planned_edits": "update the memory", "patches": [patch]}
        return ToolCall(args, name="PatchDoc")
    return ToolCall({"content": _words(source, digest)}, name="Memory")
