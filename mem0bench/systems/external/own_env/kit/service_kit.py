"""The server of a system's service, run by the system's own venv (standard library only: nothing of
mem0bench is importable there; the harness puts this folder alone on the service's PYTHONPATH).

It speaks the HTTP system protocol (docs/http_system.openapi.yaml) on 127.0.0.1, on a port of the system's
choosing, and admits a request only with the token the harness gave on stdin. A service script gives
`serve` a factory of its service object, which has `put_session`, `search` and `delete` (below).
"""

from __future__ import annotations

import hmac
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote

SCOPE_HEADER = "X-Mem0bench-Scope"
"""The bridge scope a request runs in: the service sends it on with the system's LLM calls."""


class Service(Protocol):
    def put_session(
        self, conversation: str, number: int, body: dict[str, Any], scope: str | None
    ) -> None: ...

    def search(self, conversation: str, body: dict[str, Any], scope: str | None) -> list[dict[str, Any]]: ...

    def delete(self, conversation: str) -> None: ...


def handler(service: Service, token: str, name: str, version: str) -> type[BaseHTTPRequestHandler]:
    bearer = f"Bearer {token}".encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return

        def _reply(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self, method: str) -> None:
            parts = [unquote(p) for p in self.path.strip("/").split("/")]
            if method == "GET" and parts == ["health"]:
                self._reply(200, {"status": "ok", "name": name, "version": version})
                return
            given = self.headers.get("Authorization", "").encode("latin-1")
            if not hmac.compare_digest(given, bearer):
                self._reply(401, {"error": "this service admits only the run that started it"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            scope = self.headers.get(SCOPE_HEADER)
            try:
                if method == "DELETE" and len(parts) == 2 and parts[0] == "conversations":
                    service.delete(parts[1])
                    self._reply(200, {})
                elif method == "PUT" and len(parts) == 4 and parts[2] == "sessions":
                    service.put_session(parts[1], int(parts[3]), body, scope)
                    self._reply(200, {})
                elif method == "POST" and len(parts) == 3 and parts[2] == "search":
                    self._reply(200, {"items": service.search(parts[1], body, scope)})
                else:
                    self._reply(404, {"error": f"{method} {self.path} is not served"})
            except Exception as exc:  # noqa: BLE001 - the harness records it (502: retried, then a failure)
                self._reply(502, {"error": f"{type(exc).__name__}: {exc}"[:2000]})

        def do_GET(self) -> None:  # noqa: N802 - http.server's names
            self._route("GET")

        def do_PUT(self) -> None:  # noqa: N802
            self._route("PUT")

        def do_POST(self) -> None:  # noqa: N802
            self._route("POST")

        def do_DELETE(self) -> None:  # noqa: N802
            self._route("DELETE")

    return Handler


def exit_with_parent() -> None:
    """Stop when the run that started us is gone (killed before it could stop us): a service in its own
    session would otherwise outlive it, holding its port and its folder's locks."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def read_settings() -> dict[str, Any]:
    """The harness's settings (one JSON line on stdin); files made from here on are the owner's alone."""
    os.umask(0o077)
    return json.loads(sys.stdin.readline())


def serve(
    settings: dict[str, Any], make: Callable[[dict[str, Any]], Service], name: str, version: str
) -> None:
    """Make the service from the settings, announce the port, serve until stopped."""
    token = settings.pop("token")
    exit_with_parent()
    service = make(settings)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(service, token, name, version))
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()
