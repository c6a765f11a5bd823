"""LangMem as a MemorySystem: each LOCOMO message into LangMem (see `ingest`); per question either the
speakers' namespaces searched (`retrieval: store`) or each speaker's agent asked the question, the paper's
way (`retrieval: agent`, see `ask`), one section per speaker.

One InMemoryStore per conversation (one namespace per speaker), built under the bridge route
`<sample_id>`: the chat model and the store's embedder are langchain-openai clients on that route, so
every call LangMem makes is served (cached, counted, retried, rate-limited) by the harness's client under
the stages `langmem_ingest` and `langmem_search`. The store is saved under `state_dir/<sample_id>/langmem/`
after ingest (see `persistence`) and restored from there by a later ingest or retrieve.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.timing import measure
from mem0bench.llm.types import TRANSIENT_KINDS, FailureKind
from mem0bench.memory.base import (
    IngestReport,
    RetrievedContext,
    SavedStore,
    StepFailure,
    SystemBase,
    SystemContext,
)
from mem0bench.memory.costs import (
    MEMORY_TOKENS,
    REPLY_TOKENS,
    CostPlan,
    MethodConfig,
    PlanLine,
)
from mem0bench.memory.ingest_progress import report_ingested
from mem0bench.memory.saved_state import ConversationLocks
from mem0bench.systems.external.bridge import LLMBridge
from mem0bench.systems.external.failure_kinds import failure_kind
from mem0bench.systems.external.langmem import determinism, persistence
from mem0bench.systems.external.langmem.ask import ask_agent
from mem0bench.systems.external.langmem.ingest import AgentIngest, ManagerIngest, message_text
from mem0bench.systems.external.langmem.library import Library, load_library
from mem0bench.systems.external.langmem.persistence import Annotation, Snapshot
from mem0bench.systems.external.langmem.render import Note, memory_text, render_sections
from mem0bench.systems.external.langmem.steplog import (
    Step,
    callback_handler,
    describe_exception,
    step,
)
from mem0bench.tokens import count_tokens

__all__ = ["LangMem"]

MODES = ("manager", "agent")
RETRIEVALS = ("store", "agent")
STORE_CLOCKS = ("session", "wall")
"""`method.store_clock`: what LangGraph's store stamps items with while a message is ingested (and the agent
sees in its prompt and tool results). `session` (our default): the message's session date; `wall`: the
machine's clock, as the reference ran (its requests then change from run to run: no LLM cache reuse)."""
ASK_REPLY_TOKENS = 64
"""Planned tokens of one agent's reply to a question (the paper's Table 2: ~127 for both speakers)."""
INGEST_STAGE = "langmem_ingest"
SEARCH_STAGE = "langmem_search"
FIXED_PROMPT_TOKENS = 1550
"""LangMem's instructions and the tool schemas trustcall binds (Memory, PatchDoc with its JSON-patch
examples): the fixed part of one extraction prompt, as measured (about 1,750 tokens a call on the test
fixture, message and shown memories included)."""


@dataclass
class _Memory:
    """A conversation's store and what we know of its memories."""

    store: Any
    keys: dict[str, str]
    """Speaker name -> namespace key ('speaker_a', 'speaker_b', or 'shared')."""
    annotations: dict[tuple[tuple[str, ...], str], Annotation] = field(default_factory=dict)
    threads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Agent ingest: each namespace key's thread (LangChain message dicts), for `retrieval: agent`."""


class LangMem(SystemBase):
    """LangMem's memory store manager (or its memory-tool agent, `mode: agent`) over LangGraph's
    InMemoryStore; per question the `top_k` memories of each speaker's namespace most similar to it (or
    each speaker's agent's reply to it, `retrieval: agent`)."""

    packages: tuple[str, ...] = ("langmem", "langgraph", "langchain-openai", "trustcall")

    def __init__(
        self,
        *,
        name: str = "langmem",
        mode: str = "manager",
        retrieval: str = "store",
        top_k: int = 10,
        query_limit: int = 5,
        enable_deletes: bool = False,
        per_speaker: bool = True,
        temperature: float | None = 0.0,
        agent_recursion_limit: int = 25,
        dates: bool = False,
        store_clock: str = "session",
        context: SystemContext,
    ) -> None:
        if store_clock not in STORE_CLOCKS:
            raise ValueError(
                f"langmem: store_clock must be one of {', '.join(STORE_CLOCKS)}, got {store_clock!r}"
            )
        if mode not in MODES:
            raise ValueError(f"langmem: mode must be one of {', '.join(MODES)}, got {mode!r}")
        if retrieval not in RETRIEVALS:
            raise ValueError(f"langmem: retrieval must be one of {', '.join(RETRIEVALS)}, got {retrieval!r}")
        for label, value in (("top_k", top_k), ("query_limit", query_limit), ("agent_recursion_limit", agent_recursion_limit)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"langmem: {label} must be an integer >= 1, got {value!r}")
        super().__init__()
        self.name = name
        self.mode = mode
        self.retrieval = retrieval
        self.top_k = top_k
        self.query_limit = query_limit
        self.enable_deletes = bool(enable_deletes)
        self.per_speaker = bool(per_speaker)
        self.temperature = None if temperature is None else float(temperature)
        self.agent_recursion_limit = agent_recursion_limit
        self.dates = bool(dates)
        self.store_clock = store_clock
        """Show the session date of the message that last wrote each memory: the harness's help (the
        library stores no such date and the paper's harness showed none), an option, off by default."""
        self.context = context
        self.bridge = LLMBridge(context.client)
        self._memories: dict[str, _Memory] = {}
        self._locks = ConversationLocks()

    def _clock(self, session_time: datetime) -> datetime | None:
        """What the store's clock reads for a message: its session time, or (None) the wall clock."""
        return session_time if self.store_clock == "session" else None

    # ------------------------------------------------------------------ plan

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """Manager mode: per message one extraction call (instructions, tool schemas, the message and up to
        `query_limit` related memories), one query embedding and about one memory embedding. Agent mode:
        assumed two chat calls per message (a tool call, then a reply) over a thread that grows with the
        speaker's messages (half of them on average), plus the prompt's and tools' searches."""
        turns = [count_tokens(t.text) + 20 for c in dataset.conversations for t in c.turns]
        n, tokens = len(turns), float(sum(turns))
        limit, top_k = int(method.get("query_limit", 5)), int(method.get("top_k", 10))
        if str(method.get("mode", "manager")) == "agent":
            # A speaker's message sees that speaker's thread so far (its messages, the agent's tool calls and
            # replies: ~60 tokens a message more), half of it on average: n_c/2 messages x S_c/4, x 2 speakers.
            thread = sum(
                len(c.turns) * sum(count_tokens(t.text) + 60 for t in c.turns) / 4
                for c in dataset.conversations
            )
            lines = [
                PlanLine("ingest", "agent turns (tool call + reply)", 2 * n,
                         2 * (n * (300 + 10 * MEMORY_TOKENS + FIXED_PROMPT_TOKENS // 2) + thread), 2 * n * REPLY_TOKENS["extract"]),
                PlanLine("ingest", "embeddings (prompt and tool searches, memories)", 3 * n, 3 * tokens, 0),
            ]  # fmt: skip
        else:
            lines = [
                PlanLine("ingest", "extraction (trustcall)", n,
                         n * (FIXED_PROMPT_TOKENS + limit * MEMORY_TOKENS) + tokens,
                         n * REPLY_TOKENS["extract"]),
                PlanLine("ingest", "embeddings (message query, memories)", 2 * n, tokens + n * MEMORY_TOKENS, 0),
            ]  # fmt: skip
        if str(method.get("retrieval", "store")) != "agent":
            return CostPlan(context_tokens=2 * top_k * MEMORY_TOKENS, lines=lines)
        # Agent retrieval: per question and speaker, two chat calls (a memory search, then the reply), each
        # carrying the speaker's whole thread (agent ingest: its messages with the agent's ~60 tokens of tool
        # traffic each, half the conversation), the prompt's 10 memories and the tools' schemas; the second
        # also the search result. Three embeddings: the prompt searches with the last message (the question,
        # then the tool's result), and the tool with its query.
        conversations = max(len(dataset.conversations), 1)
        thread = 0.0
        if str(method.get("mode", "manager")) == "agent":
            thread = sum(sum(count_tokens(t.text) + 60 for t in c.turns) / 2 for c in dataset.conversations)
            thread /= conversations
        per_call = thread + 10 * MEMORY_TOKENS + FIXED_PROMPT_TOKENS // 2 + 30
        asks = 2 * n_questions
        lines += [
            PlanLine("search", "agent asked the question (search, reply)", 2 * asks,
                     asks * (2 * per_call + top_k * MEMORY_TOKENS), asks * (20 + ASK_REPLY_TOKENS)),
            PlanLine("search", "embeddings (the prompt's searches, the tool's query)", 3 * asks,
                     asks * (30 + top_k * MEMORY_TOKENS), 0),
        ]  # fmt: skip
        return CostPlan(context_tokens=2 * ASK_REPLY_TOKENS, lines=lines, embeds_queries=False)

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """The saved store's memories, one store per namespace (`persistence.stores`)."""
        return persistence.stores(state_dir, sample_id)

    def ingest_units(self, conversation: Conversation) -> int:
        """Progress units: one per message."""
        return len(conversation.turns)

    # ------------------------------------------------------------------ building

    def _speaker_keys(self, conversation: Conversation) -> dict[str, str]:
        if not self.per_speaker:
            return {s: "shared" for s in conversation.speakers}
        return {conversation.speaker_a: "speaker_a", conversation.speaker_b: "speaker_b"}

    def _key_of(self, keys: dict[str, str], speaker: str) -> str:
        return keys.get(speaker, "shared" if not self.per_speaker else "speaker_b")

    async def _new_store(self, lib: Library, sample_id: str) -> Any:
        embeddings = lib.embeddings(
            base_url=self.bridge.base_url(sample_id),
            api_key=self.bridge.api_key,
            model=self.bridge.embedding_model,
        )
        return lib.store(embeddings=embeddings, dims=await self.bridge.embedding_dims())

    def _fingerprint(self, conversation: Conversation) -> str:
        settings = {
            "mode": self.mode, "query_limit": self.query_limit, "enable_deletes": self.enable_deletes,
            "per_speaker": self.per_speaker, "temperature": self.temperature,
        }  # fmt: skip
        if self.store_clock != "session":  # only then: a default ingest keeps its saved store
            settings["store_clock"] = self.store_clock
        if self.mode == "agent":
            settings["threads"] = True  # agent snapshots keep the threads (older ones did not: rebuilt)
        return conversation.fingerprint(settings)

    # ------------------------------------------------------------------ ingest

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Every message into LangMem in conversation order (or the saved store, if this conversation was
        ingested before with the same settings)."""
        lib = load_library()
        await self.bridge.start()
        sid = conversation.sample_id
        async with self._locks(sid):
            directory = persistence.folder(self.context.state_dir, sid)
            restored = await self._restore(lib, conversation)
            if restored is not None:
                meta = restored.meta
                details = {str(k): int(v) for k, v in dict(meta.get("details", {})).items()}
                return IngestReport(
                    sid, memory_tokens=meta.get("memory_tokens"), failures=details.get("failed_steps", 0),
                    details=details, restored=True,
                )  # fmt: skip
            persistence.clear(directory)
            memory = _Memory(store=await self._new_store(lib, sid), keys=self._speaker_keys(conversation))
            self._memories.pop(sid, None)
            failures, counts = await self._ingest_messages(lib, conversation, memory)
            self.failures.extend(failures)
            live = {(tuple(ns), k) for ns, items in memory.store._data.items() for k in items}
            memory.annotations = {where: a for where, a in memory.annotations.items() if where in live}
            self._memories[sid] = memory
            texts = self._all_texts(memory)
            details = {**counts, **self._per_speaker_counts(memory), "memories": len(texts)}
            memory_tokens = count_tokens("\n".join(texts)) if texts else 0
            if not any(f.kind in TRANSIENT_KINDS for f in failures):
                # A transient failure leaves no snapshot: the next ingest replays the conversation (the
                # cache makes the calls that succeeded free).
                meta = {"memory_tokens": memory_tokens, "details": details}
                snapshot = Snapshot(memory.annotations, meta, memory.threads)
                persistence.save(directory, memory.store, snapshot, self._fingerprint(conversation))
        return IngestReport(sid, memory_tokens=memory_tokens, failures=len(failures), details=details)

    async def _ingest_messages(
        self, lib: Library, conversation: Conversation, memory: _Memory
    ) -> tuple[list[StepFailure], dict[str, int]]:
        sid = conversation.sample_id
        model = lib.chat_model(
            base_url=self.bridge.base_url(sid), api_key=self.bridge.api_key, model=self.bridge.model,
            temperature=self.temperature,
        )  # fmt: skip
        callbacks = [callback_handler(lib.BaseCallbackHandler)]
        run: ManagerIngest | AgentIngest
        if self.mode == "agent":
            run = AgentIngest(lib, model=model, store=memory.store, thread=sid,
                              recursion_limit=self.agent_recursion_limit, callbacks=callbacks)  # fmt: skip
        else:
            run = ManagerIngest(lib, model=model, store=memory.store, query_limit=self.query_limit,
                                enable_deletes=self.enable_deletes, callbacks=callbacks)  # fmt: skip
        failures: list[StepFailure] = []
        counts: Counter[str] = Counter()
        index = 0
        async with self.bridge.scope(sid, stage=INGEST_STAGE) as scope:
            for session in conversation.sessions:
                for position, turn in enumerate(session.turns):
                    key = self._key_of(memory.keys, turn.speaker)
                    before = _versions(memory.store)
                    failed_calls = len(scope.failures)
                    when = self._clock(session.date_time + timedelta(seconds=position))
                    with step() as current, determinism.seeded(f"{sid}:{index}:{turn.dia_id}", when):
                        try:
                            await run(key, message_text(session.date_text, turn.speaker, turn.text))
                        except Exception as exc:  # the library gave up on this message: count it, go on
                            # A call that failed for good in our client (already recorded by the harness)
                            # names the kind; else it is the library's own error.
                            calls = scope.failures[failed_calls:]
                            kind = calls[0].kind if calls else failure_kind(exc)
                            message = describe_exception(exc)
                            failures.append(
                                self._failure(sid, turn.speaker, index, turn.dia_id, kind, message)
                            )
                    failures.extend(self._logged_failures(sid, turn.speaker, index, turn.dia_id, current))
                    counts["messages"] += 1
                    counts["chat_calls"] += current.chat_calls
                    if self.mode == "manager" and current.chat_calls > 1:
                        counts["extraction_retries"] += current.chat_calls - 1  # trustcall re-asked
                    for where in _changed(before, _versions(memory.store)):
                        memory.annotations[where] = Annotation(session.date_text, turn.dia_id, turn.speaker)
                    index += 1
                    report_ingested(1)
        if isinstance(run, AgentIngest):
            memory.threads = await run.threads()
        counts["failed_steps"] = len(failures)
        return failures, dict(counts)

    def _failure(
        self, sid: str, speaker: str, index: int, dia_id: str, kind: FailureKind, message: str
    ) -> StepFailure:
        stage = "langmem_agent" if self.mode == "agent" else "langmem_extract"
        return StepFailure(
            self.name, sid, stage, kind, message, speaker=speaker, pair_index=index, dia_ids=(dia_id,)
        )

    def _logged_failures(
        self, sid: str, speaker: str, index: int, dia_id: str, current: Step
    ) -> list[StepFailure]:
        return [self._failure(sid, speaker, index, dia_id, kind, text) for kind, text in _swallowed(current)]

    async def _restore(self, lib: Library, conversation: Conversation) -> Snapshot | None:
        sid = conversation.sample_id
        store = await self._new_store(lib, sid)
        snapshot = persistence.load(
            persistence.folder(self.context.state_dir, sid), store, self._fingerprint(conversation)
        )
        if snapshot is not None:
            self._memories[sid] = _Memory(
                store, self._speaker_keys(conversation), snapshot.annotations, snapshot.threads
            )
        return snapshot

    # ------------------------------------------------------------------ contents

    def _all_texts(self, memory: _Memory) -> list[str]:
        return [
            memory_text(item.value)
            for _, items in sorted(memory.store._data.items())
            for item in items.values()
        ]

    def _per_speaker_counts(self, memory: _Memory) -> dict[str, int]:
        out: dict[str, int] = {}
        for speaker, key in memory.keys.items():
            label = "memories:shared" if key == "shared" else f"memories:{speaker}"
            out[label] = len(memory.store._data.get(("memories", key), {}))
        return out

    # ------------------------------------------------------------------ retrieve

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """The context for a question, one 'Memories of <speaker>:' section per speaker: the namespace's
        `top_k` memories most similar to the question (`retrieval: store`), or the reply of the speaker's
        agent asked the question (`retrieval: agent`)."""
        sid = conversation.sample_id
        await self.bridge.start()
        memory = self._memories.get(sid)
        if memory is None:
            async with self._locks(sid):
                memory = self._memories.get(sid)
                if memory is None and await self._restore(load_library(), conversation) is None:
                    raise RuntimeError(f"langmem: conversation {sid} was not ingested")
                memory = self._memories[sid]
        if self.retrieval == "agent":
            return await self._ask_agents(conversation, question, memory)
        return await self._search_store(conversation, question, memory)

    async def _search_store(
        self, conversation: Conversation, question: Question, memory: _Memory
    ) -> RetrievedContext:
        """The `top_k` memories of each speaker's namespace most similar to the question (one query
        embedding), best first (dates only with `dates`)."""
        sid = conversation.sample_id
        lib = load_library()
        namespaces = sorted({("memories", key) for key in memory.keys.values()})
        owner = {key: speaker for speaker, key in memory.keys.items() if key != "shared"}
        notes: list[Note] = []
        sections: list[tuple[str | None, list[Note]]] = []
        with measure() as timing:
            try:
                async with self.bridge.scope(sid, stage=SEARCH_STAGE) as scope:
                    ops = [lib.SearchOp(ns, query=question.question, limit=self.top_k) for ns in namespaces]
                    results = await memory.store.abatch(ops)
            except Exception as exc:  # the query embedding failed for good: an empty context, counted
                kind = scope.failures[0].kind if scope.failures else failure_kind(exc)
                self.failures.append(
                    StepFailure(
                        self.name, sid, "langmem_search", kind, describe_exception(exc), qid=question.qid
                    )
                )
                results = []
            for namespace, hits in zip(namespaces, results, strict=False):
                found: list[Note] = []
                for item in hits:
                    ann = memory.annotations.get((tuple(item.namespace), item.key))
                    found.append(Note(memory_text(item.value), ann.date if ann else None,
                                      ann.dia_id if ann else None, item.score))  # fmt: skip
                found.sort(key=lambda n: n.score if n.score is not None else float("-inf"), reverse=True)
                sections.append((owner.get(namespace[1]), found))  # per speaker, as the paper's two agents
                notes += found
            text = render_sections(sections, dates=self.dates)
        return RetrievedContext(
            kind="notes",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=tuple(dict.fromkeys(n.dia_id for n in notes if n.dia_id)),
            search_latency_s=timing.latency_s,
            local_search_s=timing.local_s,
            items=len(notes),
        )

    async def _ask_agents(
        self, conversation: Conversation, question: Question, memory: _Memory
    ) -> RetrievedContext:
        """Each speaker's agent asked the question on its thread, one after the other as the paper's
        harness did; a reply is one note under its speaker's header. An agent that failed, or replied
        nothing, leaves its section out and is a counted failure (stage `langmem_ask`)."""
        sid = conversation.sample_id
        lib = load_library()
        model = lib.chat_model(
            base_url=self.bridge.base_url(sid), api_key=self.bridge.api_key, model=self.bridge.model,
            temperature=self.temperature,
        )  # fmt: skip
        owner = {key: speaker for speaker, key in memory.keys.items() if key != "shared"}
        last = conversation.sessions[-1]
        # The store's clock while an agent answers (it may write): just after the conversation's last message.
        when = self._clock(last.date_time + timedelta(seconds=len(last.turns)))
        sections: list[tuple[str | None, list[Note]]] = []
        with measure() as timing:
            async with self.bridge.scope(sid, stage=SEARCH_STAGE) as scope:
                for key in sorted(set(memory.keys.values())):
                    speaker = owner.get(key)
                    failed_calls = len(scope.failures)
                    reply, problems = "", []
                    with step() as current, determinism.seeded(f"{sid}:{question.qid}:{key}", when):
                        try:
                            reply = await ask_agent(
                                lib, model=model, store=memory.store, namespace=("memories", key),
                                thread=memory.threads.get(key, []), question=question.question,
                                recursion_limit=self.agent_recursion_limit,
                                callbacks=[callback_handler(lib.BaseCallbackHandler)],
                            )  # fmt: skip
                        except Exception as exc:  # the agent gave up (a call failed for good, a step limit)
                            calls = scope.failures[failed_calls:]
                            kind = calls[0].kind if calls else failure_kind(exc)
                            problems.append((kind, describe_exception(exc)))
                    problems += _swallowed(current)  # the step's log records are complete once it closed
                    if not reply and not problems:
                        problems.append(("empty", "the agent replied with no text"))
                    who = speaker or "shared"
                    self.failures.extend(
                        StepFailure(self.name, sid, "langmem_ask", kind, f"{who}: {text}", qid=question.qid)
                        for kind, text in problems
                    )
                    sections.append((speaker, [Note(reply, None, None, None)] if reply else []))
            text = render_sections(sections, dates=False)
        return RetrievedContext(
            kind="notes",
            text=text,
            tokens=count_tokens(text),
            search_latency_s=timing.latency_s,
            local_search_s=timing.local_s,
            items=sum(len(notes) for _, notes in sections),
        )

    async def aclose(self) -> None:
        await self.bridge.aclose()


def _swallowed(current: Step) -> list[tuple[FailureKind, str]]:
    """What the library swallowed in a step, (kind, message) each: what trustcall logged (tool calls that
    never validated, patches it could not apply: dropped), tool calls whose arguments were not JSON
    (ignored), and the agent's tool errors."""
    rows: list[tuple[FailureKind, str]] = []
    for logger, level, message in current.records:
        kind: FailureKind = (
            "malformed" if logger == "extraction" and level >= logging.ERROR else "library_error"
        )
        rows.append((kind, f"{logger}: {message}"[:500]))
    rows += [("library_error", f"tool: {message}") for message in current.tool_errors]
    rows += [("malformed", f"invalid tool call: {message}") for message in current.invalid_calls]
    return rows


def _versions(store: Any) -> dict[tuple[tuple[str, ...], str], Any]:
    return {
        (tuple(ns), key): item.updated_at for ns, items in store._data.items() for key, item in items.items()
    }


def _changed(before: dict[Any, Any], after: dict[Any, Any]) -> list[Any]:
    """The memories a message created or rewrote."""
    return [where for where, stamp in after.items() if before.get(where) != stamp]
