"""`llm.batch=true`: the answer and judge stages' chat requests go through OpenAI's Batch API, at its price.

The stages do not change: each question's task still awaits its own `client.chat` / `client.structured`.
A request of a batched stage that the response cache does not answer is handed to the client's
`BatchQueue` (`LLMClient._complete`), which holds it until no new request has come for `llm.batch_window_s`
seconds (the run's tasks all reach their call within moments of each other), then sends every held
request of one stage and model as one batch: a JSONL of `{custom_id, method, url, body}` uploaded to
`/v1/files` (purpose `batch`), then `/v1/batches`. The custom_id is the request's cache key and the body the
exact bytes the online request would have sent, so a deterministic server answers a line as it answers
online. The batch is polled every `llm.batch_poll_s` seconds, with a progress line and an ETA; its output
file's replies go into the response cache (and the ledger, at the batch price) as they are read, then to
the tasks waiting for them, which validate and repair them as any reply.

Crash safety: the uploaded file's id goes into the run folder's `batches.jsonl` before the batch is
created, and the batch's id as soon as the server gives it, each with the custom_ids; a closing row follows
once its files are read. A later command in the same folder finds the batches still open there and follows
them instead of sending their requests again: a request whose key is in an open batch waits for that batch.
Killed between the create request and its reply, the folder has the upload but no batch: the next command
lists the server's batches for one made from that file and follows it; only when there is none (the create
never arrived) are the requests sent again.

Failed lines are retried **in the next batch** (at the batch price): a line the server answered with a
transient status (429, 5xx, 408, 409, 425), a line an expired or cancelled batch never ran
(`batch_expired`), each up to `llm.max_retries` times; a line answered with another 4xx fails at once
(`bad_request`), as online. An expired batch's finished lines are kept (cached, paid once). The file and
batch requests themselves go through the client's retry loop.

Ingest stays online: its calls depend on each other's replies. `judge-check` has no run folder: its
batches are not on record, and a killed check sends its open requests again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from mem0bench.common.text import one_line
from mem0bench.llm.cache import ResponseCache
from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.reachability import ReachabilityWatch
from mem0bench.llm.replies import raw_reply, reply_usage
from mem0bench.llm.retry import Retryable, RetryPolicy, call_with_retries, status_kind
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.slots import PrioritySlots
from mem0bench.llm.transport import JsonTransport
from mem0bench.llm.types import TRANSIENT_KINDS, FailureKind

__all__ = ["BATCH_FILE", "BATCH_STAGES", "BatchLineError", "BatchQueue", "open_batches"]

T = TypeVar("T")

BATCH_STAGES = ("answer", "judge")
"""The stages whose requests go through the Batch API (independent requests; ingest's depend on replies)."""
BATCH_FILE = "batches.jsonl"
"""The run folder's record of the batches it sent: one row when a batch is created, one when it is read."""
ENDPOINT = "/v1/chat/completions"
MAX_LINES = 50_000
"""OpenAI's limit of requests in one batch."""
TERMINAL = ("completed", "expired", "cancelled", "failed")
PROGRESS_EVERY_S = 10.0
"""At most one progress line per batch this often (and one when its status changes)."""


class BatchLineError(Exception):
    """A batched request that failed for good: its failure kind and message, and the batches it was in."""

    def __init__(self, kind: FailureKind, message: str, attempts: int) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message
        self.attempts = attempts


class _Client(Protocol):
    """What the queue uses of `LLMClient` (its one transport, retry policy, cache and ledger); a protocol,
    since the client imports this module."""

    settings: LLMSettings
    cache: ResponseCache | None
    ledger: UsageLedger
    reachability: ReachabilityWatch
    _transport: JsonTransport
    _policy: RetryPolicy
    slots: PrioritySlots
    _random: random.Random

    def _scrub(self, text: str) -> str: ...


class _OpFailed(Exception):
    """A file or batch request (upload, create, poll, download) that failed for good."""

    def __init__(self, problem: Retryable) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass
class _Line:
    key: str
    stage: str
    model: str
    body: bytes
    future: asyncio.Future[dict[str, Any]]
    tries: int = 0


@dataclass
class _Open:
    """A batch on record as sent and not yet read: its stage, model and custom_ids."""

    batch_id: str
    stage: str
    model: str
    keys: list[str] = field(default_factory=list)


def unclaimed_uploads(rows: Iterable[Mapping[str, Any]]) -> list[_Open]:
    """Uploads on record with no batch on record made from them (a kill between create and its reply) and
    not closed: each may or may not have become a batch at the server. `batch_id` holds the file's id."""
    rows = list(rows)
    claimed = {str(r.get("input_file")) for r in rows if r.get("batch") and r.get("input_file")}
    found: dict[str, _Open] = {}
    for row in rows:
        file_id = str(row.get("upload") or "")
        if not file_id:
            continue
        if row.get("closed"):
            found.pop(file_id, None)
        elif file_id not in claimed and isinstance(row.get("custom_ids"), list):
            found[file_id] = _Open(file_id, str(row.get("stage", "")), str(row.get("model", "")),
                                   [str(k) for k in row["custom_ids"]])  # fmt: skip
    return list(found.values())


def open_batches(rows: Iterable[Mapping[str, Any]]) -> list[_Open]:
    """The batches `batches.jsonl`'s rows record as created and not yet read, in creation order."""
    found: dict[str, _Open] = {}
    for row in rows:
        batch_id = str(row.get("batch") or "")
        if not batch_id:
            continue
        if row.get("closed"):
            found.pop(batch_id, None)
        elif isinstance(row.get("custom_ids"), list):
            found[batch_id] = _Open(batch_id, str(row.get("stage", "")), str(row.get("model", "")),
                                    [str(k) for k in row["custom_ids"]])  # fmt: skip
    return list(found.values())


_LIST_PAGES = 20
"""How many pages of the server's batch list (100 a page, newest first) to search for a killed create's
batch."""


def _upload_mark(file_id: str) -> str:
    return f"upload:{file_id}"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA ?"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"ETA {seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"ETA {seconds // 60}m{seconds % 60:02d}s"


def _multipart(name: str, data: bytes) -> tuple[bytes, str]:
    """The /v1/files upload: `purpose=batch` and the JSONL as `file`; -> (body, content type)."""
    boundary = f"mem0bench-{uuid.uuid4().hex}"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        "Content-Type: application/jsonl\r\n\r\n"
    ).encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _jsonl(data: bytes) -> list[dict[str, Any]]:
    rows = []
    for text in data.decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(text)
            if isinstance(row, dict):
                rows.append(row)
    return rows


class BatchQueue:
    """Holds a client's batched requests, sends them as batches, follows the batches, hands the replies on.

    `append` writes a row to the run folder's `batches.jsonl` (None: no record, as for judge-check);
    `rows` are that file's earlier rows (the batches a killed command left open). One queue per client,
    used from the client's event loop."""

    def __init__(
        self,
        client: _Client,
        *,
        append: Callable[[dict[str, Any]], None] | None = None,
        rows: Iterable[Mapping[str, Any]] = (),
        progress: bool = True,
        stream: Any = None,
    ) -> None:
        settings = client.settings
        self._client = client
        self._append = append
        self._poll_s = settings.batch_poll_s
        self._window_s = settings.batch_window_s
        self._max_tries = settings.max_retries + 1
        self._progress = progress
        self._stream = stream
        rows = list(rows)
        self._open = open_batches(rows)
        self._uploads = unclaimed_uploads(rows)
        self._resumed: dict[str, str] = {k: b.batch_id for b in self._open for k in b.keys}
        for upload in self._uploads:  # they wait until we know whether the upload became a batch
            self._resumed.update(dict.fromkeys(upload.keys, _upload_mark(upload.batch_id)))
        self._waiting: dict[str, _Line] = {}
        self._pending: list[_Line] = []
        self._last_add = 0.0
        self._flusher: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = False
        self.created = 0
        """Batches this queue created (not the ones it picked up)."""
        self.resumed = len(self._open)
        self.progress_every_s = PROGRESS_EVERY_S
        """At most one progress line per batch this often, besides one at each change of status."""

    def takes(self, stage: str) -> bool:
        """Whether a request of `stage` goes through the Batch API."""
        return stage in BATCH_STAGES

    # ---- the client's side ----------------------------------------------------------------------------
    async def send(
        self, stage: str, model: str, key: str, body: bytes, *, fresh: bool = False
    ) -> tuple[dict[str, Any], int]:
        """The raw reply (`replies.raw_reply`) of one request, by way of a batch; -> (raw, batches it took).
        Already in the cache and the ledger. Raises `BatchLineError` when it failed for good. `fresh`: the
        cached reply is the one being asked again (an empty reply re-asked), not an answer."""
        self._start()
        line = self._waiting.get(key)
        if line is None:
            cache = self._client.cache
            raw = cache.get_chat(key) if cache is not None and not fresh else None
            if raw is not None:  # a batch picked up from the folder answered it after the client looked
                return raw, 0
            loop = asyncio.get_running_loop()
            line = _Line(key, stage, model, body, loop.create_future())
            self._waiting[key] = line
            line.future.add_done_callback(functools.partial(self._done, key))
            if key not in self._resumed:  # else the open batch it is in will answer it
                self._enqueue(line)
        raw = await asyncio.shield(line.future)
        return raw, max(line.tries, 1)

    def _done(self, key: str, future: asyncio.Future[dict[str, Any]]) -> None:
        self._waiting.pop(key, None)
        if not future.cancelled():
            future.exception()  # retrieved: a failure whose callers were all cancelled is not logged as lost

    def _start(self) -> None:
        """On first use (in the event loop): follow the batches a killed command left open."""
        if self._started:
            return
        self._started = True
        for batch in self._open:
            self._spawn(self._follow(batch.batch_id, batch.stage, batch.model, batch.keys))
        for upload in self._uploads:
            self._spawn(self._claim(upload))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _enqueue(self, line: _Line) -> None:
        self._pending.append(line)
        self._last_add = time.monotonic()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush_when_quiet())

    async def _flush_when_quiet(self) -> None:
        """Send the held requests once none has come for `batch_window_s` (or a batch's worth is held)."""
        while len(self._pending) < MAX_LINES:
            quiet = time.monotonic() - self._last_add
            if quiet >= self._window_s:
                break
            await asyncio.sleep(self._window_s - quiet)
        lines, self._pending = self._pending, []
        groups: dict[tuple[str, str], list[_Line]] = {}
        for line in lines:  # OpenAI: one model per batch; one stage each keeps the ledger's rows apart
            groups.setdefault((line.stage, line.model), []).append(line)
        for group in groups.values():
            for start in range(0, len(group), MAX_LINES):
                self._spawn(self._send_batch(group[start : start + MAX_LINES]))
        if self._pending:  # more came while the last ones were grouped
            self._flusher = asyncio.ensure_future(self._flush_when_quiet())

    def close(self) -> None:
        """Stop following (the open batches stay on record for the next command)."""
        for task in [*self._tasks, *([self._flusher] if self._flusher else [])]:
            task.cancel()

    # ---- the Batch API ----------------------------------------------------------------------------------
    async def _call(self, send: Callable[[], Awaitable[T]]) -> T:
        """One file or batch request through the client's retry loop (its slots, watch and backoff)."""
        client = self._client

        def give_up(problem: Retryable, attempts: int) -> BaseException:
            return _OpFailed(problem)

        result, _ = await call_with_retries(
            send, policy=client._policy, watch=client.reachability, slots=client.slots,
            give_up=give_up, rng=client._random, scrub=client._scrub,
        )  # fmt: skip
        return result

    async def _send_batch(self, lines: list[_Line]) -> None:
        stage, model = lines[0].stage, lines[0].model
        transport = self._client._transport
        # The body as the online request sends it (canonical JSON): the same reply from the same server.
        data = b"".join(
            b'{"custom_id":' + json.dumps(line.key).encode() + b',"method":"POST","url":"' + ENDPOINT.encode()
            + b'","body":' + line.body + b"}\n"
            for line in lines
        )  # fmt: skip
        for line in lines:
            line.tries += 1
        try:
            content, content_type = _multipart(f"mem0bench-{stage}.jsonl", data)
            uploaded = await self._call(lambda: transport.post_form("/files", content, content_type))
            if self._append is not None:  # a kill during the create below: the next command looks for it
                self._append({"upload": str(uploaded["id"]), "stage": stage, "model": model,
                              "custom_ids": [line.key for line in lines]})  # fmt: skip
            created = await self._call(
                lambda: transport.post_json(
                    "/batches",
                    {
                        "input_file_id": uploaded["id"],
                        "endpoint": ENDPOINT,
                        "completion_window": "24h",
                        "metadata": {"mem0bench_stage": stage},
                    },
                )  # fmt: skip
            )
            batch_id = str(created["id"])
        except (_OpFailed, KeyError, TypeError) as exc:
            message = exc.problem.message if isinstance(exc, _OpFailed) else f"unreadable batch reply: {exc}"
            kind: FailureKind = exc.problem.kind if isinstance(exc, _OpFailed) else "malformed"
            self._fail(lines, kind, f"the batch could not be sent: {self._client._scrub(message)}")
            return
        self.created += 1
        if self._append is not None:  # on record before anything else: a kill from here on loses nothing
            self._append({"batch": batch_id, "stage": stage, "model": model, "input_file": uploaded.get("id"),
                          "custom_ids": [line.key for line in lines], "created": time.time()})  # fmt: skip
        await self._follow(batch_id, stage, model, [line.key for line in lines])

    async def _claim(self, upload: _Open) -> None:
        """An upload on record with no batch on record: follow the batch the server made from it, or, if it
        made none, close the upload and send its requests again."""
        transport = self._client._transport
        file_id, after, made = upload.batch_id, "", None
        try:
            for _ in range(_LIST_PAGES):  # newest first: a recent kill's batch is on the first pages
                query = "/batches?limit=100" + (f"&after={after}" if after else "")
                page = await self._call(functools.partial(transport.get, query))
                listed = [b for b in page.get("data") or [] if isinstance(b, dict)]
                made = next((b for b in listed if b.get("input_file_id") == file_id), None)
                if made is not None or not page.get("has_more") or not listed:
                    break
                after = str(listed[-1].get("id", ""))
        except _OpFailed as exc:  # the upload stays on record: the next command looks again
            self._fail(self._lines_of(upload.keys), exc.problem.kind,
                       f"cannot tell whether upload {file_id} became a batch: {self._client._scrub(exc.problem.message)}")  # fmt: skip
            return
        mark = _upload_mark(file_id)
        if made is None:
            if self._append is not None:
                self._append({"upload": file_id, "closed": True, "status": "no batch was made from it"})
            for key in upload.keys:
                if self._resumed.get(key) == mark:
                    del self._resumed[key]
            for line in self._lines_of(upload.keys):
                if not line.future.done():
                    self._enqueue(line)
            return
        batch_id = str(made["id"])
        if self._append is not None:
            self._append({"batch": batch_id, "stage": upload.stage, "model": upload.model, "input_file": file_id,
                          "custom_ids": upload.keys, "created": time.time()})  # fmt: skip
        for key in upload.keys:
            if self._resumed.get(key) == mark:
                self._resumed[key] = batch_id
        self.resumed += 1
        await self._follow(batch_id, upload.stage, upload.model, upload.keys)

    async def _follow(self, batch_id: str, stage: str, model: str, keys: list[str]) -> None:
        """Poll the batch until it ends, then read its files and settle its lines."""
        transport = self._client._transport
        started = time.monotonic()
        running_since: float | None = None
        shown = ("", -1.0)
        try:
            while True:
                batch = await self._call(lambda: transport.get(f"/batches/{batch_id}"))
                status = str(batch.get("status", ""))
                counts = batch.get("request_counts") or {}
                if status == "in_progress" and running_since is None:
                    running_since = time.monotonic()
                shown = self._show(batch_id, stage, status, counts, running_since, started, shown)
                if status in TERMINAL:
                    break
                await asyncio.sleep(self._poll_s)
            output = await self._file(batch.get("output_file_id"))
            errors = await self._file(batch.get("error_file_id"))
        except _OpFailed as exc:
            if exc.problem.message.startswith("HTTP 404"):
                # The server does not know it (another account or server than the one that made it): off
                # the record, and whoever waits for its lines sends them again.
                self._forget(batch_id, keys)
                return
            # The batch goes on at the server and stays on record: the next command picks it up.
            self._fail(self._lines_of(keys), exc.problem.kind,
                       f"batch {batch_id} could not be followed: {self._client._scrub(exc.problem.message)}")  # fmt: skip
            return
        self._settle(batch_id, stage, model, keys, batch, output, errors)

    async def _file(self, file_id: Any) -> list[dict[str, Any]]:
        if not file_id:
            return []
        transport = self._client._transport
        return _jsonl(await self._call(lambda: transport.get_bytes(f"/files/{file_id}/content")))

    def _lines_of(self, keys: Iterable[str]) -> list[_Line]:
        return [line for k in keys if (line := self._waiting.get(k)) is not None]

    def _settle(
        self,
        batch_id: str,
        stage: str,
        model: str,
        keys: list[str],
        batch: Mapping[str, Any],
        output: list[dict[str, Any]],
        errors: list[dict[str, Any]],
    ) -> None:
        """Every answered line into the cache and the ledger (waited for or not: it was paid); the waiting
        tasks get their replies; failed lines are held for the next batch or fail for good."""
        client = self._client
        answered: set[str] = set()
        failed: dict[str, tuple[FailureKind, str]] = {}
        for row in [*output, *errors]:
            key = str(row.get("custom_id", ""))
            response = row.get("response") if isinstance(row.get("response"), dict) else None
            status = int(response.get("status_code", 0) or 0) if response else 0
            body = response.get("body") if response else None
            if status == 200 and isinstance(body, dict):
                try:
                    raw = raw_reply(body)
                except (ValueError, TypeError, AttributeError) as exc:
                    failed[key] = ("malformed", f"unreadable reply body: {exc}")
                    continue
                answered.add(key)
                if client.cache is not None:
                    client.cache.put_chat(key, raw)
                usage = reply_usage(raw)
                # The model asked for, as online (a reply names a dated snapshot the price table lacks).
                client.ledger.record(stage, model, usage, cached=False, batch=True)
                line = self._waiting.get(key)
                if line is not None and not line.future.done():
                    line.future.set_result(raw)
                continue
            error = row.get("error") if isinstance(row.get("error"), dict) else None
            if response is not None and status:
                kind: FailureKind = status_kind(status) or "server_error"
                text = json.dumps(body)[:300] if isinstance(body, dict) else str(body)
                if isinstance(body, dict) and isinstance(body.get("error"), dict):
                    text = str(body["error"].get("message", text))
                failed[key] = (kind, f"HTTP {status} in batch {batch_id}: {one_line(text)}")
            else:  # expired or cancelled before it ran: not the request's fault
                code = str((error or {}).get("code") or batch.get("status") or "no reply")
                failed[key] = (
                    "server_error",
                    f"{code} in batch {batch_id}: {(error or {}).get('message', '')}",
                )
        if batch.get("status") == "failed":
            reason = json.dumps(batch.get("errors"))[:300]
            for key in keys:
                failed.setdefault(key, ("bad_request", f"batch {batch_id} failed validation: {reason}"))
        for key in keys:
            if key not in answered and key not in failed:
                failed[key] = ("server_error", f"batch {batch_id} ({batch.get('status')}) gave no reply")
        for key, (kind, message) in failed.items():
            line = self._waiting.get(key)
            if line is None or line.future.done():
                continue  # nobody waits for it: whoever asks later sends it again
            if kind in TRANSIENT_KINDS and line.tries < self._max_tries:
                self._enqueue(line)
            else:
                line.future.set_exception(BatchLineError(kind, message, line.tries))
        for key in keys:
            if self._resumed.get(key) == batch_id:
                del self._resumed[key]
        if self._append is not None:
            counts = {"answered": len(answered), "failed": len(failed)}
            self._append({"batch": batch_id, "closed": True, "status": batch.get("status"), **counts})

    def _forget(self, batch_id: str, keys: list[str]) -> None:
        for key in keys:
            if self._resumed.get(key) == batch_id:
                del self._resumed[key]
        if self._append is not None:
            self._append({"batch": batch_id, "closed": True, "status": "unknown to the server"})
        for line in self._lines_of(keys):
            if not line.future.done():
                self._enqueue(line)

    def _fail(self, lines: list[_Line], kind: FailureKind, message: str) -> None:
        for line in lines:
            if not line.future.done():
                line.future.set_exception(BatchLineError(kind, message, line.tries))

    # ---- progress -----------------------------------------------------------------------------------------
    def _show(
        self,
        batch_id: str,
        stage: str,
        status: str,
        counts: Mapping[str, Any],
        running_since: float | None,
        started: float,
        shown: tuple[str, float],
    ) -> tuple[str, float]:
        """A line when the status changes, else at most every `progress_every_s`; -> what was shown when."""
        now = time.monotonic()
        if not self._progress or (status == shown[0] and now - shown[1] < self.progress_every_s):
            return shown
        total = int(counts.get("total") or 0)
        done = int(counts.get("completed") or 0) + int(counts.get("failed") or 0)
        eta: float | None = None
        if status in TERMINAL or status == "finalizing":
            eta = 0.0
        elif running_since is not None and done > 0:
            eta = (total - done) * (now - running_since) / done
        line = (
            f"batch {batch_id} ({stage}): {status} {done:,}/{total:,} requests, "
            f"{int(counts.get('failed') or 0):,} failed, {int(now - started)}s, {_eta(eta)}"
        )
        stream = self._stream or sys.stderr
        try:
            from tqdm import tqdm

            tqdm.write(line, file=stream)  # above the run's progress bars, when it has any
        except ImportError:  # pragma: no cover - tqdm is a dependency
            print(line, file=stream, flush=True)
        return status, now
