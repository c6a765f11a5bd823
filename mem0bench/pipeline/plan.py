"""`run.dry_run=true`: the LLM calls, tokens and USD a configuration would spend, without calling anything.

An estimate, not a promise: the system's own calls come from its class (`MemorySystem.cost_plan`, with
the assumptions in `mem0bench.memory.costs`); the query embeddings, answers and judge runs every method
shares are added here.

Cached prompt tokens (a server's prompt cache: OpenAI bills a repeated prefix of 1,024 tokens or more at
the model's `cached_prompt` rate): the plan counts them where the repeat is certain, the answers of a system
whose context is the whole conversation (`CostPlan.repeated_context`, full_context): each of a
conversation's questions after its first has its instructions and conversation (rounded down to 128-token
steps) cached. That assumes the server keeps the prefix between them (OpenAI keeps it minutes, and a run
answers a conversation's questions together). Every other prompt is planned without caching, an upper
estimate (a RAG context or a memory list changes with the question, though two questions' memory lists
may share a prefix; the judge's and ingestion's instructions are under 1,024 tokens); the dry run also
prints what the whole plan would cost with every prompt token at the cached rate, the floor.

The Batch API (`llm.batch=true`): the plan is priced both ways, every call online and the answer and judge
stages at the batch rates (half the online ones unless a price entry says otherwise); the table and the
total are priced as configured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from hydra.utils import get_class

from mem0bench.data.model import Dataset, Question
from mem0bench.llm.batch import BATCH_STAGES
from mem0bench.llm.ledger import batch_rates
from mem0bench.llm.windows import context_window
from mem0bench.memory.base import MemorySystem
from mem0bench.memory.costs import ANSWER_FRAME_TOKENS, INSTRUCTION_TOKENS, REPLY_TOKENS, CostPlan, PlanLine
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.spec import ExperimentSpec, SystemSpec
from mem0bench.suites import get_suite
from mem0bench.tokens import approx_tokens

CACHE_MIN_PREFIX = 1024
CACHE_STEP = 128
"""OpenAI's prompt cache: a prefix of at least 1,024 tokens, reported in 128-token steps."""

LOCOMO_TURNS = 5_882
"""Turns of the released LOCOMO file: the yardstick the dry run measures other suites' ingestion against."""


def system_cost_plan(system: SystemSpec, dataset: Dataset, n_questions: int) -> CostPlan:
    """The configured system's own estimate, from its class (the system is not constructed)."""
    system_class: type[MemorySystem] = get_class(str(system.target))
    return system_class.cost_plan(dict(system.settings), dataset, n_questions)


def repeated_prefix_tokens(system: CostPlan, n_questions: int, conversations: int) -> float:
    """Answer prompt tokens a prompt cache is expected to serve: those of every question after the first of
    its conversation, for a system that gives each question its whole conversation (none otherwise)."""
    prefix = INSTRUCTION_TOKENS + system.context_tokens
    if not system.repeated_context or prefix < CACHE_MIN_PREFIX:
        return 0.0
    return max(n_questions - conversations, 0) * (prefix // CACHE_STEP * CACHE_STEP)


def plan_lines(
    system: CostPlan,
    n_questions: int,
    judge: JudgeSettings,
    *,
    timed_questions: int = 0,
    conversations: int | None = None,
    judge_calls: float | None = None,
) -> list[PlanLine]:
    """The system's lines, then the query embeddings, answers and judge runs of `n_questions` (each
    judge.panel member priced at its own model), then the isolated latency pass: every search call again,
    live (the cache neither answers nor keeps them), for `timed_questions` of them. `conversations`: how
    many conversations the questions come from (None: as many as questions, so nothing is cached).
    `judge_calls`: the judge calls of one run over all the questions, where a suite's own judge makes more
    than one a question (BEAM: one per rubric item); None: one a question."""
    lines = list(system.lines)
    if system.embeds_queries:
        lines.append(PlanLine("search", "query embeddings", n_questions, n_questions * 15, 0))
    search = [line for line in lines if line.stage == "search"]
    cached = repeated_prefix_tokens(
        system, n_questions, n_questions if conversations is None else conversations
    )
    lines.append(PlanLine("answer", "answers", n_questions, n_questions * (INSTRUCTION_TOKENS + system.context_tokens),
                          n_questions * REPLY_TOKENS["answer"], cached_prompt=cached))  # fmt: skip
    verdict = min(REPLY_TOKENS["judge"], judge.reply_tokens_max or REPLY_TOKENS["judge"])  # yes/no: <= 10
    per_run = n_questions if judge_calls is None else judge_calls
    lines.append(PlanLine("judge", f"judge x{judge.runs}", per_run * judge.runs,
                          per_run * judge.runs * (INSTRUCTION_TOKENS + 60), per_run * judge.runs * verdict))  # fmt: skip
    for other in judge.panel_judges():
        lines.append(PlanLine("judge", f"panel {other.model} x{other.runs}"[:22], per_run * other.runs,
                              per_run * other.runs * (INSTRUCTION_TOKENS + 60), per_run * other.runs * verdict, other.model))  # fmt: skip
    share = min(timed_questions, n_questions) / n_questions if n_questions else 0.0
    if share > 0:
        lines += [
            PlanLine("latency", f"timed {line.what}", line.calls * share, line.prompt * share,
                     line.completion * share, line.model)
            for line in search
        ]  # fmt: skip
    return lines


def _lines(spec: ExperimentSpec, dataset: Dataset, questions: dict[str, list[Question]]) -> list[PlanLine]:
    return _plan(spec, dataset, questions)[1]


def _plan(
    spec: ExperimentSpec, dataset: Dataset, questions: dict[str, list[Question]]
) -> tuple[CostPlan, list[PlanLine]]:
    """The system's own plan, and every line of the run (the system's and the shared ones)."""
    n_questions = sum(len(qs) for qs in questions.values())
    options = spec.run
    timed = 0 if options.latency == "inline" else options.latency_questions or n_questions
    system = fit_window(spec, system_cost_plan(spec.system, dataset, n_questions), questions)
    conversations = sum(1 for qs in questions.values() if qs)
    count = get_suite(spec.scope.suite).judge_calls
    judge_calls = None if count is None else float(sum(count(q) for qs in questions.values() for q in qs))
    return system, plan_lines(
        system, n_questions, spec.judge, timed_questions=timed, conversations=conversations,
        judge_calls=judge_calls,
    )  # fmt: skip


def assumptions_note(plan: CostPlan) -> str:
    """The total line's footnote: what this system's plan assumes (a RAG run is not told about Mem0's
    facts), and that cached calls cost nothing."""
    said = [*plan.assumptions, "cached calls cost nothing"] if plan.assumptions else []
    return f"(assumes {', '.join(said[:-1])}; {said[-1]})" if said else "(cached calls cost nothing)"


def _pricer(
    spec: ExperimentSpec, *, all_cached: bool = False, batched: bool | None = None
) -> Callable[[PlanLine], float]:
    """USD of a plan line at the configured prices (local embeddings are free), its expected cached prompt
    tokens at the model's cached rate (the full prompt rate when it has none). `all_cached`: every prompt
    token at the cached rate (the floor the dry run prints next to the estimate). `batched` (default:
    `llm.batch`): the answer and judge lines at the Batch API's rates (`ledger.batch_rates`)."""
    settings = spec.llm
    batched = settings.batch if batched is None else batched
    # OpenAI's prices apply to OpenAI's server only (as in the client's ledger).
    prices = {k: dict(v) for k, v in settings.prices.items()} if settings.priced() else {}
    chat = prices.get(settings.model, {"prompt": 0.0, "completion": 0.0})
    judge_price = prices.get(spec.judge.model, chat)
    embed_price = prices.get(spec.embedder.model, {"prompt": 0.0, "completion": 0.0})
    if spec.embedder.backend != "openai":
        embed_price = {"prompt": 0.0, "completion": 0.0}

    def usd(line: PlanLine) -> float:
        price = embed_price if "embedding" in line.what else judge_price if line.stage == "judge" else chat
        if line.model is not None:  # a panel judge, priced at its own model's rate
            price = prices.get(line.model, judge_price)
        if batched and line.stage in BATCH_STAGES and "embedding" not in line.what:
            prompt_rate, completion_rate, cached_rate = batch_rates(price)
            price = {"prompt": prompt_rate, "completion": completion_rate,
                     **({} if cached_rate is None else {"cached_prompt": cached_rate})}  # fmt: skip
        cached_rate = price.get("cached_prompt", price["prompt"])
        cached = line.prompt if all_cached else min(line.cached_prompt, line.prompt)
        return ((line.prompt - cached) * price["prompt"] + cached * cached_rate
                + line.completion * price["completion"]) / 1e6  # fmt: skip

    return usd


@dataclass(frozen=True)
class StageEstimate:
    calls: float
    usd: float


def stage_estimates(
    spec: ExperimentSpec, dataset: Dataset, questions: dict[str, list[Question]]
) -> dict[str, StageEstimate]:
    """The plan summed per stage (ingest, search, answer, judge): what the progress ETA and `status` use."""
    usd = _pricer(spec)
    totals: dict[str, StageEstimate] = {}
    for line in _lines(spec, dataset, questions):
        held = totals.get(line.stage, StageEstimate(0.0, 0.0))
        totals[line.stage] = StageEstimate(held.calls + line.calls, held.usd + usd(line))
    return totals


def plan_total(
    spec: ExperimentSpec, dataset: Dataset, questions: dict[str, list[Question]]
) -> tuple[float, float]:
    """Calls and USD of the whole plan."""
    estimates = stage_estimates(spec, dataset, questions)
    return sum(e.calls for e in estimates.values()), sum(e.usd for e in estimates.values())


def scale_line(dataset: Dataset) -> str:
    """What will be ingested, against LOCOMO's size: the line that makes a big suite's cost obvious.
    Tokens are estimated from characters (4 a token): counting LongMemEval_M's ~750M would take minutes."""
    sessions = sum(len(c.sessions) for c in dataset.conversations)
    turns = sum(len(s.turns) for c in dataset.conversations for s in c.sessions)
    chars = sum(len(t.text) for c in dataset.conversations for s in c.sessions for t in s.turns)
    return (
        f"ingests {len(dataset.conversations):,} conversations, {sessions:,} sessions, {turns:,} turns, "
        f"~{approx_tokens(chars):,} tokens: {turns / LOCOMO_TURNS:,.1f}x the turns of all of LOCOMO"
    )


def print_plan(spec: ExperimentSpec, dataset: Dataset, questions: dict[str, list[Question]]) -> None:
    line_usd = _pricer(spec)
    total_calls = total_usd = 0.0
    suite = get_suite(dataset.suite)
    print(f"dry run: {spec.method_name} on {suite.title}, {len(dataset.conversations)} conversations, "
          f"{sum(len(q) for q in questions.values())} questions (no LLM call made)")  # fmt: skip
    note = spec.llm.price_note()
    if note:  # before the table, so the USD column's zeros are read with it
        print(note)
    print(scale_line(dataset))
    if suite.notes:
        print(f"note: {suite.notes}")
    print(f"{'stage':<7} {'what':<22} {'calls':>9} {'prompt tok':>12} {'compl. tok':>11} {'USD':>9}")
    system, lines = _plan(spec, dataset, questions)
    floor = sum(map(_pricer(spec, all_cached=True), lines))
    for line in lines:
        usd = line_usd(line)
        total_calls += line.calls
        total_usd += usd
        print(f"{line.stage:<7} {line.what:<22} {line.calls:>9,.0f} {line.prompt:>12,.0f} "
              f"{line.completion:>11,.0f} {usd:>9.3f}")  # fmt: skip
    print(cached_prompt_line(lines, floor))  # before the total, which stays the table's last line
    print(batch_price_line(sum(map(_pricer(spec, batched=False), lines)),
                           sum(map(_pricer(spec, batched=True), lines)), batched=spec.llm.batch))  # fmt: skip
    window = window_line(spec, system, questions)
    if window:
        print(window)
    print(f"total: about {total_calls:,.0f} calls, ${total_usd:.2f}  {assumptions_note(system)}")
    if suite.name != "locomo":  # LOCOMO's dry run stays as it was: its questions share ten ingestions
        print(per_question_line(dataset, sum(len(q) for q in questions.values()), total_calls, total_usd,
                                release=suite.release_questions))  # fmt: skip


def batch_price_line(online_usd: float, batch_usd: float, *, batched: bool) -> str:
    """Both prices of the plan: every call online, and the answer and judge stages through the Batch API
    (`llm.batch=true`; ingestion stays online); the table above is priced as configured."""
    return (
        f"Batch API: ${batch_usd:.2f} with llm.batch=true (answer and judge stages at the batch price), "
        f"${online_usd:.2f} online (llm.batch=false); the table is priced "
        + ("batched" if batched else "online")
    )


def cached_prompt_line(lines: list[PlanLine], floor: float) -> str:
    """What the estimate assumes of the server's prompt cache, and the total with every prompt token at
    the cached rate (the floor no caching can go under)."""
    cached = sum(line.cached_prompt for line in lines)
    prompt = sum(line.prompt for line in lines)
    said = (
        f"{cached:,.0f} of {prompt:,.0f} prompt tokens ({cached / prompt:.0%}) at the cached rate: each "
        "conversation's repeated prefix, after its first question"
        if cached > 0 and prompt > 0
        else "no prompt token at the cached rate"
    )
    return f"server prompt cache: the estimate counts {said}; with every prompt token cached: ${floor:.2f}"


def per_question_line(dataset: Dataset, n_questions: int, calls: float, usd: float, *, release: int) -> str:
    """The plan per question, and the release's size at that rate when fewer questions are chosen: with
    LongMemEval each question brings its own haystack, so a price per question is what scales."""
    n = max(n_questions, 1)
    sessions = sum(len(c.sessions) for c in dataset.conversations) / max(len(dataset.conversations), 1)
    line = (
        f"per question: about {calls / n:,.0f} calls, ${usd / n:.3f} "
        f"(its conversation: {sessions:,.0f} sessions on average)"
    )
    if 0 < n_questions < release:
        line += (
            f"\nwarning: at this rate all {release:,} questions of the release would be about "
            f"{calls / n * release:,.0f} calls, ${usd / n * release:,.2f}, if their conversations are the size of these"
        )
    return line


def _window_of(spec: ExperimentSpec, system: CostPlan) -> tuple[int | None, int]:
    """The answer model's context window (None: unknown) and what a prompt adds to its context: the
    planned instructions, or the frame a truncating system leaves them (where it cuts), and the reply."""
    frame = ANSWER_FRAME_TOKENS if system.truncates_oldest else INSTRUCTION_TOKENS
    return context_window(spec.llm.model, spec.llm.context_window), frame + (spec.llm.max_tokens or 0)


def fit_window(spec: ExperimentSpec, system: CostPlan, questions: dict[str, list[Question]]) -> CostPlan:
    """A whole-conversation system's answer context as the run will send it: a conversation past the window
    cut to it (truncate=oldest), or not sent at all (its questions fail unsent, no prompt token paid)."""
    window, reserve = _window_of(spec, system)
    n_questions = sum(len(qs) for qs in questions.values())
    if window is None or not system.conversation_tokens or n_questions == 0:
        return system
    room = max(window - reserve, 0)
    sent = 0.0
    for sid, qs in questions.items():
        tokens = system.conversation_tokens.get(sid, system.context_tokens)
        if tokens > room:
            tokens = room if system.truncates_oldest else 0.0
        sent += tokens * len(qs)
    return dataclasses.replace(system, context_tokens=sent / n_questions)


def window_line(spec: ExperimentSpec, system: CostPlan, questions: dict[str, list[Question]]) -> str | None:
    """For a system whose answer context is the whole conversation (full_context): how many questions'
    prompts (instructions, conversation and llm.max_tokens of reply) would pass the answer model's context
    window, before anything is paid. None for other systems: their contexts are retrieved, not known yet
    (the answer stage checks every prompt all the same)."""
    if not system.conversation_tokens:
        return None
    model = spec.llm.model
    window, reserve = _window_of(spec, system)
    if window is None:
        return (
            f"context window: {model}'s is not known (llm.context_window sets it): prompts are not checked "
            "against it"
        )
    over = {sid: tokens for sid, tokens in system.conversation_tokens.items() if tokens + reserve > window}
    n_over = sum(len(questions.get(sid, ())) for sid in over)
    n_all = sum(len(qs) for qs in questions.values())
    if n_over == 0:
        longest = max(system.conversation_tokens.values(), default=0.0)
        return (
            f"context window: every prompt fits {model}'s {window:,} tokens "
            f"(the longest conversation: {longest:,.0f} tokens)"
        )
    asked = [sid for sid in over if questions.get(sid)]
    what = (
        f"context window: {n_over:,} of {n_all:,} questions ({len(asked):,} "
        f"conversation{'s' if len(asked) != 1 else ''}, up to "
        f"{max(over[s] for s in asked):,.0f} tokens) have prompts past {model}'s {window:,}-token window"
    )
    if system.truncates_oldest:
        return (
            f"{what}: their conversations are cut to the window, oldest turns first (method.truncate=oldest)"
        )
    return (
        f"{what}: they will fail unsent (kind context_window; the estimate does not price their conversations); "
        "method.truncate=oldest cuts the oldest turns instead"
    )
