"""Bring your own system: the examples in examples/ pass check-system and run end to end, the HTTP
system keeps the harness's rules, and check-system names what a broken system gets wrong.

The examples are imported from their folders (sys.path / PYTHONPATH), never installed into mem0bench;
the pip package example is installed into a temporary target folder.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from devtools.e2e import FAST, REPO, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.common.errors import ConfigurationError
from mem0bench.conformance.checks import CHECKS, run_checks
from mem0bench.conformance.fixture import fixture
from mem0bench.conformance.targets import class_target, http_target
from mem0bench.data.model import Conversation, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.reachability import ServerUnreachable
from mem0bench.llm.settings import LLMSettings
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, PlanLine
from mem0bench.systems.external.http_system import HttpSystem
from mem0bench.tokens import count_tokens

EXAMPLES = REPO / "examples"
KEYWORD = EXAMPLES / "keyword_memory"


def _service_module() -> ModuleType:
    """examples/http_service/service.py, loaded from its file (it is not a package of the product)."""
    spec = importlib.util.spec_from_file_location(
        "mem0bench_example_http_service", EXAMPLES / "http_service" / "service.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def reference_service():
    service = _service_module().Service(0)
    thread = threading.Thread(target=service.serve_forever, daemon=True)
    thread.start()
    yield service
    service.shutdown()
    service.server_close()


def _env(server: StandinServer, tmp_path: Path, *paths: Path) -> dict[str, str]:
    env = cli_env(server.base_url, tmp_path / "cache")
    env["PYTHONPATH"] = ":".join(str(p) for p in (*paths, REPO))
    return env


def _run(
    tmp_path: Path, server: StandinServer, locomo: Path, args: list[str], *paths: Path, name: str = "run"
):
    run_dir = tmp_path / name
    argv = ["run", *args, f"dataset.path={locomo}", "dataset.conversations=[mini-1]", "eval.max_questions=4",
            "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
    result = run_cli(argv, _env(server, tmp_path, *paths))
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


def _assert_scored(run_dir: Path, method: str) -> dict[str, Any]:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["method"] == method and metrics["n_questions"] == 4
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 4 and all(not r.get("failure") for r in rows)
    assert all(r["context_tokens"] > 0 for r in rows)  # the system's context reached the answer prompt
    return metrics


def _all_hold(results) -> None:
    assert [r.name for r in results] == list(CHECKS)
    assert all(r.ok for r in results), "\n".join(f"{r.name}: {r.detail}" for r in results if not r.ok)


# ---- check-system on the three examples ---------------------------------------------------------------


def test_keyword_memory_passes_check_system(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(KEYWORD))
    _all_hold(asyncio.run(run_checks(class_target("keyword_memory.KeywordMemory", {"k": 3}), tmp_path)))


def test_reference_service_passes_check_system(tmp_path, reference_service):
    _all_hold(asyncio.run(run_checks(http_target(reference_service.url, {}), tmp_path)))


@pytest.mark.slow
def test_check_system_command_prints_the_checklist(tmp_path):
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "cache")
    env["PYTHONPATH"] = f"{KEYWORD}:{REPO}"
    result = run_cli(["check-system", "keyword_memory.KeywordMemory", "k=3"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert sum(line.startswith("ok") for line in lines) == len(CHECKS)
    assert lines[-1] == f"{len(CHECKS)} of {len(CHECKS)} checks hold"


@pytest.mark.slow
def test_check_system_on_a_service_that_is_down_is_one_line(tmp_path):
    result = run_cli(["check-system", "http://127.0.0.1:9"], cli_env("http://127.0.0.1:9/v1", tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        result.stderr.strip().count("\n") == 0
        and "no service answers at http://127.0.0.1:9/health" in result.stderr
    )


# ---- broken systems fail with the right lines --------------------------------------------------------


class _Keyword(SystemBase):
    """A correct little system that the broken ones below each spoil in one way."""

    def __init__(self, *, name: str = "broken", context: SystemContext) -> None:
        super().__init__()
        self.name, self.context = name, context

    @classmethod
    def cost_plan(cls, method, dataset, n_questions):  # type: ignore[no-untyped-def]
        return CostPlan(context_tokens=500.0, lines=[PlanLine("ingest", "turn embeddings", 1, 500, 0)])

    def _file(self, conversation: Conversation) -> Path:
        return self.context.state_dir / conversation.sample_id / "lines.json"

    async def _build(self, conversation: Conversation) -> None:
        await self.context.client.embed(conversation.render_lines(), stage="ingest")
        self._file(conversation).parent.mkdir(parents=True, exist_ok=True)
        self._file(conversation).write_text(json.dumps(conversation.render_lines()))

    async def ingest(self, conversation: Conversation) -> IngestReport:
        if not self._file(conversation).exists():
            await self._build(conversation)
        return IngestReport(conversation.sample_id, memory_tokens=None)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        text = "\n".join(self._lines(conversation))
        await self.context.client.embed([question.question], stage="search")
        return RetrievedContext(kind="chunks", text=text, tokens=count_tokens(text))

    def _lines(self, conversation: Conversation) -> list[str]:
        return list(json.loads(self._file(conversation).read_text()))


class NotIdempotent(_Keyword):
    async def ingest(self, conversation: Conversation) -> IngestReport:
        await self._build(conversation)  # every time
        return IngestReport(conversation.sample_id, memory_tokens=None)


class Untyped(_Keyword):
    async def retrieve(self, conversation: Conversation, question: Question) -> Any:
        return "\n".join(self._lines(conversation))  # a bare string


class ForgetsEverything(_Keyword):
    """Empty contexts without declaring them (`empty_context_expected`): lost memories, as far as anyone
    can tell."""

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        return RetrievedContext(kind="chunks", text="", tokens=0, items=0)


class RaisesOnFailure(_Keyword):
    async def ingest(self, conversation: Conversation) -> IngestReport:
        try:
            return await super().ingest(conversation)
        except LLMCallError as exc:
            raise RuntimeError("embedding failed") from exc


class SwallowsFailures(_Keyword):
    async def ingest(self, conversation: Conversation) -> IngestReport:
        try:
            return await super().ingest(conversation)
        except LLMCallError:
            return IngestReport(conversation.sample_id, memory_tokens=None)  # nothing recorded


class MiscountsTokens(_Keyword):
    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        context = await super().retrieve(conversation, question)
        return RetrievedContext(kind="chunks", text=context.text, tokens=len(context.text.split()))


_KEPT: dict[str, list[str]] = {}


class KeepsMemoryElsewhere(_Keyword):
    """Appends to a process-wide list that no cleared state folder resets: an interrupted ingest followed
    by a fresh one holds every turn twice."""

    async def ingest(self, conversation: Conversation) -> IngestReport:
        if not self._file(conversation).exists():
            _KEPT.setdefault(conversation.sample_id, []).extend(conversation.render_lines())
            await self._build(conversation)
        return IngestReport(conversation.sample_id, memory_tokens=None)

    def _lines(self, conversation: Conversation) -> list[str]:
        return _KEPT[conversation.sample_id]


class NoPlan(_Keyword):
    @classmethod
    def cost_plan(cls, method, dataset, n_questions):  # type: ignore[no-untyped-def]
        return {"calls": 1}


@pytest.mark.parametrize(
    ("broken", "check", "says"),
    [
        (NotIdempotent, "ingest idempotent", "a second ingest on the same instance made 1 call(s)"),
        (Untyped, "retrieve typed and non-empty", "retrieve returned str"),
        (ForgetsEverything, "retrieve typed and non-empty", "is empty: retrieve must return what ingest stored"),
        (RaisesOnFailure, "failures recorded, not raised", "ingest raised RuntimeError (embedding failed) when its calls failed"),
        (SwallowsFailures, "failures recorded, not raised", "it returned with nothing in self.failures"),
        (MiscountsTokens, "tokens counted", "set tokens=count_tokens(text)"),
        (KeepsMemoryElsewhere, "resume after an interrupted ingest", "differs from an uninterrupted run's"),
        (NoPlan, "dry-run plan", "return a CostPlan"),
    ],
)  # fmt: skip
def test_a_broken_system_fails_the_check_that_names_its_fault(broken, check, says, tmp_path):
    _KEPT.clear()
    results = {
        r.name: r
        for r in asyncio.run(run_checks(class_target(f"{__name__}.{broken.__name__}", {}), tmp_path))
    }
    assert results[check].ok is False, results[check]
    assert says in results[check].detail, results[check].detail
    # Every check before it held (nothing else is blamed), and a check not reached is not called held.
    before = CHECKS[: CHECKS.index(check)]
    assert all(results[name].ok for name in before if name != "dry-run plan"), results
    assert not all(r.ok for r in results.values())


def test_the_correct_base_of_the_broken_systems_passes(tmp_path):
    _all_hold(asyncio.run(run_checks(class_target(f"{__name__}._Keyword", {}), tmp_path)))


@pytest.mark.slow
def test_check_system_command_exits_1_with_one_line_per_failure(tmp_path):
    env = cli_env("http://127.0.0.1:9/v1", tmp_path / "cache")
    env["PYTHONPATH"] = str(REPO)
    result = run_cli(["check-system", "tests.test_your_system.NotIdempotent"], env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    fails = [line for line in result.stdout.splitlines() if line.strip().startswith("FAIL")]
    assert len(fails) == 1 and "ingest idempotent" in fails[0] and "context.state_dir" in fails[0]
    assert result.stdout.strip().endswith("fix the FAIL lines above")


# ---- the HTTP system's rules: retries, counted usage, step failures, a service that goes away --------


class _Scripted(BaseHTTPRequestHandler):
    """A memory service whose replies a test sets: `server.script[(method, path)]` -> [(status, body)...],
    the last reply repeating; `server.seen` lists the requests."""

    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silent
        return

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.seen.append((self.command, self.path, body))
        replies = self.server.script.get((self.command, self.path.rsplit("/", 1)[-1])) or [(200, {})]
        status, reply = replies.pop(0) if len(replies) > 1 else replies[0]
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.server.seen.append(("GET", self.path, None))
        data = json.dumps({"status": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_PUT = do_POST = do_DELETE = _answer  # noqa: N815


@pytest.fixture
def scripted():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.script, server.seen = {}, []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _http_system(url: str, tmp_path: Path, **settings: Any) -> HttpSystem:
    client = LLMClient(LLMSettings(base_url="http://127.0.0.1:9/v1", api_key="unused"))
    settings = {"backoff_base_s": 0.01, "backoff_max_s": 0.02, **settings}
    return HttpSystem(url=url, context=SystemContext(client=client, state_dir=tmp_path / "state"), **settings)


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_http_system_retries_counts_reported_usage_and_sends_nothing_twice(scripted, tmp_path):
    scripted.script[("PUT", "1")] = [(503, {"error": "busy"}), (200, {})]
    usage = {"calls": 2, "prompt_tokens": 120, "completion_tokens": 9, "model": "gpt-4o-mini"}
    scripted.script[("POST", "search")] = [
        (200, {"context": "Mia has a puppy called Biscuit.", "usage": usage})
    ]
    conversation = fixture().conversations[0]
    system = _http_system(_url(scripted), tmp_path)

    async def go() -> tuple[IngestReport, RetrievedContext, int]:
        report = await system.ingest(conversation)
        sent = len(scripted.seen)
        await system.ingest(conversation)  # nothing left to send
        rerun = _http_system(_url(scripted), tmp_path)  # a new process on the same run folder
        await rerun.ingest(conversation)
        assert len(scripted.seen) == sent + 1  # only the new instance's health check
        context = await system.retrieve(conversation, conversation.questions[0])
        await system.aclose()
        await rerun.aclose()
        return report, context, sent

    report, context, sent = asyncio.run(go())
    puts = [s for s in scripted.seen if s[0] == "PUT"]
    assert [p[1].rsplit("/", 1)[-1] for p in puts] == ["1", "1", "2", "3"]  # session 1 retried once
    assert puts[0][2]["turns"][0] == {
        "turn_id": "D1:1",
        "speaker": "Mia",
        "text": conversation.turns[0].text,
        "caption": None,
    }
    assert puts[0][2]["date"] == "2:10 pm on 3 March, 2024"
    assert sent == 1 + 1 + 4  # health, the DELETE of leftovers, four PUTs
    assert report.failures == 0 and report.details["sessions_added"] == 3
    assert context.kind == "notes" and context.text == "Mia has a puppy called Biscuit."
    assert context.tokens == count_tokens(context.text)
    search = system.context.client.ledger.stage("http_system_search")
    assert (search.calls, search.prompt_tokens, search.completion_tokens) == (2, 120, 9)
    assert scripted.seen[-1][2] == {
        "question": "What is the name of Mia's puppy?",
        "question_id": "check-1:q0",
        "top_k": None,
    }


def test_http_system_retries_the_statuses_the_llm_client_retries(scripted, tmp_path):
    # One classifier for both clients (mem0bench/llm/retry.py): 408, 409 and 425 are asked again here too.
    scripted.script[("PUT", "1")] = [
        (425, {"error": "too early"}),
        (409, {"error": "busy"}),
        (408, {}),
        (200, {}),
    ]
    conversation = fixture().conversations[0]
    system = _http_system(_url(scripted), tmp_path)

    async def go() -> IngestReport:
        try:
            return await system.ingest(conversation)
        finally:
            await system.aclose()

    report = asyncio.run(go())
    puts = [s[1].rsplit("/", 1)[-1] for s in scripted.seen if s[0] == "PUT"]
    assert report.failures == 0 and puts == ["1", "1", "1", "1", "2", "3"]


def test_http_system_failed_session_is_a_counted_step_failure(scripted, tmp_path):
    scripted.script[("PUT", "2")] = [(400, {"error": {"message": "turn too long"}})]
    scripted.script[("POST", "search")] = [(200, {"items": [{"text": "a", "date": "3 March 2024", "score": 1, "turn_ids": ["D1:3"]}, {"text": "b"}]})]  # fmt: skip
    conversation = fixture().conversations[0]
    system = _http_system(_url(scripted), tmp_path)

    async def go() -> tuple[IngestReport, RetrievedContext]:
        report = await system.ingest(conversation)
        context = await system.retrieve(conversation, conversation.questions[0])
        await system.aclose()
        return report, context

    report, context = asyncio.run(go())
    assert report.failures == 1 and len(system.failures) == 1
    failure = system.failures[0]
    assert (failure.stage, failure.kind, failure.sample_id) == ("add_session", "bad_request", "check-1")
    assert failure.dia_ids == ("D2:1", "D2:2", "D2:3", "D2:4") and "turn too long" in failure.message
    assert (
        context.text == "[3 March 2024] a\nb" and context.items == 2 and context.source_dia_ids == ("D1:3",)
    )


def test_http_system_malformed_search_is_a_failed_call(scripted, tmp_path):
    scripted.script[("POST", "search")] = [(200, {"items": [{"txt": "no text"}]})]
    conversation = fixture().conversations[0]
    system = _http_system(_url(scripted), tmp_path)

    async def go() -> None:
        await system.ingest(conversation)
        try:
            await system.retrieve(conversation, conversation.questions[0])
        finally:
            await system.aclose()

    with pytest.raises(LLMCallError) as caught:
        asyncio.run(go())
    assert (
        caught.value.failure.kind == "malformed"
        and "items[0].text must be a string" in caught.value.failure.message
    )


def test_http_service_that_goes_away_stops_the_run_in_one_line(scripted, tmp_path):
    conversation = fixture().conversations[0]
    system = _http_system(_url(scripted), tmp_path, unreachable_after_s=0.3, max_retries=100)

    async def go() -> None:
        await system.ingest(conversation)
        scripted.shutdown()
        scripted.server_close()
        try:
            await system.retrieve(conversation, conversation.questions[0])
        finally:
            await system.aclose()

    with pytest.raises(ServerUnreachable) as caught:
        asyncio.run(go())
    message = str(caught.value)
    assert "\n" not in message and f"the server at {_url(scripted)} has been unreachable" in message


def test_http_system_settings_are_checked_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"set method.url=http://HOST:PORT"):
        _http_system(None, tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"no service answers at http://127.0.0.1:9/health"):
        _http_system("http://127.0.0.1:9", tmp_path)


# ---- end to end: each example through `run`, and its rows in report and compare -----------------------


@pytest.mark.slow
@pytest.mark.parametrize("how", ["config-dir", "searchpath"])
def test_keyword_memory_runs_from_its_own_folder(how, tmp_path, locomo_mini):
    where = (
        ["--config-dir", str(KEYWORD)] if how == "config-dir" else [f"hydra.searchpath=[file://{KEYWORD}]"]
    )
    with StandinServer(api_key=TEST_KEY) as server:
        run_dir = _run(tmp_path, server, locomo_mini, [*where, "+exp=keyword_memory", "method.k=3"], KEYWORD)
    metrics = _assert_scored(run_dir, "keyword_memory")
    assert metrics["tokens"]["llm"]["ingest_embedding"]["calls"] == 1  # its one embedding call
    assert "k: 3" in (run_dir / "config.yaml").read_text()


@pytest.mark.slow
def test_pip_package_adds_its_own_experiment(tmp_path, locomo_mini):
    source, target = tmp_path / "src", tmp_path / "site"
    shutil.copytree(EXAMPLES / "word_overlap", source)  # the build writes into its folder: not into the repo
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-2000:]
    assert (target / "hydra_plugins" / "mem0bench_word_overlap_searchpath" / "__init__.py").exists()
    with StandinServer(api_key=TEST_KEY) as server:
        run_dir = _run(tmp_path, server, locomo_mini, ["+exp=word_overlap"], target)
        checked = run_cli(
            ["check-system", "mem0bench_word_overlap.WordOverlap", "k=4"], _env(server, tmp_path, target)
        )
    _assert_scored(run_dir, "word_overlap")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip().endswith(f"{len(CHECKS)} of {len(CHECKS)} checks hold")


@pytest.mark.slow
def test_http_system_runs_and_its_rows_appear_in_report_and_compare(tmp_path, locomo_mini, reference_service):
    with StandinServer(api_key=TEST_KEY) as server:
        keyword = _run(
            tmp_path,
            server,
            locomo_mini,
            ["--config-dir", str(KEYWORD), "+exp=keyword_memory"],
            KEYWORD,
            name="keyword",
        )
        http = _run(
            tmp_path,
            server,
            locomo_mini,
            ["+exp=http_system", f"method.url={reference_service.url}"],
            name="http",
        )
        again = _run(
            tmp_path,
            server,
            locomo_mini,
            ["+exp=http_system", f"method.url={reference_service.url}"],
            name="http",
        )
        env = _env(server, tmp_path)
        report = run_cli(["report", str(keyword), str(http), "--out", str(tmp_path / "report")], env)
        compare = run_cli(["compare", str(keyword), str(http), "--out", str(tmp_path / "compare")], env)
    assert again == http
    _assert_scored(http, "http_system")
    ingests = read_jsonl(http / "ingest.jsonl")
    assert len(ingests) == 1 and ingests[0]["details"]["sessions_added"] == 3  # the rerun sent nothing again
    assert [len(c) for c in reference_service.memory.conversations.values()] == [3]
    assert report.returncode == 0, report.stderr[-2000:]
    tables = "".join(p.read_text() for p in (tmp_path / "report").rglob("*.md"))
    assert "keyword_memory" in tables and "http_system" in tables
    html = (tmp_path / "report" / "report.html").read_text()
    assert "keyword_memory" in html and "http_system" in html
    assert compare.returncode == 0, compare.stderr[-2000:]
    assert "http_system" in (tmp_path / "compare" / "compare.md").read_text()


def test_the_openapi_file_describes_what_the_adapter_sends_and_the_reference_service_answers(
    reference_service,
):
    import jsonschema
    import yaml

    from mem0bench.systems.external.http_system.wire import search_body, session_body

    spec = yaml.safe_load((REPO / "docs" / "http_system.openapi.yaml").read_text())

    def check(name: str, value: Any) -> None:
        schema = {"$ref": f"#/components/schemas/{name}", "components": spec["components"]}
        jsonschema.Draft202012Validator(schema).validate(value)

    conversation = fixture().conversations[0]
    for session in conversation.sessions:
        check("Session", session_body(conversation, session))
    check("SearchRequest", search_body(conversation.questions[0], 5))
    memory = reference_service.memory
    memory.put_session("c", "2", session_body(conversation, conversation.sessions[1]))
    check("SearchReply", {"items": memory.search("c", "Where is Leo travelling in June?", 3)})
    check("SearchReply", {"context": "text", "usage": {"calls": 1, "prompt_tokens": 3, "model": None}})
    with pytest.raises(jsonschema.ValidationError):
        check("SearchReply", {"items": [], "context": "both"})
    assert set(spec["paths"]) == {
        "/health", "/conversations/{conversation_id}", "/conversations/{conversation_id}/sessions/{session}",
        "/conversations/{conversation_id}/search",
    }  # fmt: skip


def test_the_guide_shows_the_example_as_it_is():
    """docs/your_system.md quotes the example's three files whole: the copy a user reads is the code the
    end-to-end tests run."""
    guide = (REPO / "docs" / "your_system.md").read_text()
    for path in ("keyword_memory.py", "method/keyword_memory.yaml", "exp/keyword_memory.yaml"):
        text = (KEYWORD / path).read_text()
        assert f"\n{text}```" in guide, path
    assert "cd examples/keyword_memory && python -m mem0bench run --config-dir . +exp=keyword_memory" in guide


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [
        "mem0bench.systems.baselines.rag.RAG",
        "mem0bench.systems.baselines.full_context.FullContext",
        "mem0bench.systems.methods.mem0.system.Mem0",
        "mem0bench.systems.methods.mem0g.system.Mem0G",
        "mem0bench.systems.baselines.chatgpt_memory_emulation.system.ChatGPTMemoryEmulation",
        # Empty contexts by design (declared): the non-empty check does not apply to it.
        "mem0bench.systems.baselines.no_memory.NoMemory",
    ],
)
def test_the_built_in_systems_pass_check_system(path, tmp_path):
    """The checks ask nothing the harness's own systems do not do (and cost_plan gets every default,
    a subclass's inherited ones included)."""
    _all_hold(asyncio.run(run_checks(class_target(path, {}), tmp_path)))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("url", "says"),
    [
        (
            "method.url=http://127.0.0.1:9",
            "error: http_system: no service answers at http://127.0.0.1:9/health",
        ),
        ("method.top_k=5", "error: http_system: set method.url=http://HOST:PORT"),
    ],
)
def test_run_without_a_service_is_one_line_before_any_work(url, says, tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        ["run", "+exp=http_system", url, f"hydra.run.dir={run_dir}"],
        cli_env("http://127.0.0.1:9/v1", tmp_path),
    )
    assert result.returncode == 2 and result.stderr.strip().startswith(says), result.stderr
    assert result.stderr.strip().count("\n") == 0 and not run_dir.exists()
