"""cognee behind the HTTP system protocol (docs/http_system.openapi.yaml), run by the harness in cognee's own
virtual environment (mem0bench.systems.external.cognee.env): this file imports nothing of mem0bench, only
the standard library, the pinned cognee and the service kit (own_env/kit, on its PYTHONPATH).

The harness writes its settings as one JSON line on stdin (the secrets never reach a command line or a
file). cognee reads its configuration from environment variables, set here before it is imported: its
data and system folders inside the service's data folder, telemetry off, the LLM and embedder pointed at
the harness's bridge.

Ingestion is cognee's own LOCOMO evaluation's (cognee/eval_framework/locomo/, `preprocess.py` and
`ingest.py` in the wheel): a conversation becomes a short overview document (the speakers and the session
timeline) and one document per window of `window_turns` consecutive turns of a session, each starting
with a header naming the session, its date and the two speakers (a one- or two-turn tail is folded into
the window before it, captions written as "[shares a photo: ...]"); all of them go through ONE
`remember()` (add + cognify + improve) with chunks of `chunk_size` tokens, so each window stays one chunk.
The protocol sends a conversation session by session: each PUT only stores the session (no LLM call); the
adapter's last request of an ingestion (a PUT on session -1 with `{"remember": true}`) runs the one
`remember()` over every stored session. A conversation is a cognee dataset of its own, with its own graph
and vector databases (backend access control on: the authors ran one process with its own folders per
conversation, which is the same isolation).

Search is the authors' retriever: `HybridRetriever` (search type HYBRID_COMPLETION) with chunks, entities
and facts top_k (20/20/20, 10 edges per entity). Its `get_retrieved_objects` and `get_context_from_objects`
are called as cognee's eval calls them, and the context its completion would be given is returned as one
item (the harness's answer stage then answers from it); with `answer_by=cognee` the completion itself is run
(cognee's answer, with the authors' answer prompt as its system prompt) and returned instead.

Every LLM and embedding call of cognee goes through litellm: `litellm.acompletion` / `aembedding` (and the
sync ones) are wrapped before cognee is imported, so each call is sent to the bridge's route for the
conversation the request is about, carrying the request's bridge scope (`X-Mem0bench-Scope`); both are
context variables of the request's task, which cognee's own tasks inherit.

Concurrency: cognee runs on one asyncio loop (a thread of its own); the HTTP threads hand it coroutines.
cognee keeps global state (one relational database, its pipeline registry), so `remember()` and deletes
take turns with one global lock; searches of one conversation take turns with each other and with its
ingestion (a lock per conversation); searches of different conversations run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import os
import shutil
import sys
import threading
from collections.abc import Coroutine
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from service_kit import SCOPE_HEADER, read_settings, serve  # type: ignore[import-not-found]

T = TypeVar("T")

_route: contextvars.ContextVar[str | None] = contextvars.ContextVar("route", default=None)
_scope: contextvars.ContextVar[str | None] = contextvars.ContextVar("scope", default=None)
_BRIDGE: dict[str, str] = {}


def answer_prompt() -> str:
    """cognee's LOCOMO eval's one answer prompt (in the wheel), used only with `answer_by=cognee`."""
    import cognee

    return (Path(cognee.__file__).parent / "eval_framework/locomo/qa_prompts/unified.txt").read_text("utf-8")


# ---- the conversation as cognee's eval writes it (preprocess.py) ----------------------------------------


def format_turn(turn: dict[str, Any]) -> str:
    """`Speaker: text [shares a photo: caption]`, as the eval's `format_turn` (a caption the harness folded
    into the text, `dataset.fold_captions`, is taken out first: the window reads as the authors' either way)."""
    text, caption = str(turn["text"]), (turn.get("caption") or "").strip()
    folded = f"[shared an image: {caption}]"
    if caption and text.endswith(folded):
        text = text[: -len(folded)].rstrip()
    line = f"{turn['speaker']}: {text}".rstrip()
    if caption:
        line += f" [shares a photo: {caption}]"
    return line


def session_windows(
    speakers: list[str], number: int, date: str, turns: list[dict[str, Any]], size: int
) -> list[dict[str, Any]]:
    """One session's windows of `size` turns, each a dated document (`build_session_windows`)."""
    if not turns:
        return []
    groups = [turns[i : i + size] for i in range(0, len(turns), size)]
    if len(groups) > 1 and len(groups[-1]) < max(2, size // 3):
        tail = groups.pop()
        groups[-1] = groups[-1] + tail
    a, b = (speakers + ["", ""])[:2]
    windows = []
    for part, group in enumerate(groups, start=1):
        header = f"Session {number} of the conversation between {a} and {b}, which took place at {date}"
        if len(groups) > 1:
            header += f" (part {part} of {len(groups)})"
        text = "\n".join([header + "."] + [format_turn(t) for t in group])
        windows.append({"text": text, "turn_ids": [str(t["turn_id"]) for t in group]})
    return windows


def overview(sample: str, speakers: list[str], sessions: list[dict[str, Any]]) -> str:
    """Who talked, and when each session happened (`conversation_overview_text`)."""
    a, b = (speakers + ["", ""])[:2]
    lines = [
        f"{a} and {b} are friends who talked in {len(sessions)} conversation sessions over time "
        f"(conversation id {sample}).",
        "Session timeline:",
    ]
    for s in sessions:
        lines.append(f"- Session {s['number']} took place at {s['date']} ({len(s['turns'])} turns).")
    return "\n".join(lines)


# ---- cognee's calls, routed and scoped ------------------------------------------------------------------


def route_calls() -> None:
    """Wrap litellm's entry points: each call goes to the bridge route of the request's conversation,
    stamped with the request's scope. Done before cognee is imported (instructor keeps the function
    object it is given)."""
    import litellm

    def patch(kwargs: dict[str, Any]) -> dict[str, Any]:
        route, scope = _route.get(), _scope.get()
        if route is not None:
            kwargs["api_base"] = _BRIDGE["base"] + quote(route, safe="") + "/v1"
        kwargs["api_key"] = _BRIDGE["key"]
        if scope:
            kwargs["extra_headers"] = {**(kwargs.get("extra_headers") or {}), SCOPE_HEADER: scope}
        return kwargs

    for name in ("acompletion", "aembedding"):
        original = getattr(litellm, name)

        async def routed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            return await _original(*args, **patch(kwargs))

        setattr(litellm, name, routed)
    for name in ("completion", "embedding"):
        original = getattr(litellm, name)

        def routed_sync(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            return _original(*args, **patch(kwargs))

        setattr(litellm, name, routed_sync)


def _tiebreak(result: Any) -> str:
    payload = getattr(result, "payload", None) or {}
    return str(payload.get("text") or payload.get("name") or getattr(result, "id", ""))


def deterministic_ties() -> None:
    """Equal-ranked results in one order on every run. cognee leaves them in storage order (a vector
    search's equal scores, a relation type's edges in "legacy graph order"), and that order depends on
    which of cognify's concurrent extraction calls finished first: the same memory, built twice, would
    show the same lines in another order (another prompt, another answer, no cache hit). Only ties are
    reordered, by their text; what is retrieved and every ranked order stay cognee's."""
    from cognee.infrastructure.databases.vector.lancedb.LanceDBAdapter import LanceDBAdapter
    from cognee.modules.retrieval.hybrid import entities

    search = LanceDBAdapter.search

    async def tied(self: Any, *args: Any, **kwargs: Any) -> Any:
        results = await search(self, *args, **kwargs)
        if not isinstance(results, list):
            return results
        out: list[Any] = []
        for result in results:  # runs of one score, each sorted by text
            if out and getattr(out[-1][0], "score", None) == getattr(result, "score", None):
                out[-1].append(result)
            else:
                out.append([result])
        return [r for run in out for r in sorted(run, key=_tiebreak)]

    LanceDBAdapter.search = tied
    edge_key = entities._edge_sort_key

    def keyed(edge: dict[str, Any], edge_ranks: dict[str, int]) -> tuple[Any, ...]:
        return (*edge_key(edge, edge_ranks), str(edge.get("text") or ""))

    entities._edge_sort_key = keyed

    # Passages tied on their fused rank are ordered by chunk id, and a rebuilt memory (a dataset of a new
    # generation, after an interruption) gives the same chunks other ids: order those ties by text too.
    from cognee.modules.retrieval.hybrid import chunks

    rank = chunks.rank_chunk_summary_pairs

    def ranked_by_text_in_ties(pairs: list[dict[str, Any]], limit: int, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("use_truth_weight") or kwargs.get("personal_weights"):
            return rank(pairs, limit, *args, **kwargs)  # those weights are looked up by chunk id
        keyed, originals = [], {}
        for pair in pairs:
            text = str((getattr(pair.get("chunk"), "payload", None) or {}).get("text") or "")
            copy = {**pair, "chunk_id": f"{text}\0{pair.get('chunk_id') or ''}"}
            originals[id(copy)] = pair
            keyed.append(copy)
        return [originals[id(p)] for p in rank(keyed, limit, *args, **kwargs)]

    chunks.rank_chunk_summary_pairs = ranked_by_text_in_ties


_RETRYING = (
    "cognee.infrastructure.llm.structured_output_framework.litellm_native.native_adapter",
    "cognee.infrastructure.llm.structured_output_framework.litellm_instructor.llm.generic_llm_api.adapter",
    "cognee.infrastructure.llm.structured_output_framework.litellm_instructor.llm.openai.adapter",
    "cognee.infrastructure.databases.vector.embeddings.LiteLLMEmbeddingEngine",
    "cognee.infrastructure.databases.vector.embeddings.OpenAICompatibleEmbeddingEngine",
)


def one_attempt() -> int:
    """cognee's own retry loops (tenacity: an LLM call is retried for at least 240 s, an embedding for
    128 s) give up after one attempt: the bridge's client has retried the call already (429s, 5xx,
    timeouts, with the run's backoff), so an error reaching cognee is final, and cognee's retries would
    only hold a failed call for minutes. -> how many retrying methods were found."""
    import importlib

    from tenacity import stop_after_attempt

    found = 0
    for name in _RETRYING:
        module = importlib.import_module(name)
        for cls in vars(module).values():
            for attribute in vars(cls).values() if isinstance(cls, type) else ():
                retrying = getattr(attribute, "retry", None)
                if retrying is not None and hasattr(retrying, "stop"):
                    retrying.stop = stop_after_attempt(1)
                    found += 1
    return found


class Service:
    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.data = Path(settings["data_dir"])
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="cognee-loop").start()
        self.global_lock = asyncio.Lock()
        self.locks: dict[str, asyncio.Lock] = {}
        self.file_lock = threading.Lock()
        self.run(self._setup())

    # ---- plumbing -----------------------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T], route: str | None = None, scope: str | None = None) -> T:
        async def scoped() -> T:
            _route.set(route)
            _scope.set(scope)
            return await coro

        return asyncio.run_coroutine_threadsafe(scoped(), self.loop).result()

    def lock(self, conversation: str) -> asyncio.Lock:
        return self.locks.setdefault(conversation, asyncio.Lock())

    async def _setup(self) -> None:
        from cognee.modules.engine.operations.setup import setup

        await setup()

    def folder(self, conversation: str) -> Path:
        return self.data / "conversations" / hashlib.sha256(conversation.encode()).hexdigest()[:16]

    def dataset_name(self, conversation: str) -> str:
        """The conversation's cognee dataset; a delete moves it to a new generation (nothing of the old
        one can then be found, even if emptying it left something behind)."""
        marker = self.folder(conversation) / "generation"
        generation = marker.read_text(encoding="utf-8").strip() if marker.is_file() else "0"
        return f"conv_{hashlib.sha256(conversation.encode()).hexdigest()[:16]}_{generation}"

    def stored(self, conversation: str) -> tuple[list[str], list[dict[str, Any]]]:
        folder = self.folder(conversation) / "sessions"
        sessions = [json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("*.json")]
        sessions.sort(key=lambda s: s["number"])
        speakers = sessions[-1]["speakers"] if sessions else []
        return speakers, sessions

    # ---- the protocol -------------------------------------------------------------------------------

    def put_session(self, conversation: str, number: int, body: dict[str, Any], scope: str | None) -> None:
        if number < 0 and body.get("remember"):
            self.run(
                self._remember(conversation, str(body.get("sample") or conversation)), conversation, scope
            )
            return
        folder = self.folder(conversation) / "sessions"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        record = {"number": number, "date": body["date"], "speakers": list(body["speakers"]),
                  "turns": body["turns"]}  # fmt: skip
        with self.file_lock:
            (folder / f"{number}.json").write_text(json.dumps(record), encoding="utf-8")

    def documents(self, conversation: str, sample: str) -> tuple[list[str], list[dict[str, Any]]]:
        speakers, sessions = self.stored(conversation)
        size = int(self.settings["window_turns"])
        windows = [
            w for s in sessions for w in session_windows(speakers, s["number"], s["date"], s["turns"], size)
        ]
        texts = ([overview(sample, speakers, sessions)] if self.settings["overview"] else []) + [
            w["text"] for w in windows
        ]
        return texts, windows

    async def _remember(self, conversation: str, sample: str) -> None:
        """The one `remember()` over the stored sessions. Its digest (the documents) is kept when it is
        done: a rerun asks nothing again. A memory not built from exactly these documents (a remember()
        the run's interruption cut short, or sessions sent again) is dropped first and built anew, as the
        authors build a conversation's memory: in one remember()."""
        import cognee
        from cognee.modules.users.methods import get_default_user

        texts, windows = self.documents(conversation, sample)
        digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()
        done = self.folder(conversation) / "remembered.json"
        async with self.global_lock, self.lock(conversation):
            if done.is_file() and json.loads(done.read_text(encoding="utf-8")).get("digest") == digest:
                return  # a rerun: this exact memory is built
            done.unlink(missing_ok=True)
            await self._drop_dataset(conversation)
            user = await get_default_user()
            await cognee.remember(
                texts, dataset_name=self.dataset_name(conversation), user=user,
                chunk_size=int(self.settings["chunk_size"]),
                self_improvement=bool(self.settings["self_improvement"]),
            )  # fmt: skip
            done.write_text(json.dumps({"digest": digest, "windows": windows}), encoding="utf-8")

    def search(self, conversation: str, body: dict[str, Any], scope: str | None) -> list[dict[str, Any]]:
        return self.run(self._search(conversation, str(body["question"])), conversation, scope)

    async def _dataset(self, conversation: str) -> Any:
        from cognee.modules.data.methods import get_authorized_existing_datasets
        from cognee.modules.users.methods import get_default_user

        user = await get_default_user()
        found = await get_authorized_existing_datasets([self.dataset_name(conversation)], "read", user)
        return user, (found[0] if found else None)

    async def _search(self, conversation: str, question: str) -> list[dict[str, Any]]:
        from cognee.context_global_variables import set_database_global_context_variables
        from cognee.modules.retrieval.hybrid_retriever import HybridRetriever

        s = self.settings
        async with self.lock(conversation):
            user, dataset = await self._dataset(conversation)
            if dataset is None:
                return []
            async with set_database_global_context_variables(dataset.id, dataset.owner_id):
                kwargs: dict[str, Any] = {
                    "chunks_top_k": int(s["chunks_top_k"]), "entities_top_k": int(s["entities_top_k"]),
                    "facts_top_k": int(s["facts_top_k"]), "max_edges_per_entity": int(s["max_edges_per_entity"]),
                }  # fmt: skip
                if s["answer_by"] == "cognee":
                    kwargs["system_prompt"] = answer_prompt()
                retriever = HybridRetriever(**kwargs)
                objects = await retriever.get_retrieved_objects(query=question)
                context = await retriever.get_context_from_objects(query=question, retrieved_objects=objects)
                if not context:
                    return []
                text = str(context)
                if s["answer_by"] == "cognee":
                    answers = await retriever.get_completion_from_context(
                        query=question, retrieved_objects=objects, context=context
                    )
                    text = " ".join(str(a) for a in answers).strip()
        return [{"text": text, "turn_ids": self.turn_ids(conversation, objects), "kind": s["answer_by"]}]

    def turn_ids(self, conversation: str, objects: Any) -> list[str]:
        """The turns of the windows whose chunks the context shows (each window is one chunk)."""
        done = self.folder(conversation) / "remembered.json"
        if not done.is_file() or not isinstance(objects, dict):
            return []
        by_text = {w["text"].strip(): w["turn_ids"] for w in json.loads(done.read_text("utf-8"))["windows"]}
        ids: list[str] = []
        for chunk in objects.get("chunks") or []:
            payload = (
                chunk.get("payload", chunk) if isinstance(chunk, dict) else getattr(chunk, "payload", {})
            )
            text = str((payload or {}).get("text") or "").strip()
            ids.extend(by_text.get(text, []))
        return ids

    def delete(self, conversation: str) -> None:
        self.run(self._delete(conversation), conversation)

    async def _delete(self, conversation: str) -> None:
        async with self.global_lock, self.lock(conversation):
            await self._drop_dataset(conversation)
            folder = self.folder(conversation)
            shutil.rmtree(folder / "sessions", ignore_errors=True)
            (folder / "remembered.json").unlink(missing_ok=True)

    async def _drop_dataset(self, conversation: str) -> None:
        """Empty the conversation's dataset (if there is one) and move on to a new generation's: nothing
        of the old one can then be found, even if emptying it left something behind."""
        import cognee

        user, dataset = await self._dataset(conversation)
        if dataset is None:
            return
        with contextlib.suppress(Exception):  # best effort: see above
            await cognee.datasets.empty_dataset(dataset.id, user)
        folder = self.folder(conversation)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        marker = folder / "generation"
        generation = int(marker.read_text(encoding="utf-8").strip()) + 1 if marker.is_file() else 1
        marker.write_text(str(generation), encoding="utf-8")


def configure(settings: dict[str, Any]) -> None:
    """cognee's settings, as environment variables it reads at import: its folders inside ours, nothing
    leaving the machine except to the bridge, the authors' run settings (run_locomo_eval.child_env)."""
    data = Path(settings["data_dir"])
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    (data / "home").mkdir(mode=0o700, exist_ok=True)
    _BRIDGE.update(base=settings["bridge_base"], key=settings["bridge_key"])
    placeholder = settings["bridge_base"] + "_/v1"  # every call's base is set per request (route_calls)
    os.environ.update({
        "HOME": str(data / "home"),  # anything written to ~ stays in the service's folder
        "DATA_ROOT_DIRECTORY": str(data / "cognee_data"),
        "SYSTEM_ROOT_DIRECTORY": str(data / "cognee_system"),
        "CACHE_ROOT_DIRECTORY": str(data / "cognee_cache"),
        "TELEMETRY_DISABLED": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm would fetch its price list from GitHub
        "COGNEE_SKIP_CONNECTION_TEST": "true",  # its start-up probe calls would belong to no question
        "ENABLE_BACKEND_ACCESS_CONTROL": "true",  # a dataset's own databases: one per conversation
        "CACHING": "true", "AUTO_FEEDBACK": "false",
        "LOG_LEVEL": "ERROR", "COGNEE_LOG_FILE": "false", "COGNEE_CLI_MODE": "true",
        "LLM_PROVIDER": "openai", "LLM_MODEL": "openai/" + settings["model"],
        "LLM_ENDPOINT": placeholder, "LLM_API_KEY": settings["bridge_key"],
        "LLM_TEMPERATURE": str(settings["temperature"]),
        "EMBEDDING_PROVIDER": "openai", "EMBEDDING_MODEL": "openai/" + settings["embedding_model"],
        "EMBEDDING_ENDPOINT": placeholder, "EMBEDDING_API_KEY": settings["bridge_key"],
        "EMBEDDING_DIMENSIONS": str(int(settings["embedding_dims"])),
    })  # fmt: skip


class _PortLine:
    """stdout for the service: the `PORT <n>` line to the harness's pipe, everything else (cognee prints a
    banner and progress) to the log; the pipe is not read after that line, so nothing else may fill it."""

    def __init__(self) -> None:
        self.pipe = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)  # C-level writes to stdout go to the log as well

    def write(self, text: str) -> int:
        if self.pipe is not None and text.startswith("PORT "):
            self.pipe.write(text + ("" if text.endswith("\n") else "\n"))
            self.pipe.close()
            self.pipe = None  # type: ignore[assignment]
            return len(text)
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def main() -> None:
    sys.stdout = _PortLine()
    settings = read_settings()
    configure(settings)
    route_calls()
    import cognee  # noqa: F401 - a venv that cannot import it fails here, before the port is announced

    deterministic_ties()
    if not one_attempt():
        raise SystemExit("cognee: none of its retrying calls was found (another cognee than pinned?)")

    serve(settings, Service, "cognee", version("cognee"))


if __name__ == "__main__":
    main()
