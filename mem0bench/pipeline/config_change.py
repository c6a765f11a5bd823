"""A run folder belongs to one configuration: what a rerun into an existing folder may change.

A rerun compares its resolved config with the folder's config.yaml (and the dataset's sha256 and the prompt
files' hashes with run.json's). A setting that changes no result (concurrency, timeouts, progress, the cache
folder, ...) may differ: it is recorded in run.json's `setting_changes`. Any other difference stops the run
before any work, in one line naming it, unless `run.allow_config_change=true`: then the stages the change
reaches are computed again, and only those (`Reach`), and run.json's `config_changes` says what changed.

The result-neutral settings are an explicit allow-list (`NEUTRAL_KEYS`, `NEUTRAL_PREFIXES`): a key not on it,
a new one included, counts as changing results (the safe side).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum
from pathlib import Path
from typing import Any

import yaml

from mem0bench.common import mappings
from mem0bench.common.errors import ConfigurationError
from mem0bench.rundir.directory import RunDirectory
from mem0bench.systems.aliases import current_target

__all__ = [
    "IGNORED",
    "ConfigChanges",
    "Reach",
    "change_history",
    "compare_configs",
    "compare_recorded",
    "flatten",
    "folder_changes",
    "is_neutral",
    "reach_of",
    "supersede",
]

ABSENT = "(absent)"

NEUTRAL_KEYS = frozenset(
    {
        # How a run goes, not what it computes.
        "run.strict", "run.max_failure_rate", "run.retry_failed", "run.remeasure_latency", "run.dry_run",
        "run.progress",
        # Where things are kept: the dataset's content is compared by its sha256 instead of its path.
        "cache.enabled", "cache.dir", "dataset.path", "dataset.data_dir",
        # How calls are made: the same requests (the response cache keys them without the server's URL).
        "llm.base_url", "llm.api_key_env", "llm.timeout_s", "llm.max_retries", "llm.backoff_base_s",
        "llm.backoff_max_s", "llm.unreachable_after_s", "llm.repair_attempts", "llm.max_concurrency",
        "llm.rpm", "llm.tpm", "llm.requests_per_minute", "llm.tokens_per_minute", "llm.check_models", "llm.price_any_server",
        "llm.probe", "embedder.batch_size", "embedder.device",
        # The Batch API sends the same request bodies (cache keys) and gets the same replies from a
        # deterministic server; only when and at what price they come differ.
        "llm.batch", "llm.batch_poll_s", "llm.batch_window_s",
        # How a memory service (http_system, mem0_v2) is reached and how many threads serve a library.
        "method.timeout_s", "method.max_retries", "method.max_concurrency", "method.workers",
        # How far Mem0's extraction runs ahead of its update chain: the same requests in another order.
        "method.lookahead",
    }
)  # fmt: skip
NEUTRAL_PREFIXES = ("llm.prices.",)
"""Prices change what a call is said to cost, never a reply; each process's cost is priced when paid."""
ADDED_DEFAULTS: dict[str, Any] = {"llm.context_window": None, "method.truncate": "none"}
"""Keys added after folders were made, at the value that behaves as those folders' runs did: absent from an
older config.yaml, the key at this value is no change."""
IGNORED = frozenset({"run.allow_config_change"})
"""Not compared at all: it is what lets this one rerun change the others."""


class Reach(IntEnum):
    """How far back a change reaches: every stage from it on is computed again (a higher value includes
    the lower ones: new memories need new answers, new answers new judgements)."""

    SCOPE = 0
    """Which questions count: nothing is computed again (questions new to the scope are done as usual)."""
    AGGREGATE = 1
    """Only the figures (bootstrap, latency pass): computed from the rows at every finish anyway."""
    JUDGE = 2
    ANSWER = 3
    INGEST = 4


# Result-changing keys that reach less than ingestion; every other one (method, llm, embedder, graph, the
# dataset's content, a key we do not know) reaches ingestion.
_REACH_PREFIXES: tuple[tuple[str, Reach], ...] = (
    ("run.shard", Reach.INGEST),  # another part of the conversations: never resumed as this one's
    ("judge.", Reach.JUDGE),
    ("dataset.answer_key", Reach.JUDGE),
    # BEAM's judge switches (suites/beam.py): how the rubric judge asks and scores, nothing upstream.
    ("dataset.judge_question", Reach.JUDGE),
    ("dataset.partial_credit", Reach.JUDGE),
    ("dataset.event_ordering_score", Reach.JUDGE),
    ("prompt_files.judge.", Reach.JUDGE),
    ("answer.", Reach.ANSWER),  # answer.prompt=zep|amem included
    # mem0_oss_graph's relation dates change only how the same memories are shown. The other switches of
    # issue 38 change what is stored, so reach ingestion (the default below): method.extraction_date
    # (mem0_oss), method.fact_dates (zep_graphiti: the stored memory's size is measured as rendered),
    # method.library_temperature (zep_graphiti), method.store_clock (langmem), method.temperature (amem),
    # method.prompts_dir (memu: its own prompt files for extraction and search; their contents, recorded as
    # prompt_files.method.prompts_dir.*, too).
    ("method.relation_dates", Reach.ANSWER),
    # cognee's retrieval: which lanes' top_k and whether cognee completes the answer; its memory (a
    # conversation's one remember()) does not change with them.
    ("method.chunks_top_k", Reach.ANSWER),
    ("method.entities_top_k", Reach.ANSWER),
    ("method.facts_top_k", Reach.ANSWER),
    ("method.max_edges_per_entity", Reach.ANSWER),
    ("method.answer_by", Reach.ANSWER),
    ("eval.context_tokens_max", Reach.ANSWER),
    # Which answer prompts are sent (a prompt past the window fails unsent) or how full_context cuts the
    # conversation to the window: the answers change, the memories (full_context has none) do not.
    ("llm.context_window", Reach.ANSWER),
    ("method.truncate", Reach.ANSWER),
    ("prompt_files.answer.", Reach.ANSWER),
    ("eval.bootstrap", Reach.AGGREGATE),
    ("eval.latency", Reach.AGGREGATE),
    ("eval.missing_answers", Reach.AGGREGATE),
    ("dataset.conversations", Reach.SCOPE),
    ("eval.include_adversarial", Reach.SCOPE),
    ("eval.max_questions", Reach.SCOPE),
    ("eval.sample", Reach.SCOPE),
    ("eval.seed", Reach.SCOPE),
)

# The stage file a reach supersedes: its rows no longer stand, and every row made from them (answers of a
# memory, judgements of an answer, latency of a memory) stops standing with them, by the ids they carry.
_SUPERSEDED_FILE = {
    Reach.INGEST: "ingest.jsonl",
    Reach.ANSWER: "answers.jsonl",
    Reach.JUDGE: "judgements.jsonl",
}
_RECOMPUTED = {
    Reach.SCOPE: "nothing (the question scope only)",
    Reach.AGGREGATE: "the figures only (the latency pass times what it lacks)",
    Reach.JUDGE: "the judgements",
    Reach.ANSWER: "the answers and judgements",
    Reach.INGEST: "everything: ingestion, answers and judgements",
}
SUPERSEDED_DIR = "superseded"


def is_neutral(key: str) -> bool:
    return key in NEUTRAL_KEYS or key.startswith(NEUTRAL_PREFIXES)


def reach_of(key: str) -> Reach:
    for prefix, reach in _REACH_PREFIXES:
        if key.startswith(prefix):  # "eval.bootstrap" covers eval.bootstrap_seed too
            return reach
    return Reach.INGEST


def flatten(config: Mapping[str, Any]) -> dict[str, Any]:
    """`common.mappings.flatten` (dotted keys; an empty mapping holds no setting), with `method._target_`
    under its current name."""
    out = mappings.flatten(config)
    if isinstance(out.get("method._target_"), str):
        out["method._target_"] = current_target(out["method._target_"])
    return out


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:28] + "..." + text[-28:]


@dataclass
class ConfigChanges:
    """The differences between a run folder's configuration and a rerun's."""

    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """key -> (old, new), every difference."""

    @property
    def result_changing(self) -> dict[str, tuple[Any, Any]]:
        return {k: v for k, v in self.changes.items() if not is_neutral(k)}

    @property
    def neutral(self) -> dict[str, tuple[Any, Any]]:
        return {k: v for k, v in self.changes.items() if is_neutral(k)}

    @property
    def reach(self) -> Reach | None:
        keys = self.result_changing
        return max(map(reach_of, keys)) if keys else None

    def add(self, key: str, old: Any, new: Any) -> None:
        if old != new:
            self.changes[key] = (old, new)

    def described(self, changes: Mapping[str, tuple[Any, Any]]) -> str:
        return "; ".join(f"{k}: {_shown(old)} -> {_shown(new)}" for k, (old, new) in sorted(changes.items()))

    def check(self, run_dir: Path, *, allowed: bool) -> None:
        """One line and no work when the results would change and the change is not allowed."""
        reach = self.reach
        # A change of scope (which questions count) or of how figures are summarised recomputes nothing:
        # every row standing was made under the same settings, so it is recorded, not refused.
        if reach is None or reach <= Reach.AGGREGATE or allowed:
            return
        raise ConfigurationError(
            f"the run folder {run_dir} holds results of another configuration "
            f"({self.described(self.result_changing)}); "
            "its results would mix the two: choose a new folder (hydra.run.dir=...), or add "
            f"run.allow_config_change=true to recompute what the change reaches ({_RECOMPUTED[reach]})"
        )

    def records(self, at: str, superseded: str | None) -> dict[str, dict[str, Any]]:
        """run.json entries for this rerun: {'config_changes': ..., 'setting_changes': ...} (those there are)."""
        out: dict[str, dict[str, Any]] = {}

        def pairs(changes: Mapping[str, tuple[Any, Any]]) -> dict[str, list[Any]]:
            return {k: [old, new] for k, (old, new) in sorted(changes.items())}

        if self.neutral:
            out["setting_changes"] = {"at": at, "changes": pairs(self.neutral)}
        reach = self.reach
        if reach is not None:
            entry: dict[str, Any] = {"at": at, "changes": pairs(self.result_changing)}
            entry["recomputed"] = _RECOMPUTED[reach]
            if superseded is not None:
                entry["superseded"] = superseded
            out["config_changes"] = entry
        return out


def compare_configs(old: Mapping[str, Any], new: Mapping[str, Any]) -> ConfigChanges:
    """Every difference between two saved configs (config.yaml's content), by dotted key."""
    before, after = flatten(old), flatten(new)
    found = ConfigChanges()
    for key in sorted((before.keys() | after.keys()) - IGNORED):
        added = ADDED_DEFAULTS.get(key, ABSENT) if key in after else ABSENT
        found.add(key, before.get(key, added), after.get(key, ABSENT))
    return found


def compare_recorded(found: ConfigChanges, manifest: Mapping[str, Any], dataset_sha256: str,
                     prompt_files: Mapping[str, Any]) -> None:  # fmt: skip
    """Add what config.yaml cannot show: the dataset's content (run.json's sha256) and the prompt files'
    (a file edited in place keeps its path)."""
    old_sha = (manifest.get("dataset") or {}).get("sha256")
    if old_sha is not None:
        found.add("dataset.sha256", old_sha, dataset_sha256)
    old_files = manifest.get("prompt_files") or {}
    for setting in sorted(old_files.keys() | prompt_files.keys()):
        old = (old_files.get(setting) or {}).get("sha256", ABSENT)
        new = (prompt_files.get(setting) or {}).get("sha256", ABSENT)
        found.add(f"prompt_files.{setting}.sha256", old, new)


def supersede(rundir: RunDirectory, reach: Reach | None) -> str | None:
    """Move the stage file the change reaches into superseded/<time>/ (history, read by nothing): its rows
    and every row made from them stop standing, so exactly the reached stages are computed again. -> the
    folder, relative to the run's, or None when nothing was moved."""
    name = _SUPERSEDED_FILE.get(reach) if reach is not None else None
    if name is None or not rundir.file(name).exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S-%fZ")
    target = rundir.path / SUPERSEDED_DIR / stamp
    target.mkdir(parents=True, exist_ok=True)
    rundir.close()  # no appender keeps writing into the moved file
    shutil.move(str(rundir.file(name)), str(target / name))
    return f"{SUPERSEDED_DIR}/{stamp}"


def folder_changes(rundir: RunDirectory, saved: Mapping[str, Any]) -> ConfigChanges:
    """The differences between the folder's config.yaml (none in a new folder) and `saved`, the config a
    rerun would write there."""
    path = rundir.file("config.yaml")
    if not path.exists():
        return ConfigChanges()
    try:
        old = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(
            f"cannot read {path} ({type(exc).__name__}), so a rerun cannot tell whether it changes the "
            "run's results: choose a new folder (hydra.run.dir=...)"
        ) from None
    if not isinstance(old, Mapping):
        raise ConfigurationError(f"{path} is not a mapping: choose a new folder (hydra.run.dir=...)")
    return compare_configs(old, saved)


def change_history(
    manifest: Mapping[str, Any], found: ConfigChanges, superseded: str | None
) -> dict[str, Any]:
    """run.json's `config_changes` and `setting_changes` lists: the earlier entries, plus this rerun's."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    new = found.records(at, superseded)
    out: dict[str, Any] = {}
    for key in ("config_changes", "setting_changes"):
        entries = [*manifest.get(key, []), *([new[key]] if key in new else [])]
        if entries:
            out[key] = entries
    return out
