"""The checklist: a system on the fixture conversation, against the in-process stand-in.

Each check names what it saw; a failed one says what to fix, in one line. Systems are built the way the
runner builds them (`factory(context=SystemContext(...))`), one instance per simulated process, so "a
rerun" here is a new instance on the same state folder, as it is for a real run.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mem0bench.common.text import one_line
from mem0bench.conformance.fixture import EVIDENT, fixture
from mem0bench.conformance.standin import CheckServer
from mem0bench.data.context import ContextKind, RetrievedContext
from mem0bench.data.model import Conversation, Dataset
from mem0bench.llm.client import LLMClient
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.llm.types import LLMCallError
from mem0bench.memory.base import (
    IngestReport,
    MemorySystem,
    StepFailure,
    SystemContext,
    expects_empty_context,
    optional_member_problems,
    request_counter,
)
from mem0bench.memory.costs import CostPlan
from mem0bench.tokens import count_tokens

__all__ = ["CHECKS", "CheckResult", "Target", "run_checks"]

T = TypeVar("T")

Factory = Callable[[SystemContext, str | None], MemorySystem]
"""Build the system: (its context, the URL of a failing service for the failure check, or None)."""

CHECKS = (
    "protocol",
    "dry-run plan",
    "ingest",
    "ingest idempotent",
    "retrieve typed and non-empty",
    "tokens counted",
    "resume after an interrupted ingest",
    "failures recorded, not raised",
    "close",
)
KINDS = typing.get_args(ContextKind)


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool | None
    """True: holds; False: broken; None: not checked (an earlier step it needs failed)."""
    detail: str


@dataclass(frozen=True)
class Target:
    label: str
    cls: type[MemorySystem]
    method: Mapping[str, Any]
    """The `method` config group the dry run's `cost_plan` gets."""
    build: Factory


class _Stop(Exception):
    """A step every later check needs has failed (its result is recorded)."""


@dataclass
class _Run:
    target: Target
    server: CheckServer
    client: LLMClient
    workdir: Path
    timeout_s: float
    results: dict[str, CheckResult] = field(default_factory=dict)
    instances: list[MemorySystem] = field(default_factory=list)
    """Every instance built (their request counters add up in `calls`)."""
    closed: list[MemorySystem] = field(default_factory=list)

    def put(self, name: str, ok: bool | None, detail: str) -> None:
        if name not in self.results or self.results[name].ok:  # the first failure of a check stands
            self.results[name] = CheckResult(name, ok, one_line(detail))

    def fail(self, name: str, detail: str) -> _Stop:
        self.put(name, False, detail)
        return _Stop()

    def calls(self) -> int:
        """Requests to the LLM stand-in, plus those to a memory service (the HTTP system's)."""
        return self.server.requests + sum(int(getattr(s, "requests", 0)) for s in self.instances)

    def make(self, state: str, failing_service: str | None = None) -> MemorySystem:
        context = SystemContext(client=self.client, state_dir=self.workdir / state)
        try:
            system = self.target.build(context, failing_service)
        except Exception as exc:
            raise self.fail(
                "protocol",
                f"{self.target.label}(context=...) raised {type(exc).__name__}: {exc}: the constructor must take "
                "your settings as keyword arguments and `context` (a SystemContext)",
            ) from None
        self.instances.append(system)
        return system

    async def bounded(self, name: str, what: str, step: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(step, self.timeout_s)
        except TimeoutError:
            raise self.fail(name, f"{what} did not finish within {self.timeout_s:g} s") from None


async def run_checks(target: Target, workdir: Path, *, timeout_s: float = 120.0) -> list[CheckResult]:
    """Every check of CHECKS, in order (a check not reached is `ok=None`)."""
    dataset = fixture()
    with CheckServer() as server:
        settings = LLMSettings(
            base_url=server.base_url, api_key="check-system", max_retries=0, timeout_s=30.0,
            check_models=False, probe=False, repair_attempts=0,
        )  # fmt: skip
        client = LLMClient.from_settings(settings, EmbedderSettings(encoding_format="float"))
        run = _Run(target, server, client, workdir, timeout_s)
        try:
            await _checks(run, dataset)
        except _Stop:
            pass
        finally:
            await _close_all(run)
            await client.aclose()
    missing = "not checked: an earlier step it needs failed"
    return [run.results.get(name) or CheckResult(name, None, missing) for name in CHECKS]


async def _checks(run: _Run, dataset: Dataset) -> None:
    conversation = dataset.conversations[0]
    plan = _check_plan(run, dataset)
    first = run.make("A")
    _check_members(run, first)

    before, llm_before = run.calls(), run.server.requests
    report = await _ingest(run, first, conversation, "ingest")
    made, llm_made = run.calls() - before, run.server.requests - llm_before
    if not isinstance(report, IngestReport) or report.sample_id != conversation.sample_id:
        raise run.fail(
            "ingest",
            f"ingest returned {_shown(report)}: return IngestReport(sample_id=conversation.sample_id, ...)",
        )
    run.put("ingest", True, f"IngestReport returned after {made} call(s)")
    if plan is not None and llm_made and not any(line.stage == "ingest" for line in plan.lines):
        run.put("dry-run plan", False, f"cost_plan lists no ingest calls, but ingest made {llm_made}: add a "
                "PlanLine('ingest', ...) so that run.dry_run=true prices them")  # fmt: skip

    await _check_idempotent(run, first, conversation)
    reference = await _check_retrieve(run, conversation)
    await _check_resume(run, conversation, reference, made)
    await _check_failures(run, conversation)


def _check_plan(run: _Run, dataset: Dataset) -> CostPlan | None:
    n_questions = len(dataset.questions)
    try:
        plan = run.target.cls.cost_plan(run.target.method, dataset, n_questions)
    except Exception as exc:
        run.put("dry-run plan", False, f"cost_plan raised {type(exc).__name__}: {exc}: it gets the method config "
                "as a mapping (defaults filled), the dataset and the number of questions")  # fmt: skip
        return None
    if not isinstance(plan, CostPlan):
        run.put(
            "dry-run plan",
            False,
            f"cost_plan returned {_shown(plan)}: return a CostPlan (mem0bench.memory.costs)",
        )
        return None
    calls = sum(line.calls for line in plan.lines)
    run.put("dry-run plan", True, f"cost_plan: {len(plan.lines)} line(s), {calls:g} call(s), "
            f"{plan.context_tokens:g} context tokens a question")  # fmt: skip
    return plan


def _check_members(run: _Run, system: MemorySystem) -> None:
    problems = []
    if not isinstance(getattr(system, "name", None), str) or not system.name:
        problems.append("`name` must be a non-empty string (it names the method in every table)")
    packages = getattr(system, "packages", None)
    if not isinstance(packages, tuple) or not all(isinstance(p, str) for p in packages):
        problems.append("`packages` must be a tuple of distribution names (() for none)")
    if not isinstance(getattr(system, "failures", None), list):
        problems.append("`failures` must be a list (SystemBase.__init__ makes it: call super().__init__())")
    for member in ("ingest", "retrieve", "aclose"):
        if not inspect.iscoroutinefunction(getattr(system, member, None)):
            problems.append(f"`{member}` must be an async method")
    if not callable(getattr(type(system), "cost_plan", None)):
        problems.append("`cost_plan` must be a classmethod (SystemBase has one)")
    problems += optional_member_problems(system)  # docs/your_system.md, "Optional members"
    if problems:
        raise run.fail("protocol", "; ".join(problems))
    run.put(
        "protocol", True, f"name {system.name!r}, packages, failures, async ingest/retrieve/aclose, cost_plan"
    )


async def _ingest(run: _Run, system: MemorySystem, conversation: Conversation, name: str) -> Any:
    try:
        return await run.bounded(name, "ingest", system.ingest(conversation))
    except _Stop:
        raise
    except Exception as exc:
        raise run.fail(name, f"ingest raised {type(exc).__name__}: {exc}") from None


async def _check_idempotent(run: _Run, first: MemorySystem, conversation: Conversation) -> None:
    before = run.calls()
    await _ingest(run, first, conversation, "ingest idempotent")
    again = run.calls() - before
    rerun = run.make("A")  # a new process on the same run folder
    before = run.calls()
    await _ingest(run, rerun, conversation, "ingest idempotent")
    fresh = run.calls() - before
    if again or fresh:
        where = "the same instance" if again else "a new instance on the same state_dir (a rerun)"
        run.put("ingest idempotent", False, f"a second ingest on {where} made {again or fresh} call(s): save what "
                "ingest builds under context.state_dir and load it instead of building it again")  # fmt: skip
    else:
        run.put("ingest idempotent", True, "a second ingest (same instance, and a rerun) made no call")


async def _retrieve(
    run: _Run, system: MemorySystem, conversation: Conversation, name: str
) -> list[RetrievedContext]:
    contexts = []
    for question in conversation.questions:
        try:
            context = await run.bounded(name, "retrieve", system.retrieve(conversation, question))
        except _Stop:
            raise
        except Exception as exc:
            raise run.fail(name, f"retrieve raised {type(exc).__name__}: {exc}") from None
        contexts.append(context)
    return contexts


async def _check_retrieve(run: _Run, conversation: Conversation) -> list[RetrievedContext]:
    system = run.instances[-1]
    name = "retrieve typed and non-empty"
    contexts = await _retrieve(run, system, conversation, name)
    for question, context in zip(conversation.questions, contexts):
        if not isinstance(context, RetrievedContext):
            raise run.fail(name, f"retrieve returned {_shown(context)}: return a RetrievedContext(kind=..., text=..., "
                           "tokens=count_tokens(text), items=...)")  # fmt: skip
        if context.kind not in KINDS or not isinstance(context.text, str):
            raise run.fail(name, f"RetrievedContext(kind={context.kind!r}, text={type(context.text).__name__}): kind "
                           f"must be one of {', '.join(KINDS)} and text a string")  # fmt: skip
        if context.items is not None and (not isinstance(context.items, int) or context.items < 0):
            raise run.fail(name, f"RetrievedContext.items is {context.items!r}: an integer >= 0, or None")
        # A system that declares its contexts empty by design (the no-memory floor) has nothing to return.
        if question.index == EVIDENT and not context.text.strip() and not expects_empty_context(system):
            raise run.fail(name, f"the context for {question.question!r} (answered in turn {question.evidence[0]}) is "
                           "empty: retrieve must return what ingest stored")  # fmt: skip
    evident = contexts[EVIDENT]
    run.put(
        name,
        True,
        f"{evident.kind}, {evident.tokens} tokens, {evident.items} item(s) for the evident question",
    )
    _check_tokens(run, contexts)
    return contexts


def _check_tokens(run: _Run, contexts: list[RetrievedContext]) -> None:
    for context in contexts:
        counted = count_tokens(context.text)
        if context.tokens != counted:
            run.put("tokens counted", False, f"RetrievedContext.tokens is {context.tokens!r} but its text has {counted} "
                    "cl100k_base tokens: set tokens=count_tokens(text) (mem0bench.tokens)")  # fmt: skip
            return
    usage = run.client.ledger.snapshot()["total"]
    run.put("tokens counted", True, f"every context's tokens match its text; {usage.get('calls', 0)} LLM call(s) "
            "went through the harness's client")  # fmt: skip


async def _check_resume(
    run: _Run, conversation: Conversation, reference: list[RetrievedContext], made: int
) -> None:
    name = "resume after an interrupted ingest"
    system = run.make("B")
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(system.ingest(conversation))
    at, seen = max(made // 2, 1), [0]

    def arrived() -> None:  # from the stand-in's thread, or the HTTP system's transport
        seen[0] += 1
        if seen[0] == at:
            loop.call_soon_threadsafe(task.cancel)

    run.server.on_request = arrived
    transport = request_counter(system)
    if transport is not None:
        transport.on_request = arrived
    interrupted = False
    try:
        await run.bounded(name, "the interrupted ingest", task)
    except asyncio.CancelledError:
        interrupted = True
    except _Stop:
        raise
    except Exception as exc:
        raise run.fail(
            name, f"ingest raised {type(exc).__name__} when cancelled: let CancelledError through"
        ) from None
    finally:
        run.server.on_request = None
        if transport is not None:
            transport.on_request = None
    await _close(run, system)
    # What the runner does on a rerun after a kill: the conversation's state folder is cleared.
    shutil.rmtree(run.workdir / "B" / conversation.sample_id, ignore_errors=True)
    resumed = run.make("B")
    await _ingest(run, resumed, conversation, name)
    contexts = await _retrieve(run, resumed, conversation, name)
    for question, context, expected in zip(conversation.questions, contexts, reference):
        if getattr(context, "text", None) != expected.text:
            raise run.fail(name, f"after an interrupted ingest and a fresh one, the context for {question.qid} differs "
                           "from an uninterrupted run's: keep the memory under context.state_dir/<sample_id>/ (the "
                           "runner clears it before ingesting again), or clear what you keep elsewhere when that "
                           "folder is missing")  # fmt: skip
    how = f"interrupted at call {at}" if interrupted else "ingest finished before the interruption"
    run.put(name, True, f"{how}; ingesting again gave the same contexts as an uninterrupted run")


async def _check_failures(run: _Run, conversation: Conversation) -> None:
    name = FAILURES
    run.server.fail = True
    try:
        seen = [await _failing_ingest(run, conversation), await _failing_retrieve(run, conversation)]
    finally:
        run.server.fail = False
    said = [s for s in seen if s]
    run.put(name, True, "; ".join(said) if said else "no call failed: the system makes no call of its own")


FAILURES = "failures recorded, not raised"


async def _while_failing(run: _Run, what: str, step: Awaitable[T], fix: str) -> tuple[T | None, bool]:
    """A step run while every call fails: -> (its result, whether it let an LLMCallError through). Any
    other exception fails the check: the runner would stop on it."""
    try:
        return await run.bounded(FAILURES, what, step), False
    except LLMCallError:
        return None, True
    except _Stop:
        raise
    except Exception as exc:
        raise run.fail(
            FAILURES, f"{what} raised {type(exc).__name__} ({exc}) when its calls failed: {fix}"
        ) from None


async def _failing_ingest(run: _Run, conversation: Conversation) -> str:
    system = run.make("C", run.server.url)
    before = run.calls()
    fix = "append a StepFailure to self.failures and go on, or let the LLMCallError through"
    report, raised = await _while_failing(run, "ingest", system.ingest(conversation), fix)
    if raised:
        return "a failed ingest call raised LLMCallError (the conversation is recorded as not ingested and retried)"
    if run.calls() == before:
        return ""
    rows = [f for f in system.failures if getattr(f, "sample_id", None) == conversation.sample_id]
    if not rows:
        raise run.fail(FAILURES, f"{run.calls() - before} call(s) failed during ingest but it returned with nothing "
                       "in self.failures: append a StepFailure for each failed step (or let the LLMCallError through)")  # fmt: skip
    _typed_rows(run, system.failures)
    if isinstance(report, IngestReport) and report.failures != len(rows):
        raise run.fail(
            FAILURES, f"IngestReport.failures is {report.failures} but {len(rows)} step(s) failed: count them"
        )
    return f"{len(rows)} failed ingest step(s) recorded as StepFailure rows"


async def _failing_retrieve(run: _Run, conversation: Conversation) -> str:
    system = run.make("A", run.server.url)  # the memory is built: only the search can fail
    # A system that must reach its service again to ingest may raise LLMCallError here: the search is
    # still asked.
    await _while_failing(run, "ingest", system.ingest(conversation), "let the LLMCallError through")
    question = conversation.questions[EVIDENT]
    before = run.calls()
    fix = "let the LLMCallError through, or append a StepFailure with qid=question.qid"
    _, raised = await _while_failing(run, "retrieve", system.retrieve(conversation, question), fix)
    if raised:
        return "a failed search raised LLMCallError (the question is recorded as failed and asked again by a rerun)"
    if run.calls() == before:
        return ""
    if not any(getattr(f, "qid", None) == question.qid for f in system.failures):
        raise run.fail(FAILURES, "a search call failed but retrieve returned with no StepFailure for the question: "
                       "append StepFailure(..., qid=question.qid) or let the LLMCallError through")  # fmt: skip
    _typed_rows(run, system.failures)
    return "a failed search recorded as a StepFailure row"


def _typed_rows(run: _Run, rows: list[Any]) -> None:
    for row in rows:
        if not isinstance(row, StepFailure) or not row.stage or not row.kind:
            raise run.fail(FAILURES, f"self.failures holds {_shown(row)}: append "
                           "StepFailure(system, sample_id, stage, kind, message, ...) rows")  # fmt: skip


async def _close(run: _Run, system: MemorySystem) -> None:
    if any(system is done for done in run.closed):
        return
    run.closed.append(system)
    try:
        await asyncio.wait_for(system.aclose(), run.timeout_s)
    except TimeoutError:
        run.put("close", False, f"aclose did not finish within {run.timeout_s:g} s")
    except Exception as exc:
        run.put("close", False, f"aclose raised {type(exc).__name__}: {exc}")


async def _close_all(run: _Run) -> None:
    for system in run.instances:
        await _close(run, system)
    if "close" not in run.results and run.closed:
        run.put(
            "close", True, f"aclose awaited once on each of the {len(run.closed)} instance(s), without error"
        )


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}" if not text.startswith(type(value).__name__) else text[:100]
