"""The conformance check's own OpenAI-compatible stand-in: real HTTP on 127.0.0.1, inside the process.

Why one here and not the checkout's (devtools/standin): the package must not import checkout-only code, and a user
running `check-system` has no server and no key. This one is deliberately small: bag-of-words
embeddings (texts sharing words are similar), a chat reply of words from the prompt, structured replies
that satisfy the request's JSON schema with the simplest values, and two switches the checks need: `fail`
(every POST, PUT and DELETE answers HTTP 500, as a server in trouble) and `on_request` (called as each
request arrives, so a check can interrupt the system at a known call).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["CheckServer"]

DIMENSIONS = 256
_WORDS = re.compile(r"[a-z0-9']+")


def embedding(text: str) -> np.ndarray:
    """A unit vector of hashed words: deterministic, and texts sharing words point the same way."""
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    for word in _WORDS.findall(text.lower()):
        vector[int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % DIMENSIONS] += 1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        vector[0], norm = 1.0, 1.0
    return vector / norm


def simplest(schema: Any, words: list[str], root: Any = None) -> Any:
    """The simplest value that satisfies a JSON schema: required properties only, one array item, the
    first enum value, a few words of the prompt for a string. Local `$ref`s (`#/$defs/...`, pydantic's
    nested models) are followed from `root` (the whole schema)."""
    root = schema if root is None else root
    for _ in range(20):
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        schema = target
    if not isinstance(schema, dict):
        return " ".join(words[:3])
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return simplest(schema[key][0], words, root)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: simplest(props.get(name, {}), words, root) for name in schema.get("required", [])}
    if kind == "array":
        return [
            simplest(schema.get("items", {}), words, root)
            for _ in range(max(int(schema.get("minItems", 1)), 1))
        ]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return " ".join(words[:3]) or "ok"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-reply (the check cancels requests on purpose) is no error to print."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class CheckServer:
    """Start with `with CheckServer() as server:`; `server.base_url` ends in /v1, `server.url` is the root."""

    def __init__(self) -> None:
        self.fail = False
        self.on_request: Callable[[], None] | None = None
        self.requests = 0
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="check-standin", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def __enter__(self) -> CheckServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def arrived(self) -> None:
        with self._lock:
            self.requests += 1
        hook = self.on_request
        if hook is not None:
            hook()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silent
        return

    @property
    def owner(self) -> CheckServer:
        return self.server.owner  # type: ignore[attr-defined]

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})
        elif self.path.rstrip("/") == "/health":  # the failing phase plays a memory service too
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": {"message": f"no such path {self.path}"}})

    def _failed(self) -> bool:
        length = int(self.headers.get("Content-Length") or 0)
        self._body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        self.owner.arrived()
        if self.owner.fail:
            self._send(500, {"error": {"message": "the check's stand-in fails every call in this phase"}})
        return self.owner.fail

    def do_PUT(self) -> None:  # noqa: N802
        if not self._failed():
            self._send(404, {"error": {"message": "the stand-in is not a memory service"}})

    do_DELETE = do_PUT

    def do_POST(self) -> None:  # noqa: N802
        if self._failed():
            return
        body = self._body
        if self.path.endswith("/embeddings"):
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else list(texts or [])
            data = []
            for i, text in enumerate(texts):
                vector = embedding(str(text))
                value: Any = vector.tolist()
                if body.get("encoding_format") == "base64":
                    value = base64.b64encode(vector.astype("<f4").tobytes()).decode()
                data.append({"object": "embedding", "index": i, "embedding": value})
            tokens = sum(len(_WORDS.findall(str(t))) for t in texts)
            self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})  # fmt: skip
        elif self.path.endswith("/chat/completions"):
            self._send(200, _completion(body))
        else:
            self._send(404, {"error": {"message": f"no such path {self.path}"}})


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or [{}]
    prompt = " ".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
    words = _WORDS.findall(str((messages[-1] or {}).get("content") or "").lower())[-8:]
    message: dict[str, Any] = {"role": "assistant", "content": " ".join(words) or "ok"}
    tools = body.get("tools") or []
    response_format = body.get("response_format") or {}
    if tools:
        function = tools[0].get("function", {})
        arguments = json.dumps(simplest(function.get("parameters", {}), words))
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": function.get("name"), "arguments": arguments}}
        ]}  # fmt: skip
    elif response_format.get("type") in ("json_schema", "json_object"):
        schema = (
            (response_format.get("json_schema") or {}).get("schema") or response_format.get("schema") or {}
        )
        message["content"] = json.dumps(simplest(schema, words))
    completion = len(_WORDS.findall(json.dumps(message)))
    return {
        "id": "check-0", "object": "chat.completion", "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": len(_WORDS.findall(prompt)), "completion_tokens": completion},
    }  # fmt: skip
