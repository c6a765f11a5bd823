"""Token and cost accounting per stage (ingest, search, answer, judge, ...).

Every reply the client returns is recorded once: paid replies add tokens and cost; cached replies add
their tokens to the stage totals (what the stage consumed) but cost nothing (they were not bought again),
so `paid_prompt_tokens` / `paid_completion_tokens` say what this run actually paid for.

Prompt tokens the server served from its own prompt cache (`cached_prompt_tokens`, OpenAI's
`prompt_tokens_details.cached_tokens`) are billed at the model's `cached_prompt` rate:
cost = (prompt - cached) * prompt rate + cached * cached rate + completion * completion rate.
A model with no cached rate in the table has them priced at its full prompt rate, and is listed in the
snapshot's `no_cached_rate_models` so that the figure is not taken for OpenAI's bill.

Replies that came through the Batch API (`llm.batch=true`) are priced at the batch rates: a model entry's
`batch_prompt` / `batch_completion` when it gives them, else half its online rates (OpenAI's Batch API
discount), cached prompt tokens at half the cached rate. Each stage counts them (`batch_calls`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from mem0bench.llm.sampling import Sampling, merge_sampling
from mem0bench.llm.types import StageUsage, Usage


@dataclass
class StageTotals(StageUsage):
    """`StageUsage` plus what was actually paid for and how often the client had to retry or repair."""

    paid_prompt_tokens: int = 0
    paid_completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of `prompt_tokens`, those the server reported as served from its prompt cache."""
    paid_cached_prompt_tokens: int = 0
    """Of `paid_prompt_tokens`, those billed at the cached rate."""
    retries: int = 0
    repairs: int = 0
    fresh_retries: int = 0
    """Calls asked again past the cache because the cached reply had failed (run.retry_failed=true)."""
    models: dict[str, int] = field(default_factory=dict)
    """Calls per model."""
    batch_calls: int = 0
    """Of the paid calls, those answered through the Batch API (priced at the batch rates)."""


def _cached_rate(price: Mapping[str, float]) -> float | None:
    """A model's cached prompt rate (USD per 1M), None when the table gives none."""
    rate = price.get("cached_prompt")
    return None if rate is None else float(rate)


BATCH_DISCOUNT = 0.5
"""The Batch API's price as a share of the online price, for a model entry without batch rates."""


def batch_rates(price: Mapping[str, float]) -> tuple[float, float, float | None]:
    """A model's Batch API rates (prompt, completion, cached prompt; USD per 1M): the entry's
    `batch_prompt` / `batch_completion` when given, else half the online rates."""
    prompt = float(price.get("prompt", 0.0))
    cached = _cached_rate(price)
    batch_prompt = float(price.get("batch_prompt", prompt * BATCH_DISCOUNT))
    batch_completion = float(
        price.get("batch_completion", float(price.get("completion", 0.0)) * BATCH_DISCOUNT)
    )
    # The cached share of the prompt rate is kept in the batch's prompt rate.
    batch_cached = None if cached is None else (cached * batch_prompt / prompt if prompt else 0.0)
    return batch_prompt, batch_completion, batch_cached


def pipeline_stage(stage: str) -> str:
    """The pipeline stage (ingest, search, answer, judge, ...) a ledger stage's calls belong to.

    Our own systems call under the pipeline's names; a third-party library's calls come through the
    bridge under `<system>_<pipeline stage>` (e.g. `graphiti_ingest`), kept apart in usage.json but
    counted by the progress bars with the pipeline stage they serve: the part after the last underscore.
    """
    return stage.rsplit("_", 1)[-1]


class UsageLedger:
    """Per-stage usage and cost. `prices`: {model: {"prompt": usd_per_1M, "completion": usd_per_1M,
    "cached_prompt": usd_per_1M (optional)}}.

    A model missing from the table costs 0 and is listed in `unpriced_models` (unless marked free with
    `mark_free`, e.g. a local embedding model). `free=True`: the server does not bill (a local or
    self-hosted server), so every call costs 0 and no model is flagged.
    """

    def __init__(
        self, prices: Mapping[str, Mapping[str, float]] | None = None, *, free: bool = False
    ) -> None:
        self.free = free
        self._prices: dict[str, tuple[float, float, float | None]] = {
            m: (float(p.get("prompt", 0.0)), float(p.get("completion", 0.0)), _cached_rate(p))
            for m, p in (prices or {}).items()
            if not free
        }
        self._batch_prices = {m: batch_rates(p) for m, p in (prices or {}).items() if not free}
        self._no_cached_rate: set[str] = set()
        self._stages: dict[str, StageTotals] = {}
        self._unpriced: set[str] = set()
        self._sampling: dict[str, set[Sampling]] = {}
        self._lock = threading.Lock()
        self.journal: Callable[[dict[str, Any]], None] | None = None
        """Called with every paid reply (stage, model, tokens, cost) as it is recorded, so a run can keep
        an append-only journal that survives a kill (`rundir.usage`)."""
        self._journaled = 0

    def attach_journal(self, journal: Callable[[dict[str, Any]], None]) -> None:
        """Journal every paid reply from now on; what was paid before (the preflight's probes) goes in
        first, one row per stage."""
        with self._lock:
            for stage, s in sorted(self._stages.items()):
                calls = s.calls - s.cached_calls
                if calls > 0:
                    journal(
                        {"stage": stage, "calls": calls, "prompt": s.paid_prompt_tokens,
                         "completion": s.paid_completion_tokens, "cached": s.paid_cached_prompt_tokens,
                         "cost_usd": s.cost_usd}
                    )  # fmt: skip
                    self._journaled += 1
            self.journal = journal

    def mark_free(self, model: str) -> None:
        """Declare a model free of charge (local); its calls are not flagged as unpriced."""
        with self._lock:
            self._prices[model] = (0.0, 0.0, 0.0)
            self._batch_prices[model] = (0.0, 0.0, 0.0)
            self._unpriced.discard(model)

    def _stage(self, stage: str) -> StageTotals:
        s = self._stages.get(stage)
        if s is None:
            s = self._stages[stage] = StageTotals()
        return s

    def cost_of(self, model: str, usage: Usage, *, batch: bool = False) -> float:
        """USD for `usage` on `model` (0 when the model is not priced); cached prompt tokens at the cached
        rate, or at the full prompt rate when the model has none; `batch`: at the Batch API's rates."""
        price = (self._batch_prices if batch else self._prices).get(model)
        if price is None:
            return 0.0
        prompt_rate, completion_rate, cached_rate = price
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        cached_rate = prompt_rate if cached_rate is None else cached_rate
        return (
            (usage.prompt_tokens - cached) * prompt_rate + cached * cached_rate
            + usage.completion_tokens * completion_rate
        ) / 1_000_000  # fmt: skip

    def record(self, stage: str, model: str, usage: Usage, cached: bool, *, batch: bool = False) -> None:
        """Record one reply (a chat completion or an embedding request); `batch`: a paid reply that came
        through the Batch API, priced at its rates."""
        with self._lock:
            s = self._stage(stage)
            s.calls += 1
            s.models[model] = s.models.get(model, 0) + 1
            s.prompt_tokens += usage.prompt_tokens
            s.completion_tokens += usage.completion_tokens
            s.cached_prompt_tokens += usage.cached_tokens
            if cached:
                s.cached_calls += 1
                return
            s.paid_prompt_tokens += usage.prompt_tokens
            s.paid_completion_tokens += usage.completion_tokens
            s.paid_cached_prompt_tokens += usage.cached_tokens
            s.batch_calls += int(batch)
            cost = 0.0
            if not self.free:
                if model not in self._prices:
                    self._unpriced.add(model)
                else:
                    cost = self.cost_of(model, usage, batch=batch)
                    s.cost_usd += cost
                    if usage.cached_tokens and self._prices[model][2] is None:
                        self._no_cached_rate.add(model)
            if self.journal is not None:
                # Under the lock: the snapshot's `journal_rows` counts exactly the rows written before it.
                self.journal(
                    {"stage": stage, "model": model, "prompt": usage.prompt_tokens,
                     "completion": usage.completion_tokens, "cached": usage.cached_tokens, "cost_usd": cost,
                     **({"batch": True} if batch else {})}
                )  # fmt: skip
                self._journaled += 1

    def record_sampling(self, stage: str, sampling: Sampling) -> None:
        """Record the sampling parameters a chat request of `stage` went out with (cached or not)."""
        with self._lock:
            self._sampling.setdefault(stage, set()).add(sampling)

    def sampling(self) -> dict[str, list[dict[str, Any]]]:
        """{stage: [the sampling combinations its chat requests used]} (see `merge_sampling`)."""
        with self._lock:
            blocks = {stage: [s.to_dict() for s in found] for stage, found in self._sampling.items()}
        return merge_sampling([blocks])

    def record_failure(self, stage: str, kind: str) -> None:
        """Record a call that gave up for good (after retries / repairs)."""
        with self._lock:
            s = self._stage(stage)
            s.failures += 1
            s.failure_kinds[kind] = s.failure_kinds.get(kind, 0) + 1

    def record_retry(self, stage: str) -> None:
        with self._lock:
            self._stage(stage).retries += 1

    def record_repair(self, stage: str) -> None:
        with self._lock:
            self._stage(stage).repairs += 1

    def record_fresh_retry(self, stage: str) -> None:
        with self._lock:
            self._stage(stage).fresh_retries += 1

    def stage(self, stage: str) -> StageTotals:
        """A copy of one stage's totals (zeros if nothing was recorded)."""
        with self._lock:
            s = self._stages.get(stage)
            if s is None:
                return StageTotals()
            return StageTotals(**{**asdict(s)})

    @property
    def stages(self) -> dict[str, StageTotals]:
        with self._lock:
            return {k: StageTotals(**asdict(v)) for k, v in self._stages.items()}

    @property
    def unpriced_models(self) -> list[str]:
        with self._lock:
            return sorted(self._unpriced)

    def total_cost(self) -> float:
        with self._lock:
            return sum(s.cost_usd for s in self._stages.values())

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able view: per stage totals, the grand total, cost and unpriced models."""
        with self._lock:
            stages = {name: asdict(s) for name, s in sorted(self._stages.items())}
            total: dict[str, Any] = {}
            for s in stages.values():
                for key, value in s.items():
                    if isinstance(value, dict):
                        agg = total.setdefault(key, {})
                        for k, v in value.items():
                            agg[k] = agg.get(k, 0) + v
                    else:
                        total[key] = total.get(key, 0) + value
            if not total:
                total = asdict(StageTotals())
            total["cost_usd"] = round(float(total.get("cost_usd", 0.0)), 10)
            found = {stage: [s.to_dict() for s in rows] for stage, rows in self._sampling.items()}
            return {
                "stages": stages,
                "total": total,
                "cost_usd": total["cost_usd"],
                "unpriced_models": sorted(self._unpriced),
                **({"no_cached_rate_models": sorted(self._no_cached_rate)} if self._no_cached_rate else {}),
                "sampling": merge_sampling([found]),
                **({"journal_rows": self._journaled} if self.journal is not None else {}),
            }
