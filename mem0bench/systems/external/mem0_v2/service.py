"""mem0 2.x behind the HTTP system protocol (docs/http_system.openapi.yaml), run by the harness in mem0's
own virtual environment (mem0bench.systems.external.mem0_v2.env): this file imports nothing of mem0bench,
only the standard library, the pinned mem0ai and the service kit (own_env/kit, on its PYTHONPATH).

The harness writes its settings as one JSON line on stdin (the secrets never reach a command line or a
file): the token a request must carry (`Authorization: Bearer`), the LLM bridge's base and key, the models,
the embedding size, the data folder and how to add. The service listens on 127.0.0.1, on a port of the
system's choosing, and prints `PORT <n>` when it is ready.

Ingestion is mem0's evaluation harness's (as the `mem0_oss` adapter's): per conversation and speaker one
Memory (qdrant in local mode and a history database in the speaker's folder); each session's turns become
`"<speaker>: <text>"` messages (the speaker's own as `user`, the other's as `assistant`), added
`batch_size` at a time with the session's date as `metadata.timestamp`. A session sent again replaces
itself: its memories (tagged with the session's number) are deleted first. Search: each speaker's top_k,
as items carrying the speaker's name, the session date and the turns behind each memory.

Calls on one Memory take turns (a lock): qdrant's local mode is not made for concurrent writers, and the
bridge scope a request names (`X-Mem0bench-Scope`) is set on that Memory's HTTP clients for the call.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import quote

from service_kit import SCOPE_HEADER, read_settings, serve  # type: ignore[import-not-found]

ALL = 1_000_000
_dated = threading.local()


def date_extraction(session_dates: bool) -> None:
    """mem0 2.2.1's OSS `add` builds its extraction prompt with today's date as both the observation and
    the current date (its `timestamp` is platform-only). With `session_dates` the prompt gets the
    session's date instead (set per add in this thread): temporal facts are dated as the conversation
    dates them, and the prompt (and the LLM cache) does not change with the machine's clock."""
    if not session_dates:
        return
    from mem0.memory import main  # type: ignore[import-untyped]

    original = main.generate_additive_extraction_prompt

    def dated(*args: Any, **kwargs: Any) -> Any:
        day = getattr(_dated, "day", None)
        if day:
            kwargs["current_date"] = kwargs.get("current_date") or day
            kwargs["timestamp"] = kwargs.get("timestamp") or day
        return original(*args, **kwargs)

    main.generate_additive_extraction_prompt = dated


class Instance:
    """One speaker's Memory and the bridge scope its calls carry now."""

    def __init__(self, settings: dict[str, Any], conversation: str, speaker: str, folder: Path) -> None:
        import httpx2  # openai 3.x's HTTP library
        from mem0 import Memory  # type: ignore[import-untyped]
        from openai import OpenAI

        self.lock = threading.Lock()
        self.scope: str | None = None
        self.speaker = speaker
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        route = settings["bridge_base"] + quote(conversation, safe="") + "/v1"
        dims = int(settings["embedding_dims"])
        config = {
            "llm": {
                "provider": "openai",
                "config": {"model": settings["model"], "api_key": settings["bridge_key"],
                           "openai_base_url": route, "temperature": settings["temperature"]},
            },
            "embedder": {
                "provider": "openai",
                "config": {"model": settings["embedding_model"], "api_key": settings["bridge_key"],
                           "openai_base_url": route, "embedding_dims": dims},
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {"collection_name": "mem0", "path": str(folder / "qdrant"),
                           "embedding_model_dims": dims, "on_disk": True},
            },
            "history_db_path": str(folder / "history.db"),
        }  # fmt: skip
        self.memory = Memory.from_config(config)

        def stamp(request: Any) -> None:
            if self.scope:
                request.headers[SCOPE_HEADER] = self.scope

        # mem0 makes its OpenAI clients itself; ours add the scope header (the bridge then attributes
        # each call to the question or ingest that caused it) and wait as long as the bridge needs.
        http = httpx2.Client(timeout=900.0, event_hooks={"request": [stamp]})
        client = OpenAI(api_key=settings["bridge_key"], base_url=route, http_client=http)
        self.memory.llm.client = client
        self.memory.embedding_model.client = client


class Service:
    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.data = Path(settings["data_dir"])
        self.instances: dict[tuple[str, str], Instance] = {}
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=int(settings.get("workers", 8)))

    def folder(self, conversation: str) -> Path:
        return self.data / hashlib.sha256(conversation.encode()).hexdigest()[:16]

    def instance(self, conversation: str, speaker: str, position: int) -> Instance:
        with self.lock:
            key = (conversation, speaker)
            if key not in self.instances:
                folder = self.folder(conversation) / f"speaker_{'ab'[position]}"
                self.instances[key] = Instance(self.settings, conversation, speaker, folder)
            return self.instances[key]

    def delete(self, conversation: str) -> None:
        with self.lock:
            for key in [k for k in self.instances if k[0] == conversation]:
                instance = self.instances.pop(key)
                with instance.lock:
                    instance.memory.close()
        shutil.rmtree(self.folder(conversation), ignore_errors=True)

    def put_session(self, conversation: str, number: int, body: dict[str, Any], scope: str | None) -> None:
        speakers = list(body["speakers"])
        folder = self.folder(conversation)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        (folder / "speakers.json").write_text(json.dumps(speakers), encoding="utf-8")
        jobs = [
            self.pool.submit(self._add_speaker, conversation, number, body, speaker, position, scope)
            for position, speaker in enumerate(speakers)
        ]
        for job in jobs:
            job.result()

    def _add_speaker(
        self,
        conversation: str,
        number: int,
        body: dict[str, Any],
        speaker: str,
        position: int,
        scope: str | None,
    ) -> None:
        instance = self.instance(conversation, speaker, position)
        size = int(self.settings["batch_size"])
        turns = body["turns"]
        with instance.lock:
            instance.scope = scope
            memory = instance.memory
            held = memory.get_all(filters={"user_id": speaker}, top_k=ALL)
            for item in held.get("results", []):
                if (item.get("metadata") or {}).get("session") == number:
                    memory.delete(item["id"])
            for start in range(0, len(turns), size):
                chunk = turns[start : start + size]
                messages = [
                    {"role": "user" if t["speaker"] == speaker else "assistant",
                     "content": f"{t['speaker']}: {t['text']}"}
                    for t in chunk
                ]  # fmt: skip
                _dated.day = str(body.get("date_iso") or "")[:10]
                metadata = {
                    "timestamp": body["date"],
                    "session": number,
                    "dia_ids": [t["turn_id"] for t in chunk],
                }
                memory.add(
                    messages, user_id=speaker, metadata=metadata, infer=True,
                    prompt=self.settings.get("instructions") or None,
                )  # fmt: skip
            instance.scope = None

    def search(self, conversation: str, body: dict[str, Any], scope: str | None) -> list[dict[str, Any]]:
        top_k = int(body.get("top_k") or self.settings["top_k"])
        with self.lock:
            held = [(k[1], v) for k, v in self.instances.items() if k[0] == conversation]
        if not held:
            # A service restarted on a conversation it holds on disk: reopen its speakers.
            saved = self.folder(conversation) / "speakers.json"
            names = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else []
            for position, name in enumerate(names):
                held.append((name, self.instance(conversation, name, position)))
        jobs = [
            self.pool.submit(self._search_speaker, inst, body["question"], top_k, scope) for _, inst in held
        ]
        return [item for job in jobs for item in job.result()]

    def _search_speaker(
        self, instance: Instance, question: str, top_k: int, scope: str | None
    ) -> list[dict[str, Any]]:
        with instance.lock:
            instance.scope = scope
            found = instance.memory.search(
                question, top_k=top_k, filters={"user_id": instance.speaker},
                threshold=float(self.settings["threshold"]),
            )  # fmt: skip
            instance.scope = None
        items = []
        for m in found.get("results", []):
            meta = m.get("metadata") or {}
            items.append(
                {"text": m.get("memory", ""), "date": meta.get("timestamp"), "score": m.get("score"),
                 "turn_ids": [str(d) for d in meta.get("dia_ids") or []], "speaker": instance.speaker}
            )  # fmt: skip
        return items


def main() -> None:
    settings = read_settings()
    data = Path(settings["data_dir"])
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mem0 keeps a home of its own (~/.mem0); telemetry off (read at mem0's import): nothing leaves the machine.
    os.environ["MEM0_DIR"] = str(data / "mem0home")
    os.environ["MEM0_TELEMETRY"] = "False"
    import mem0  # noqa: F401 - a venv that cannot import it fails here, before the port is announced

    date_extraction(settings.get("extraction_date") == "session")
    serve(settings, Service, "mem0_v2", version("mem0ai"))


if __name__ == "__main__":
    main()
