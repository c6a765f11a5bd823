"""Zep's open-source engine, graphiti-core, on FalkorDB, as a MemorySystem.

Ingestion follows Zep's own LOCOMO harness (getzep/zep-papers, `zep_locomo_ingestion.py`): every message is
one episode, `"<speaker>: <text>"` (captions are folded into the text by the loader, as for every system),
added in order with its session's date as graphiti's `reference_time`, all messages of a conversation in
one group (graph partition). Retrieval follows both references (Zep's `zep_locomo_search.py`, the Mem0
paper's `evaluation/src/zep/search.py`): the 20 best edges (facts), reranked by a cross-encoder (graphiti's
own, `OpenAIRerankerClient`, through the bridge), and the 20 best nodes (entities) by RRF, rendered as facts
with their validity periods and entity summaries; `method.reranker=rrf` (or `mmr`) reranks without a
model (docs/systems/zep_graphiti.md).

Every LLM and embedding call graphiti makes goes to the harness's LLM bridge (cached, counted, retried by
the harness's client). graphiti is async: it runs on the harness's event loop, which also serves the bridge.
A conversation's clients (LLM, embedder, reranker: one OpenAI client on the route `sample_id`) are built
when its graph is opened, over the run's one HTTP pool from the bridge, whose requests name their
(stamped) bridge scope: a conversation's questions search at once, each call on its own question's usage,
and no search builds a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2

from mem0bench.common.errors import exception_chain
from mem0bench.data.model import Conversation, Dataset, Question, Turn
from mem0bench.llm.timing import measure
from mem0bench.llm.types import TRANSIENT_KINDS, LLMCallError
from mem0bench.memory.base import IngestReport, RetrievedContext, StepFailure, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig, PlanLine
from mem0bench.memory.graph.credentials import password_for
from mem0bench.memory.ingest_progress import report_ingested
from mem0bench.memory.saved_state import ConversationLocks, DoneMarker, conversation_folder
from mem0bench.systems.external.bridge import BridgeScope, LLMBridge
from mem0bench.systems.external.failure_kinds import failure_kind
from mem0bench.systems.external.support import LibraryLog
from mem0bench.systems.external.zep_graphiti import library
from mem0bench.systems.external.zep_graphiti.render import FACT_DATES, render_context
from mem0bench.tokens import count_tokens

__all__ = ["ZepGraphiti"]

INGEST_STAGE = "graphiti_ingest"
SEARCH_STAGE = "graphiti_search"
RERANK_STAGE = "graphiti_rerank_search"
"""The cross-encoder's calls (one per candidate fact), apart from the query embedding; the bridge wants the
pipeline stage they serve last."""
RERANKERS = ("cross_encoder", "rrf", "mmr")
"""`method.reranker`: the first, the references' cross-encoder over edges, is the default."""
LIBRARY_LOG = LibraryLog(["graphiti_core"])
"""graphiti logs what it could not use (ids, dates) at WARNING; counted per conversation, not printed."""
MARKER = "graphiti.json"
MAX_CONNECTIONS = 16  # FalkorDB connections per conversation's graphiti
_FORMAT = 1

# Dry-run figures (see cost_plan): graphiti's calls per message, measured on the stand-in's replies
# (conv-26: 2,944 chat calls of ~1,770 prompt tokens and 1,608 embedding calls for 419 messages).
# Completions are a guess: the stand-in's are short, a real model's facts and summaries are not.
CALLS_PER_MESSAGE = 7.0
PROMPT_TOKENS_PER_CALL = 1800.0
COMPLETION_TOKENS_PER_CALL = 120.0
EMBED_CALLS_PER_MESSAGE = 3.8
LINE_TOKENS = 30.0  # one rendered fact or entity line
# The cross-encoder: graphiti scores every candidate fact of a search (the RRF fusion of the BM25 and
# cosine hits, cut at 2 x edge_limit) with one call; a LOCOMO conversation's graph holds hundreds of facts,
# so a search nearly always has the full 2 x edge_limit. Each call: ~55 tokens of fixed instructions, the
# fact and the question (~100 in all, cl100k), one completion token.
CANDIDATES_PER_LIMIT = 2
RERANK_PROMPT_TOKENS = 100.0


class ZepGraphiti(SystemBase):
    """graphiti-core on FalkorDB: one episode per message, one graph per conversation."""

    packages: tuple[str, ...] = ("graphiti-core", "falkordb")

    @staticmethod
    def uses_graph_server(graph: Mapping[str, Any]) -> bool:
        """Always on FalkorDB (the run starts one if no graph.host is set)."""
        return True

    def __init__(
        self,
        *,
        name: str = "zep_graphiti",
        edge_limit: int = 20,
        node_limit: int = 20,
        reranker: str = "cross_encoder",
        mmr_lambda: float = 0.5,
        fact_dates: str = "range",
        library_temperature: str | float = "default",
        context: SystemContext,
    ) -> None:
        super().__init__()
        if fact_dates not in FACT_DATES:
            raise ValueError(
                f"zep_graphiti: fact_dates must be one of {', '.join(FACT_DATES)}, not {fact_dates!r}"
            )
        for label, value in (("edge_limit", edge_limit), ("node_limit", node_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"zep_graphiti: {label} must be an integer >= 0, got {value!r}")
        if reranker not in RERANKERS:
            raise ValueError(
                f"zep_graphiti: reranker must be one of {', '.join(RERANKERS)}, not {reranker!r}"
            )
        if not 0.0 <= float(mmr_lambda) <= 1.0:
            raise ValueError(f"zep_graphiti: mmr_lambda must be in [0, 1], got {mmr_lambda!r}")
        self._clients = library.load()  # ConfigurationError naming the extra when graphiti is missing
        self.name = name
        self.edge_limit, self.node_limit = edge_limit, node_limit
        self.reranker, self.mmr_lambda = reranker, float(mmr_lambda)
        self.fact_dates = fact_dates
        self.library_temperature = _library_temperature(library_temperature)
        """graphiti's extraction calls' temperature: None, graphiti's own default (1); else this value."""
        self.context = context
        self.bridge = LLMBridge(context.client)
        self.graph_config: dict[str, Any] = dict(context.graph or {})
        self._host, self._port = library.address(self.graph_config)
        self._tag = library.run_tag(self.graph_config, context.state_dir)
        self._graphs: dict[str, Any] = {}  # sample_id -> Graphiti
        self._search_clients: dict[str, Any] = {}  # sample_id -> its GraphitiClients with the reranker
        # The bridge's HTTP pool, which every conversation's OpenAI client shares.
        self._http: httpx2.AsyncClient | None = None
        self._episodes: dict[str, dict[str, str]] = {}  # sample_id -> episode uuid -> dia_id
        self._current: dict[str, tuple[int, Turn]] = {}  # sample_id -> the message being ingested
        self._recorded: set[int] = set()  # ids of exceptions already recorded as a failed call
        self._locks = ConversationLocks()
        self._scopes: dict[str, tuple[BridgeScope, int]] = {}  # sample_id -> ingest scope, failures seen
        self._admin: Any = None  # an async FalkorDB client for dropping and listing graphs
        self._dims: int | None = None

    # ---- plan -----------------------------------------------------------------------------------------

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """Per message ~7 chat calls (entities, their resolution, facts, fact resolution, timestamps,
        summaries) of ~1,800 prompt tokens and ~3.8 embedding calls (measured on the stand-in; a real
        model's count grows with the facts per message); per question one query embedding and, with the
        cross-encoder, one one-token chat call per candidate fact: 2 x edge_limit (40)."""
        messages = float(sum(len(c.turns) for c in dataset.conversations))
        calls = messages * CALLS_PER_MESSAGE
        lines = [
            PlanLine("ingest", "graphiti extraction + resolution", calls, calls * PROMPT_TOKENS_PER_CALL,
                     calls * COMPLETION_TOKENS_PER_CALL),
            PlanLine("ingest", "graphiti embeddings", messages * EMBED_CALLS_PER_MESSAGE, messages * 60, 0),
        ]  # fmt: skip
        edge_limit = int(method.get("edge_limit", 20))
        if method.get("reranker", RERANKERS[0]) == "cross_encoder":
            reranks = n_questions * CANDIDATES_PER_LIMIT * edge_limit
            what = f"graphiti rerank ({CANDIDATES_PER_LIMIT * edge_limit}/question)"
            lines.append(PlanLine("search", what, reranks, reranks * RERANK_PROMPT_TOKENS, reranks))
        items = edge_limit + int(method.get("node_limit", 20))
        return CostPlan(context_tokens=items * LINE_TOKENS, lines=lines)

    def ingest_units(self, conversation: Conversation) -> int:
        """The ingest bar counts messages (one episode each)."""
        return len(conversation.turns)

    # ---- layout -----------------------------------------------------------------------------------------

    def state_path(self, sample_id: str) -> Path:
        return conversation_folder(self.context.state_dir, sample_id, "zep_graphiti")

    def _marker(self, sample_id: str) -> DoneMarker:
        return DoneMarker(self.state_path(sample_id) / MARKER, _FORMAT)

    def _fingerprint(self, conversation: Conversation) -> str:
        """What the saved graph (and its recorded size) was built with; the defaults add nothing, so a
        default run keeps the graphs it saved before these settings existed."""
        settings: dict[str, Any] = {}
        if self.library_temperature is not None:
            settings["library_temperature"] = self.library_temperature
        if self.fact_dates != "range":
            settings["fact_dates"] = self.fact_dates  # the memory's size is measured as rendered
        return conversation.fingerprint(settings)

    def group_id(self, sample_id: str) -> str:
        return library.group_id(self.graph_config, self._tag, sample_id)

    async def _admin_db(self) -> Any:
        if self._admin is None:
            await library.ping(self._host, self._port)
            from falkordb.asyncio import FalkorDB

            self._admin = FalkorDB(
                host=self._host, port=self._port, password=password_for(self._host, self._port)
            )
        return self._admin

    async def _embedding_dims(self) -> int:
        if self._dims is None:
            self._dims = int(await self.bridge.embedding_dims())
        return self._dims

    def _http_pool(self) -> httpx2.AsyncClient:
        """The run's one HTTP pool for graphiti's OpenAI clients (the bridge's: it stamps each request with
        the scope open where it is made). Closed in `aclose`, never by a conversation's clients."""
        if self._http is None:
            self._http = self.bridge.async_http_client(self._clients.TIMEOUT_S)
        return self._http

    async def _open(self, sample_id: str) -> Any:
        """This conversation's Graphiti: its FalkorDB graph and one OpenAI client on the bridge route
        `sample_id` for its LLM client, embedder and reranker. The Graphiti's own cross-encoder refuses
        (ingestion never reranks); the searches use `_search_clients[sample_id]`, which holds the reranker.
        Built here, once per conversation, so that a timed search builds nothing."""
        from graphiti_core import Graphiti

        old = self._graphs.pop(sample_id, None)
        if old is not None:
            await old.close()
            with contextlib.suppress(Exception):
                await old.driver.client.connection.connection_pool.disconnect()
        clients = self._clients
        openai_client = clients.openai_client(
            self.bridge.base_url(sample_id), self.bridge.api_key, self._http_pool()
        )
        # The driver's default database is the group's graph, so graphiti never clones the driver per call.
        # Its own client opens a connection per concurrent query without limit: with every question of a
        # conversation searching at once that exhausted the server's connections ("Too many connections").
        # A blocking pool makes queries wait for one of `MAX_CONNECTIONS` instead.
        driver = clients.GuardedFalkorDriver(
            falkor_db=library.falkordb_client(self._host, self._port, MAX_CONNECTIONS),
            database=self.group_id(sample_id),
        )
        init = getattr(driver, "_init_task", None)
        if init is not None:
            await init  # graphiti schedules its index creation on the loop; let it finish first
        graphiti = Graphiti(
            graph_driver=driver,
            llm_client=clients.BridgeLLMClient(
                client=openai_client,
                model=self.bridge.model,
                on_error=lambda error: self._call_failed(sample_id, error),
                temperature=self.library_temperature,
            ),
            embedder=clients.make_embedder(
                openai_client, self.bridge.embedding_model, await self._embedding_dims()
            ),
            cross_encoder=clients.DisabledCrossEncoder(),
        )
        reranker = clients.make_reranker(openai_client, self.bridge.model)
        self._search_clients[sample_id] = graphiti.clients.model_copy(update={"cross_encoder": reranker})
        self._graphs[sample_id] = graphiti
        return graphiti

    # ---- ingest -----------------------------------------------------------------------------------------

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Add every message as an episode, in order; or find the graph a finished ingest left."""
        await self.bridge.start()
        sid = conversation.sample_id
        async with self._locks(sid):
            restored = await self._restore(conversation)
            if restored is not None:
                return restored
            return await self._ingest(conversation)

    async def _restore(self, conversation: Conversation) -> IngestReport | None:
        sid = conversation.sample_id
        meta = self._marker(sid).read(self._fingerprint(conversation))
        if meta is None:
            return None
        if not await library.graph_exists(await self._admin_db(), self.group_id(sid)):
            return None  # the server lost it (restarted): build it again
        await self._open(sid)
        self._episodes[sid] = dict(meta["episodes"])
        return IngestReport(
            sample_id=sid,
            memory_tokens=meta.get("memory_tokens"),
            failures=int(meta.get("failures", 0)),
            details=dict(meta.get("details", {})),
            restored=True,
        )

    async def _ingest(self, conversation: Conversation) -> IngestReport:
        from graphiti_core.nodes import EpisodeType

        sid, gid = conversation.sample_id, self.group_id(conversation.sample_id)
        self._marker(sid).withdraw()
        await library.drop_graph(await self._admin_db(), gid)  # a re-ingest starts from an empty graph
        graphiti = await self._open(sid)
        episodes: dict[str, str] = {}
        self._episodes[sid] = episodes
        first_row = len(self.failures)
        counts: Counter[str] = Counter(episodes=0, episodes_failed=0)
        source = f"chat between {conversation.speaker_a} and {conversation.speaker_b}"
        with LIBRARY_LOG.capture() as warnings:
            async with self.bridge.scope(sid, stage=INGEST_STAGE, stamped=True) as scope:
                self._scopes[sid] = (scope, 0)
                index = 0
                for session in conversation.sessions:
                    when = session.date_time
                    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when
                    for turn in session.turns:
                        self._current[sid] = (index, turn)
                        try:
                            result = await graphiti.add_episode(
                                name=turn.dia_id,
                                episode_body=f"{turn.speaker}: {turn.text}",
                                source_description=f"{source}, session {session.index}",
                                reference_time=when,
                                source=EpisodeType.message,
                                group_id=gid,
                            )
                        except Exception as exc:
                            counts["episodes_failed"] += 1
                            self._episode_failed(sid, index, turn, exc)
                        else:
                            counts["episodes"] += 1
                            episodes[result.episode.uuid] = turn.dia_id
                        index += 1
                        report_ingested(1)
                self._current.pop(sid, None)
                self._scopes.pop(sid, None)
        rows = self.failures[first_row:]
        counts["llm_calls_failed"] = sum(1 for r in rows if r.stage != "add_episode")
        counts["library_warnings"] = len(warnings)
        counts["exact_name_lookups_skipped"] = int(graphiti.driver.skipped_names)
        report = await self._summarize(sid, graphiti, counts, len(rows))
        self._save(conversation, report, episodes, complete=not any(r.kind in TRANSIENT_KINDS for r in rows))
        return report

    async def _summarize(self, sid: str, graphiti: Any, counts: Counter[str], failures: int) -> IngestReport:
        """Counts of what graphiti stored, and the store's size as the answer prompt would render it."""
        gid = self.group_id(sid)
        driver = graphiti.driver
        # Only what the rendering needs (graphiti's own getters also read every embedding back).
        edge_rows, _, _ = await driver.execute_query(
            "MATCH (:Entity)-[e:RELATES_TO]->(:Entity) WHERE e.group_id = $group_id "
            "RETURN e.fact AS fact, e.valid_at AS valid_at, e.invalid_at AS invalid_at, "
            "e.expired_at AS expired_at ORDER BY e.created_at",
            group_id=gid,
        )
        node_rows, _, _ = await driver.execute_query(
            "MATCH (n:Entity) WHERE n.group_id = $group_id RETURN n.name AS name, n.summary AS summary "
            "ORDER BY n.created_at",
            group_id=gid,
        )
        edges = [
            SimpleNamespace(
                fact=str(r["fact"] or ""),
                valid_at=_when(r["valid_at"]),
                invalid_at=_when(r["invalid_at"]),
                expired_at=_when(r["expired_at"]),
            )
            for r in edge_rows
        ]
        nodes = [
            SimpleNamespace(name=str(r["name"] or ""), summary=str(r["summary"] or "")) for r in node_rows
        ]
        counts["facts"] = len(edges)
        counts["facts_invalidated"] = sum(
            1 for e in edges if e.invalid_at is not None or e.expired_at is not None
        )
        counts["entities"] = len(nodes)
        return IngestReport(
            sample_id=sid,
            memory_tokens=count_tokens(render_context(edges, nodes, self.fact_dates)),
            failures=failures,
            details={k: int(v) for k, v in sorted(counts.items())},
        )

    def _save(
        self, conversation: Conversation, report: IngestReport, episodes: dict[str, str], *, complete: bool
    ) -> None:
        """The marker a later process restores from; none after a transient failure (the next run redoes it)."""
        if not complete:
            return
        meta = {
            "group_id": self.group_id(conversation.sample_id),
            "falkordb": f"{self._host}:{self._port}",
            "episodes": episodes,
            "memory_tokens": report.memory_tokens,
            "failures": report.failures,
            "details": report.details,
        }
        self._marker(conversation.sample_id).write(self._fingerprint(conversation), meta, indent=1)

    # ---- failures ---------------------------------------------------------------------------------------

    def _call_failed(self, sample_id: str, error: Any) -> None:
        """A failed LLM call of graphiti's (it may go on without it): one row, stage = graphiti's prompt."""
        self._recorded.add(id(error.error))
        index, turn = self._current.get(sample_id, (None, None))
        kind, message = error.kind, error.message
        scope, seen = self._scopes.get(sample_id, (None, 0))
        if scope is not None and len(scope.failures) > seen:
            # The harness's client gave up on this call: its kind is exact (the bridge's HTTP status
            # folds several kinds into one).
            failure = scope.failures[-1]
            kind, message = failure.kind, failure.message
            self._scopes[sample_id] = (scope, len(scope.failures))
        self.failures.append(
            StepFailure(
                system=self.name,
                sample_id=sample_id,
                stage=error.prompt,
                kind=kind,
                message=message,
                speaker=turn.speaker if turn else None,
                pair_index=index,
                dia_ids=(turn.dia_id,) if turn else (),
            )
        )

    def _episode_failed(self, sample_id: str, index: int, turn: Turn, exc: BaseException) -> None:
        """add_episode raised: the message is lost. One row, unless the failed call behind it has one."""
        if not any(id(e) in self._recorded for e in exception_chain(exc)):
            self.failures.append(
                StepFailure(
                    system=self.name,
                    sample_id=sample_id,
                    stage="add_episode",
                    kind=failure_kind(exc),
                    message=" ".join(f"{type(exc).__name__}: {exc}".split())[:300],
                    speaker=turn.speaker,
                    pair_index=index,
                    dia_ids=(turn.dia_id,),
                )
            )
        check = getattr(getattr(self.context.client, "reachability", None), "check", None)
        if callable(check):
            check()  # the server was declared down: stop here, as every other stage does

    # ---- retrieve ---------------------------------------------------------------------------------------

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        """The best `edge_limit` facts and `node_limit` entities for the question (one query embedding)."""
        await self.bridge.start()
        sid = conversation.sample_id
        graphiti = self._graphs.get(sid)
        if graphiti is None:
            async with self._locks(sid):
                if await self._restore(conversation) is None:
                    raise RuntimeError(f"{self.name}: conversation {sid} was not ingested")
            graphiti = self._graphs[sid]
        with measure() as t:
            # The query embedding, then the searches (whose only model calls are the reranker's), each in
            # its own ledger stage. Stamped scopes: the conversation's questions search at once on its
            # route, and each request names its question's scope.
            async with self.bridge.scope(sid, stage=SEARCH_STAGE, stamped=True) as scope:
                with _failing_in(scope):
                    vector = await graphiti.embedder.create(input_data=[question.question.replace("\n", " ")])
            async with self.bridge.scope(sid, stage=RERANK_STAGE, stamped=True) as scope:
                with _failing_in(scope):
                    edges, nodes = await self._search(sid, question.question, vector)
            text = render_context(edges, nodes, self.fact_dates)
        episodes = self._episodes.get(sid, {})
        dia_ids = tuple(dict.fromkeys(episodes[u] for e in edges for u in e.episodes if u in episodes))
        return RetrievedContext(
            kind="notes",
            text=text,
            tokens=count_tokens(text),
            source_dia_ids=dia_ids,
            search_latency_s=t.latency_s,
            local_search_s=t.local_s,
            items=len(edges) + len(nodes),
        )

    async def _search(self, sid: str, query: str, vector: Sequence[float]) -> tuple[list[Any], list[Any]]:
        """Edges and nodes in two searches, as both references made two (one per scope), with the
        conversation's clients (the edge search's cross-encoder calls go out in the caller's scope)."""
        from graphiti_core.search.search import search
        from graphiti_core.search.search_filters import SearchFilters

        from mem0bench.systems.external.zep_graphiti.search import edge_config, node_config

        clients = self._search_clients[sid]
        gid = self.group_id(sid)
        jobs = []
        for config in (
            edge_config(self.reranker, self.edge_limit, self.mmr_lambda),
            node_config(self.reranker, self.node_limit, self.mmr_lambda),
        ):
            jobs.append(search(clients, query, [gid], config, SearchFilters(), query_vector=list(vector)))
        edge_results, node_results = await asyncio.gather(*jobs)
        return list(edge_results.edges), list(node_results.nodes)

    # ---- close ------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        for graphiti in self._graphs.values():
            with contextlib.suppress(Exception):
                await graphiti.close()
            with contextlib.suppress(Exception):  # our pool: the client does not close what it was given
                await graphiti.driver.client.connection.connection_pool.disconnect()
        self._graphs.clear()
        self._search_clients.clear()
        if self._http is not None:  # after the graphs: their clients' requests went through it
            with contextlib.suppress(Exception):
                await self._http.aclose()
            self._http = None
        if self._admin is not None:
            with contextlib.suppress(Exception):
                await self._admin.connection.aclose()
            self._admin = None
        await self.bridge.aclose()


@contextlib.contextmanager
def _failing_in(scope: BridgeScope) -> Iterator[None]:
    """The first call of `scope` that failed for good when the harness's client gave up, else graphiti's
    (or FalkorDB's) exception as a local error: the question fails and a rerun retries it."""
    try:
        yield
    except LLMCallError:
        raise
    except Exception as exc:
        raise scope.error(exc, "graphiti search") from exc


def _library_temperature(value: str | float) -> float | None:
    """`method.library_temperature`: "default" (graphiti's own, 1) -> None, else a number in [0, 2]."""
    if value == "default":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not 0.0 <= number <= 2.0:
        raise ValueError(
            f"zep_graphiti: library_temperature must be 'default' or a number in [0, 2], got {value!r}"
        )
    return number


def _when(value: Any) -> datetime | None:
    """A date graphiti stored in FalkorDB (an ISO string), or None."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None
