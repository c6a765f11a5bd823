"""A reference memory service for `+exp=http_system` (docs/http_system.openapi.yaml), standard library only.

It keeps every turn of every session in memory (and in `--store FILE` when given, so a restart keeps
them) and answers a search with the turns sharing the most words with the question. No LLM: a real
service would call its own models and may report their usage in each reply.

    python examples/http_service/service.py --port 8765
    python -m mem0bench run +exp=http_system method.url=http://127.0.0.1:8765
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

WORDS = re.compile(r"[a-z0-9']{3,}")


class Memory:
    """conversation id -> session number -> the session as sent (PUT replaces: adding twice is harmless)."""

    def __init__(self, store: Path | None) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.conversations: dict[str, dict[str, Any]] = {}
        if store is not None and store.exists():
            self.conversations = json.loads(store.read_text(encoding="utf-8"))

    def _persist(self) -> None:
        if self.store is not None:
            tmp = self.store.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.conversations), encoding="utf-8")
            tmp.replace(self.store)

    def put_session(self, conversation: str, session: str, body: dict[str, Any]) -> None:
        with self.lock:
            self.conversations.setdefault(conversation, {})[session] = body
            self._persist()

    def delete(self, conversation: str) -> None:
        with self.lock:
            self.conversations.pop(conversation, None)
            self._persist()

    def search(self, conversation: str, question: str, top_k: int) -> list[dict[str, Any]]:
        asked = set(WORDS.findall(question.lower()))
        scored = []
        with self.lock:
            sessions = self.conversations.get(conversation, {})
            for session in sorted(sessions.values(), key=lambda s: s.get("date_iso", "")):
                for turn in session["turns"]:
                    text = f"{turn['speaker']}: {turn['text']}"
                    score = len(asked & set(WORDS.findall(text.lower())))
                    if score:
                        item = {
                            "text": text,
                            "date": session["date"],
                            "score": score,
                            "turn_ids": [turn["turn_id"]],
                        }
                        scored.append(item)
        return sorted(scored, key=lambda item: -item["score"])[:top_k]


class Handler(BaseHTTPRequestHandler):
    server: Service

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
        if self.server.verbose:
            super().log_message(format, *args)

    def _reply(self, status: int, body: Any = None) -> None:
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _parts(self) -> list[str]:
        return [unquote(p) for p in self.path.split("?", 1)[0].strip("/").split("/")]

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self._parts() == ["health"]:
            self._reply(200, {"status": "ok", "name": "keyword reference service", "version": "1"})
        else:
            self._reply(404, {"error": f"no such path: {self.path}"})

    def do_PUT(self) -> None:  # noqa: N802
        parts = self._parts()
        if len(parts) != 4 or parts[0] != "conversations" or parts[2] != "sessions":
            return self._reply(404, {"error": f"no such path: {self.path}"})
        body = self._body()
        if not isinstance(body.get("turns"), list):
            return self._reply(400, {"error": "turns must be a list"})
        self.server.memory.put_session(parts[1], parts[3], body)
        self._reply(200, {})

    def do_POST(self) -> None:  # noqa: N802
        parts = self._parts()
        if len(parts) != 3 or parts[0] != "conversations" or parts[2] != "search":
            return self._reply(404, {"error": f"no such path: {self.path}"})
        body = self._body()
        top_k = body.get("top_k") or self.server.top_k
        self._reply(200, {"items": self.server.memory.search(parts[1], str(body.get("question", "")), top_k)})

    def do_DELETE(self) -> None:  # noqa: N802
        parts = self._parts()
        if len(parts) != 2 or parts[0] != "conversations":
            return self._reply(404, {"error": f"no such path: {self.path}"})
        self.server.memory.delete(parts[1])
        self._reply(204)


class Service(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up mid-reply (a cancelled request) is no error to print.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def __init__(
        self, port: int = 0, store: Path | None = None, top_k: int = 8, verbose: bool = False
    ) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.memory = Memory(store)
        self.top_k = top_k
        self.verbose = verbose

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8765, help="0: any free port (printed)")
    parser.add_argument("--store", type=Path, help="a JSON file that keeps the memory across restarts")
    parser.add_argument("--top-k", type=int, default=8, help="items per search when the harness sends none")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args()
    service = Service(args.port, args.store, args.top_k, args.verbose)
    print(service.url, flush=True)
    service.serve_forever()


if __name__ == "__main__":
    main()
