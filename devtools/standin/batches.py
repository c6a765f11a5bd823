"""The stand-in's Batch API: `/v1/files` and `/v1/batches` in OpenAI's formats, for tests of `llm.batch`.

* POST /v1/files (multipart: `purpose=batch`, `file`): stores the JSONL; GET /v1/files/{id}/content
  returns it (input, output and error files alike).
* POST /v1/batches {input_file_id, endpoint, completion_window}: validates every line (`custom_id`,
  `method` POST, `url` = the endpoint, `body` an object; duplicate custom_ids refused) and answers the batch
  object. GET /v1/batches/{id}: the batch, its status moving validating -> in_progress -> finalizing ->
  completed after `delays` (seconds each, measured from creation), with `request_counts`. POST
  /v1/batches/{id}/cancel: `cancelled` (finished lines kept). GET /v1/batches: the list (preflight's probe).
* The lines are answered when the batch completes, each exactly as the online endpoint would answer it
  (the server's own chat code, deterministic from the body): the output file holds `{id, custom_id,
  response: {status_code, request_id, body}, error: null}` for each 200, the error file the lines that
  failed (`response` with the error's status and body).
* Faults: `fail_lines` (the next N lines answered fail with a 500, in the error file); `expire_after`
  (a batch expires after answering that many lines: status `expired`, the rest in the error file with
  `error.code` `batch_expired` and no response).

`StandinServer.batch_api=False` answers every one of these routes 404, as vLLM and llama.cpp do.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

__all__ = ["BatchStore", "parse_multipart"]

LineAnswer = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]
"""One line's request body -> (HTTP status, reply body), as the online endpoint answers it."""


def parse_multipart(content_type: str, data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body -> {field name: (file name or None, bytes)}."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        payload = payload if isinstance(payload, bytes) else b""
        fields[str(name)] = (part.get_filename(), payload)
    return fields


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    lines: list[dict[str, Any]]
    created: float
    metadata: dict[str, Any] | None = None
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    done: int = 0
    failed: int = 0
    answered_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class BatchStore:
    """Files and batches of one stand-in server. Thread-safe; the lines are answered by `answer`."""

    def __init__(self, answer: LineAnswer) -> None:
        self._answer = answer
        self._lock = threading.Lock()
        self._files: dict[str, tuple[str, bytes]] = {}
        self._batches: dict[str, _Batch] = {}
        self._n = 0
        self.delays: tuple[float, float, float] = (0.02, 0.05, 0.02)
        """Seconds in validating, in_progress and finalizing."""
        self.fail_lines = 0
        self.expire_after: int | None = None
        self.creates = 0
        self.lines_failed = 0
        """Lines answered with an error (injected or the chat code's own), over every batch."""

    def _new_id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}-standin-{self._n:06d}"

    # -- files
    def upload(self, purpose: str, name: str, data: bytes) -> dict[str, Any]:
        with self._lock:
            file_id = self._new_id("file")
            self._files[file_id] = (name, data)
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": name, "purpose": purpose}  # fmt: skip

    def content(self, file_id: str) -> bytes | None:
        with self._lock:
            found = self._files.get(file_id)
        return None if found is None else found[1]

    # -- batches
    def create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id = body.get("input_file_id")
        endpoint = body.get("endpoint")
        data = self.content(str(file_id))
        if data is None:
            return 400, _error(f"no file {file_id!r}")
        if endpoint != "/v1/chat/completions":
            return 400, _error(f"unsupported endpoint {endpoint!r}")
        if body.get("completion_window") != "24h":
            return 400, _error("completion_window must be '24h'")
        lines: list[dict[str, Any]] = []
        seen: set[str] = set()
        for n, text in enumerate(data.decode("utf-8").splitlines(), 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError:
                return 400, _error(f"line {n} of the input file is not JSON")
            ok = (
                isinstance(line, dict) and isinstance(line.get("custom_id"), str)
                and line.get("method") == "POST" and line.get("url") == endpoint
                and isinstance(line.get("body"), dict)
            )  # fmt: skip
            if not ok:
                return 400, _error(f"line {n} needs custom_id, method POST, url {endpoint} and a body")
            if line["custom_id"] in seen:
                return 400, _error(f"line {n}: duplicate custom_id {line['custom_id']!r}")
            seen.add(line["custom_id"])
            lines.append(line)
        with self._lock:
            batch = _Batch(self._new_id("batch"), str(file_id), endpoint, lines, time.monotonic(),
                           metadata=body.get("metadata"))  # fmt: skip
            self._batches[batch.id] = batch
            self.creates += 1
        return 200, self._view(batch)

    def retrieve(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            return None
        self._advance(batch)
        return self._view(batch)

    def cancel(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            return None
        self._advance(batch)
        if batch.status in ("validating", "in_progress", "finalizing"):
            self._finish(batch, "cancelled", answered=0)
        return self._view(batch)

    def listing(self, limit: int = 20, after: str | None = None) -> dict[str, Any]:
        """GET /v1/batches as OpenAI pages it: newest first, `limit` a page (1-100), `after` an id."""
        with self._lock:
            batches = list(reversed(self._batches.values()))
        if after is not None:
            ids = [b.id for b in batches]
            batches = batches[ids.index(after) + 1 :] if after in ids else []
        page = batches[: max(1, min(limit, 100))]
        return {"object": "list", "data": [self._view(b) for b in page], "has_more": len(batches) > len(page),
                "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None}  # fmt: skip

    def _advance(self, batch: _Batch) -> None:
        """Move the batch along its statuses by the time since creation; answer its lines at the end."""
        if batch.status not in ("validating", "in_progress", "finalizing"):
            return
        elapsed = time.monotonic() - batch.created
        validating, running, finalizing = self.delays
        if elapsed < validating:
            return
        if elapsed < validating + running:
            batch.status = "in_progress"
            batch.done = int(len(batch.lines) * (elapsed - validating) / max(running, 1e-9))
            return
        if elapsed < validating + running + finalizing:
            batch.status = "finalizing"
            batch.done = len(batch.lines)
            return
        expire = self.expire_after
        if expire is not None and expire < len(batch.lines):
            self._finish(batch, "expired", answered=expire)
        else:
            self._finish(batch, "completed", answered=len(batch.lines))

    def _finish(self, batch: _Batch, status: str, *, answered: int) -> None:
        out: list[str] = []
        errors: list[str] = []
        failed = 0
        for n, line in enumerate(batch.lines):
            rid = f"batch_req_{batch.id}_{n}"
            if n >= answered:
                if status == "cancelled":
                    code, message = "batch_cancelled", "the batch was cancelled before this request ran"
                else:
                    code, message = "batch_expired", "This request could not be executed before the " \
                        "completion window expired."  # fmt: skip
                errors.append(json.dumps({"id": rid, "custom_id": line["custom_id"], "response": None,
                                          "error": {"code": code, "message": message}}))  # fmt: skip
                failed += 1
                continue
            with self._lock:
                fail = self.fail_lines > 0
                if fail:
                    self.fail_lines -= 1
            if fail:
                status_code, body = 500, _error("The server had an error processing this request (stand-in).")
            else:
                status_code, body = self._answer(line["body"])
            row = {"id": rid, "custom_id": line["custom_id"],
                   "response": {"status_code": status_code, "request_id": f"req_{rid}", "body": body},
                   "error": None}  # fmt: skip
            if status_code == 200:
                out.append(json.dumps(row))
            else:
                errors.append(json.dumps(row))
                failed += 1
        with self._lock:
            batch.status = status
            batch.done = len(batch.lines) - failed
            batch.failed = failed
            self.lines_failed += failed - (len(batch.lines) - answered)
            batch.answered_at = time.time()
            if out:
                batch.output_file_id = self._new_id("file")
                self._files[batch.output_file_id] = ("output.jsonl", ("\n".join(out) + "\n").encode())
            if errors:
                batch.error_file_id = self._new_id("file")
                self._files[batch.error_file_id] = ("errors.jsonl", ("\n".join(errors) + "\n").encode())

    @staticmethod
    def _view(batch: _Batch) -> dict[str, Any]:
        total = len(batch.lines)
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": None,
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": batch.status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": int(time.time()), "metadata": batch.metadata,
            "request_counts": {"total": total, "completed": batch.done, "failed": batch.failed},
        }  # fmt: skip


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}
