"""The one Protocol every system under test implements: Mem0, Mem0^g, RAG, full context, later adapters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, runtime_checkable

from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.types import FailureKind, as_failure_kind
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.memory.records import MemoryRecord
from mem0bench.memory.stream import message_pairs

if TYPE_CHECKING:
    from mem0bench.llm.client import LLMClient
    from mem0bench.prompts.files import PromptFile

__all__ = [
    "Bound",
    "ContextKind",
    "CountsRequests",
    "IngestReport",
    "MemorySystem",
    "OptionalMembers",
    "RetrievedContext",
    "SavedStore",
    "StepFailure",
    "SystemBase",
    "SystemContext",
    "declared_bound",
    "expects_empty_context",
    "ingest_units_of",
    "optional_member_problems",
    "prompt_files_of",
    "release_conversation",
    "request_counter",
    "saved_memories",
    "uses_graph_server",
]

Bound = Literal["ceiling", "floor"]


@dataclass(frozen=True)
class IngestReport:
    sample_id: str
    memory_tokens: int | None
    """Size of the memory store for this conversation in cl100k_base tokens (None where n/a)."""
    failures: int = 0
    details: dict[str, int] = field(default_factory=dict)
    restored: bool = False
    """True when the memory was reopened from a saved state (nothing ingested by this call): the attempt
    that built it keeps its ingest record, so the failures it recorded stay open until a retry fixes them
    (`failures` then repeats the saved count)."""


@dataclass(frozen=True)
class SystemContext:
    """What a system gets from the harness. Systems are built as
    `hydra.utils.instantiate(cfg.method, _partial_=True)(context=SystemContext(...))`."""

    client: LLMClient
    state_dir: Path
    """A folder of the run directory that belongs to this system (snapshots, operation logs)."""
    graph: Mapping[str, Any] = field(default_factory=dict)
    """The `graph` config group (backend, host, port, prefix); only Mem0^g reads it."""


@dataclass(frozen=True)
class StepFailure:
    """A step that failed inside a system's ingest or retrieve call (the call itself went on).

    An ingestion step names the stream's speaker and the message pair; a retrieval step names the
    question (`qid`). `to_dict` is the row the stream snapshots and failures.jsonl have always held.
    """

    system: str
    sample_id: str
    stage: str
    """The system's own step (extraction, update, summary, graph_entities, graph_query_entities, ...)."""
    kind: FailureKind
    message: str
    speaker: str | None = None
    pair_index: int | None = None
    dia_ids: tuple[str, ...] = ()
    fact: str | None = None
    qid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON row, keys in the order the files always had them."""
        if self.qid is not None:
            where: dict[str, Any] = {"qid": self.qid}
        else:
            where = {"speaker": self.speaker, "pair_index": self.pair_index, "dia_ids": list(self.dia_ids)}
        row = {"system": self.system, "sample_id": self.sample_id, **where}
        row.update(stage=self.stage, kind=self.kind, message=self.message)
        if self.fact is not None:
            row["fact"] = self.fact
        return row

    def detail(self) -> dict[str, Any]:
        """What failures.jsonl keeps under `detail`: the row less its stage, kind, message and sample."""
        return {k: v for k, v in self.to_dict().items() if k not in ("kind", "message", "stage", "sample_id")}

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> StepFailure:
        """A row read back from a stream snapshot (tolerant of a missing field, as older files may be)."""
        return cls(
            system=str(row.get("system", "")),
            sample_id=str(row.get("sample_id", "")),
            stage=str(row.get("stage", "unknown")),
            kind=as_failure_kind(row.get("kind")),
            message=str(row.get("message", "")),
            speaker=row.get("speaker"),
            pair_index=row.get("pair_index"),
            dia_ids=tuple(row.get("dia_ids") or ()),
            fact=row.get("fact"),
            qid=row.get("qid"),
        )


@runtime_checkable
class MemorySystem(Protocol):
    """Everything the pipeline uses of a system; `SystemBase` gives the defaults of all but ingest and
    retrieve."""

    name: str
    packages: tuple[str, ...]
    """Distributions the system runs on beyond mem0bench's own (a third-party library): run.json records
    their installed versions."""
    failures: list[StepFailure]
    """The steps that failed inside this process's ingest and retrieve calls, appended as they fail;
    the pipeline records each row once (the calls themselves do not raise for them)."""

    # Optional members (`OptionalMembers`) are read with their default when absent; `SystemBase` has
    # them all.

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Build the system's memory of one conversation. Idempotent: resumes from its state_dir."""
        ...

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """Build the answer context for one question about an ingested conversation."""
        ...

    async def aclose(self) -> None:
        """Release connections; awaited once after the run, also after an error."""
        ...

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """The dry run's estimate of this system's own calls (ingest and search) for `dataset`, built from
        the `method` config group without constructing the system."""
        ...


@dataclass(frozen=True)
class SavedStore:
    """One memory store of a conversation as a system saved it: what `mem0bench memories` shows."""

    name: str
    """Whose memories: a speaker's name, or "shared"."""
    slug: str
    """The store's folder-safe name (`--speaker` accepts it too)."""
    complete: bool
    """The store's done marker is there (an unfinished ingestion leaves none)."""
    memories: tuple[MemoryRecord, ...]
    history: Path | None = None
    """The store's operation log (MemoryOp rows, memory/records.py), where the system keeps one."""
    graph: Path | None = None
    """The store's graph snapshot folder (memory/graph), where the system keeps one."""


class CountsRequests(Protocol):
    """What `check-system` hooks to see the requests a system sends outside the harness's client."""

    on_request: Callable[[], None] | None


class OptionalMembers(Protocol):
    """The members a system may add to `MemorySystem`'s. SystemBase defines each with the default the
    harness assumes when a system leaves it out, and the harness reads each only through the function
    named beside it (below), so a system outside SystemBase may define any of them or none.
    docs/your_system.md lists them for system authors."""

    prompt_files: tuple[PromptFile, ...]
    """The prompt files the system's own calls use, recorded in run.json (`prompt_files_of`)."""
    empty_context_expected: bool
    """True for a system whose contexts are empty by design (`expects_empty_context`)."""
    bound: Bound | None
    """A reference row rather than a memory system (`declared_bound`)."""
    transport: CountsRequests | None
    """The client of a system that calls a service of its own (`request_counter`)."""

    def ingest_units(self, conversation: Conversation) -> int:
        """The progress units `ingest` reports for `conversation` with `report_ingested` (`ingest_units_of`;
        default: its message pairs)."""
        ...

    def release(self, sample_id: str) -> None:
        """Drop what this process holds of one conversation's memory (its saved state stays on disk): the
        run calls it once the conversation's questions are answered and judged, so a run over many
        haystacks holds the stores of the conversations in flight, not of all of them
        (`release_conversation`). A later `retrieve` of it loads the state again. Default: nothing held."""
        ...

    @staticmethod
    def uses_graph_server(graph: Mapping[str, Any]) -> bool:
        """Whether the system, given the `graph` config group, talks to a FalkorDB server, which the run
        then starts unless graph.host names one (`uses_graph_server`). Asked of the class, before any
        system is built."""
        ...

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        """The memories the system saved of one conversation under `state_dir` (a run's state/ folder),
        read without building the system, no LLM and no server: what `mem0bench memories` shows
        (`saved_memories`). [] when that conversation has none; None from a system that shows none."""
        ...


class SystemBase:
    """Defaults for a MemorySystem: no failed steps yet, nothing to close, no calls of its own."""

    name: str
    packages: tuple[str, ...] = ()
    prompt_files: tuple[PromptFile, ...] = ()
    """The prompt files the system's own calls use (recorded in run.json)."""
    empty_context_expected: bool = False
    """True for a system whose contexts are empty by design (the no-memory floor). Recorded in run.json,
    so aggregating the run, then or later, does not mistake its empty contexts for lost memories."""
    bound: Bound | None = None
    """A reference row rather than a memory system: "ceiling" (given the evidence) or "floor" (given
    nothing). Recorded in run.json; the report marks such rows as bounds."""
    transport: CountsRequests | None = None
    """None: every request the system makes goes through the harness's client."""

    def __init__(self) -> None:
        self.failures: list[StepFailure] = []

    async def aclose(self) -> None:
        return None

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        return CostPlan(context_tokens=0.0)

    def ingest_units(self, conversation: Conversation) -> int:
        return len(message_pairs(conversation))

    def release(self, sample_id: str) -> None:
        return None

    @staticmethod
    def uses_graph_server(graph: Mapping[str, Any]) -> bool:
        return False

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        return None


# The one place the harness asks a system for an optional member (`OptionalMembers`): each function
# gives the member's default when the system leaves it out or gives a value of another type.


def prompt_files_of(system: object) -> tuple[PromptFile, ...]:
    """The prompt files the system's own calls use (`prompt_files`), else ()."""
    return tuple(getattr(system, "prompt_files", None) or ())


def declared_bound(system: object) -> Bound | None:
    """The bound `system` declares itself (`bound`: "ceiling" or "floor"), else None."""
    bound = getattr(system, "bound", None)
    return "ceiling" if bound == "ceiling" else "floor" if bound == "floor" else None


def expects_empty_context(system: object) -> bool:
    """Whether `system` declares that it retrieves nothing by design (`empty_context_expected`). A system
    outside SystemBase that does not say is taken to retrieve something: its empty contexts are warned of."""
    return getattr(system, "empty_context_expected", False) is True


def ingest_units_of(system: object, conversation: Conversation) -> int:
    """The units a system will report for a conversation (`ingest_units`), else the conversation's message
    pairs (each counted once); at least 1."""
    own = getattr(system, "ingest_units", None)
    return max(int(own(conversation)) if callable(own) else len(message_pairs(conversation)), 1)


def release_conversation(system: object, sample_id: str) -> None:
    """Let the system drop its in-memory store of a finished conversation (`release`), where it has one."""
    release = getattr(system, "release", None)
    if callable(release):
        release(sample_id)


def uses_graph_server(system_class: type, graph: Mapping[str, Any]) -> bool:
    """Whether the system class, given the graph config group, talks to a FalkorDB server."""
    uses = getattr(system_class, "uses_graph_server", None)
    return bool(uses(graph)) if callable(uses) else False


def request_counter(system: object) -> CountsRequests | None:
    """The system's own client, when it has one with an `on_request` hook (`transport`), else None."""
    transport = getattr(system, "transport", None)
    return cast("CountsRequests", transport) if hasattr(transport, "on_request") else None


def saved_memories(system_class: type, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
    """What `system_class` saved of one conversation (`saved_memories`); None when it shows nothing."""
    read = getattr(system_class, "saved_memories", None)
    if not callable(read):
        return None
    stores = read(state_dir, sample_id)
    return None if stores is None else list(stores)


def optional_member_problems(system: object) -> list[str]:
    """What is wrong with the optional members `system` defines, one sentence each (`check-system` prints
    them: the readers above would otherwise take a wrong value for the default without a word)."""
    problems = []
    bound = getattr(system, "bound", None)
    if bound is not None and declared_bound(system) is None:
        problems.append(f'`bound` must be "ceiling", "floor" or None, not {bound!r}')
    if not isinstance(getattr(system, "empty_context_expected", False), bool):
        problems.append("`empty_context_expected` must be True or False")
    if not isinstance(getattr(system, "prompt_files", ()), tuple):
        problems.append("`prompt_files` must be a tuple of PromptFile (() for none)")
    for member, owner in (("ingest_units", system), ("release", system), ("uses_graph_server", type(system))):
        if not callable(getattr(owner, member, len)):
            problems.append(f"`{member}` must be a method")
    if not callable(getattr(type(system), "saved_memories", len)):
        problems.append("`saved_memories` must be a classmethod")
    transport = getattr(system, "transport", None)
    if transport is not None and request_counter(system) is None:
        problems.append("`transport` must have an `on_request` attribute (or be None)")
    return problems
