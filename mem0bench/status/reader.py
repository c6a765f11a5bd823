"""Where a run directory stands, read from its files alone: what each stage has done and has left, the
failures still open, what was paid and what the rest would cost (the dry-run estimate), whether a process
is working on it, and the command that resumes it.

It counts what a rerun would find, with the runner's own rules (`PreviousWork`, `current_judgements`): a
conversation is ingested when its latest ingest row is final; a question is answered when its latest
answer has a prediction made from the standing memory of its conversation; a judge label stands for the
judge of the run's config and the answer that stands. Nothing here writes to the run directory.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mem0bench.common.errors import ConfigurationError
from mem0bench.data.errors import DatasetError
from mem0bench.data.model import Dataset, Question
from mem0bench.llm.batch import BATCH_FILE, open_batches
from mem0bench.llm.settings import unpriced_server_note
from mem0bench.memory.stream import message_pairs
from mem0bench.pipeline.latency import standing_latency
from mem0bench.pipeline.spec import ExperimentSpec
from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.heartbeat import HeartbeatInfo, Liveness, liveness, with_heartbeat_cost
from mem0bench.rundir.records import AnswerRecord, FailureRecord, IngestRecord
from mem0bench.rundir.resume import PreviousWork, answer_stands, current_judgements
from mem0bench.rundir.usage import cached_prompt_by_stage

if TYPE_CHECKING:
    from mem0bench.pipeline.plan import StageEstimate


@dataclass(frozen=True)
class StageStatus:
    stage: str
    done: int
    total: int | None
    """None when the run's scope cannot be known (its dataset file cannot be read)."""
    unit: str
    left: tuple[str, ...] = ()
    """The items left, where they are few enough to name (conversation ids)."""

    @property
    def remaining(self) -> int | None:
        return None if self.total is None else max(self.total - self.done, 0)


@dataclass(frozen=True)
class OpenBatch:
    batch_id: str
    stage: str
    model: str
    requests: int


@dataclass(frozen=True)
class RunStatus:
    path: Path
    method: str
    recorded: str
    """run.json's status as the last process left it (running, complete, failed, aborted, ...)."""
    stages: tuple[StageStatus, ...]
    open_failures: dict[tuple[str, str], int]
    """(stage, kind) -> failures still open."""
    spent_usd: float
    """USD paid over every process (usage.json, or the last heartbeat where it says more)."""
    processes: int
    left: StageEstimate | None
    left_note: str
    """Why there is no estimate, or what it assumes."""
    process: Liveness
    last_seen: dict[str, Any]
    """The last progress counters a process wrote to heartbeat.json (empty when none)."""
    resume: str | None
    scope_error: str | None = None
    price_note: str | None = None
    """Why the money reads $0 (the server was not priced), from run.json's `server`."""
    cached_prompt: dict[str, dict[str, int]] = field(default_factory=dict)
    """stage -> {prompt, cached_prompt}: prompt tokens paid for and those the server served from its
    prompt cache (billed at the cached rate), over every process."""
    part: str | None = None
    """Which part of a sharded run the folder is (run.json's `shard`), or which shards a merged one holds."""
    timing: dict[str, Any] = field(default_factory=dict)
    """run.json's `timing` (`pipeline.stage_timing`): each stage's wall time and calls in the process that
    finished the run, ingest with its chain bound; empty before a process finished it."""
    open_batches: tuple[OpenBatch, ...] = ()
    """Batches (`llm.batch=true`) sent and not yet read back, from `batches.jsonl`: a rerun follows them
    instead of sending their requests again."""

    @property
    def finished(self) -> bool:
        """Nothing left in any stage and no failure open."""
        return all(s.remaining == 0 for s in self.stages) and not self.open_failures


def read_status(run_dir: Path) -> RunStatus:
    """The status of one run directory (which must exist)."""
    rundir = _RunReader(run_dir)
    manifest = rundir.manifest()
    heartbeat = HeartbeatInfo.read(rundir.path)
    spec, scope_error, method = _spec(rundir.path)
    previous = PreviousWork.read(rundir)
    scope: tuple[Dataset, dict[str, list[Question]]] | None = None
    if spec is not None:
        try:
            scope = _scope(spec, manifest, heartbeat)
        except (DatasetError, ConfigurationError, OSError, ValueError) as exc:
            scope_error = " ".join(str(exc).split())
    measured = len(standing_latency(rundir, previous.answers))  # the isolated pass's rows that still stand
    stages, left_fractions = _stages(spec, scope, previous, measured)
    left, note = _estimate_left(spec, scope, left_fractions)
    paid = _paid_per_process(rundir.path, previous)
    return RunStatus(
        path=rundir.path,
        method=str(manifest.get("method") or method or "?"),
        recorded=str(manifest.get("status", "not started")),
        stages=stages,
        open_failures=_open_failures(rundir, previous, spec),
        spent_usd=round(sum(paid.values()), 6),
        processes=len(paid),
        left=left,
        left_note=note if scope_error is None else f"no estimate: {scope_error}",
        process=liveness(heartbeat),
        last_seen=dict(heartbeat.progress) if heartbeat else {},
        resume=resume_command(rundir.path, manifest, heartbeat),
        scope_error=scope_error,
        price_note=_price_note(manifest),
        cached_prompt=cached_prompt_by_stage(previous.usage_sessions),
        part=_part(manifest),
        timing=dict(manifest.get("timing") or {}),
        open_batches=tuple(
            OpenBatch(b.batch_id, b.stage, b.model, len(b.keys))
            for b in open_batches(rundir.rows(BATCH_FILE))
        ),
    )


def _price_note(manifest: dict[str, Any]) -> str | None:
    server = manifest.get("server")
    if not isinstance(server, dict) or server.get("priced") is not False:
        return None
    return unpriced_server_note(str(server.get("base_url") or ""))


def _part(manifest: dict[str, Any]) -> str | None:
    shard, merged = manifest.get("shard"), manifest.get("merged_from")
    if isinstance(shard, dict):
        whole = shard.get("whole") or {}
        return (
            f"{shard.get('index')}/{shard.get('of')}: {len(shard.get('conversations') or [])} of the whole's "
            f"{len(whole.get('conversations') or [])} conversations (when all are complete: "
            "python -m mem0bench merge SWEEP --out DIR)"
        )
    if isinstance(merged, list):
        return f"merged from {len(merged)} shards"
    return None


# -- reading ---------------------------------------------------------------------------------------------
class _RunReader(RunDirectory):
    """A run directory opened only to read: unlike `RunDirectory()` it neither creates the folder nor
    removes temporary files (a live process may be writing one this very moment)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.state_dir = self.path / "state"
        self._appenders = {}


def _spec(run_dir: Path) -> tuple[ExperimentSpec | None, str | None, str | None]:
    """The run's config.yaml parsed as `run` parses its config, else None and why not; and the method's
    name, which a config cut short may still give."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        return None, "no config.yaml", None
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return None, "config.yaml is not a mapping", None
    method = data.get("method")
    name = str(method["name"]) if isinstance(method, dict) and method.get("name") is not None else None
    try:
        return ExperimentSpec.from_mapping(data), None, name
    except ConfigurationError as exc:
        return None, f"config.yaml: {' '.join(str(exc).split())}", name


def _absolute(path: str | None, cwd: str) -> str | None:
    if path is None or not str(path).strip():
        return path
    p = Path(str(path)).expanduser()
    return str(p if p.is_absolute() or not cwd else Path(cwd) / p)


def _scope(
    spec: ExperimentSpec, manifest: dict[str, Any], heartbeat: HeartbeatInfo | None
) -> tuple[Dataset, dict[str, list[Question]]]:
    """The run's dataset and questions, its relative paths read from where the run was started."""
    from mem0bench.pipeline.experiment import load_scope  # hydra and the systems: only when needed

    cwd = heartbeat.cwd if heartbeat else ""
    recorded = (manifest.get("dataset") or {}).get("path")
    scope = replace(
        spec.scope,
        path=_absolute(recorded or spec.scope.path, cwd),
        answer_key=_absolute(spec.scope.answer_key, cwd) if spec.scope.answer_key else None,
    )
    return load_scope(scope)


def _judge(spec: ExperimentSpec | None) -> tuple[str | None, int]:
    return (None, 0) if spec is None else (spec.judge.signature, spec.judge.runs)


def _standing_answers(previous: PreviousWork, spec: ExperimentSpec | None) -> dict[str, AnswerRecord]:
    """Answers a rerun would keep (`answer_stands`, the runner's own rule)."""
    retry = spec.run.retry_failed if spec is not None else False
    return {
        qid: answer
        for qid, answer in previous.answers.items()
        if answer_stands(answer, previous.ingests.get(answer.conversation), retry_failed=retry)
    }


def _stages(
    spec: ExperimentSpec | None,
    scope: tuple[Dataset, dict[str, list[Question]]] | None,
    previous: PreviousWork,
    measured_latency: int = 0,
) -> tuple[tuple[StageStatus, ...], dict[str, float]]:
    """Per stage done/total, and the share of each plan stage still to do (for the estimate);
    `measured_latency`: questions the isolated latency pass has timed."""
    signature, runs = _judge(spec)
    ingested = {sid for sid, row in previous.ingests.items() if row.is_final}
    answers = _standing_answers(previous, spec)
    if scope is not None:
        dataset, questions = scope
        sids = [c.sample_id for c in dataset.conversations]
        qids = {q.qid for qs in questions.values() for q in qs}
        pairs = {c.sample_id: len(message_pairs(c)) for c in dataset.conversations}
    else:
        sids = sorted(previous.ingests)
        qids = set(previous.answers)
        pairs = {}
    answered = {qid: a for qid, a in answers.items() if qid in qids}
    labels = 0
    if signature is not None:
        standing = current_judgements(previous.judgements, signature, runs, answered)
        labels = sum(1 for j in standing.values() if j.label is not None)
    known = scope is not None
    left_sids = tuple(s for s in sids if s not in ingested)
    stages = (
        StageStatus("ingest", len(set(sids) & ingested), len(sids) if known else None, "conversations", left_sids),
        StageStatus("answer", len(answered), len(qids) if known else None, "questions"),
        StageStatus("judge", labels, len(qids) * runs if known else None, f"labels ({runs} judge runs)" if runs else "labels"),
    )  # fmt: skip
    total_pairs = sum(pairs.values())
    fractions = {
        "ingest": sum(pairs[s] for s in left_sids) / total_pairs if total_pairs else 0.0,
        "search": 1 - len(answered) / len(qids) if qids else 0.0,
        "answer": 1 - len(answered) / len(qids) if qids else 0.0,
        "judge": 1 - labels / (len(qids) * runs) if qids and runs else 0.0,
    }
    if spec is not None and spec.run.latency != "inline" and qids:
        timed = min(spec.run.latency_questions or len(qids), len(qids))  # as the plan's latency lines
        fractions["latency"] = 1 - min(measured_latency, timed) / timed
    return stages, fractions


def _estimate_left(
    spec: ExperimentSpec | None,
    scope: tuple[Dataset, dict[str, list[Question]]] | None,
    fractions: dict[str, float],
) -> tuple[StageEstimate | None, str]:
    """The dry-run plan of the whole run, each stage scaled by the share of it still to do."""
    if spec is None or scope is None:
        return None, "no estimate"
    from mem0bench.pipeline.plan import StageEstimate, stage_estimates

    dataset, questions = scope
    try:
        plan = stage_estimates(spec, dataset, questions)
    except ImportError as exc:  # a custom system's module that this process cannot import
        target = spec.system.target or "?"
        reason = " ".join(str(exc).split())[:120]
        return None, f"no estimate: the system class {target} cannot be imported here ({reason})"
    except (ConfigurationError, KeyError, TypeError, ValueError) as exc:
        return None, f"no estimate: config.yaml cannot be planned ({' '.join(str(exc).split())[:120]})"
    calls = sum(e.calls * fractions.get(stage, 0.0) for stage, e in plan.items())
    usd = sum(e.usd * fractions.get(stage, 0.0) for stage, e in plan.items())
    return StageEstimate(calls, usd), "dry-run estimate at list prices; replies already cached cost nothing"


def _open_failures(
    rundir: RunDirectory, previous: PreviousWork, spec: ExperimentSpec | None
) -> dict[tuple[str, str], int]:
    """failures.jsonl rows still open: those the last finished process left unresolved, and those recorded
    since (a killed process never settled them) whose item no later row has put right."""
    signature, _ = _judge(spec)
    answers = previous.answers
    labelled = {
        (j.qid, j.run)
        for j in previous.judgements
        if j.label is not None and (signature is None or j.signature == signature)
    }
    counts: Counter[tuple[str, str]] = Counter()
    for row in rundir.rows("failures.jsonl"):
        failure = FailureRecord.from_dict(row)
        if failure.resolved is not None:
            still = not failure.resolved
        else:
            still = _unsettled_is_open(failure, previous.ingests, answers, labelled)
        if still:
            counts[(failure.stage, failure.kind)] += 1
    return dict(sorted(counts.items()))


def _unsettled_is_open(
    failure: FailureRecord,
    ingests: dict[str, IngestRecord],
    answers: dict[str, AnswerRecord],
    labelled: set[tuple[str, int]],
) -> bool:
    if failure.stage == "ingest" and failure.conversation:
        row = ingests.get(failure.conversation)
        return row is None or row.session == failure.session or not row.is_final
    if failure.stage in ("search", "answer") and failure.qid:
        answer = answers.get(failure.qid)
        return answer is None or answer.session == failure.session or answer.failure is not None
    if failure.stage == "judge" and failure.qid and failure.run is not None:
        return (failure.qid, int(failure.run)) not in labelled
    return True


def _paid_per_process(run_dir: Path, previous: PreviousWork) -> dict[str, float]:
    """session -> USD paid (usage.json, raised to the last heartbeat's figure where that says more)."""
    sessions = with_heartbeat_cost(run_dir, previous.usage_sessions)
    return {str(s.get("session")): float(s.get("cost_usd", 0.0)) for s in sessions}


# -- resuming --------------------------------------------------------------------------------------------
def resume_command(run_dir: Path, manifest: dict[str, Any], heartbeat: HeartbeatInfo | None) -> str | None:
    """The command that continues this run in this folder: its overrides again, with its run dir."""
    if heartbeat is not None and (heartbeat.overrides or heartbeat.cwd):
        # The heartbeat holds Hydra's task overrides only: the command line's own options (--config-dir,
        # --config-name ...) come from run.json's command.
        argv = [str(a) for a in manifest.get("command", [])][1:]
        overrides, cwd = [*_hydra_options(argv), *heartbeat.overrides], heartbeat.cwd
    else:
        argv = [str(a) for a in manifest.get("command", [])][1:]  # argv[0] is the program
        if not argv or any(a in ("-m", "--multirun") for a in argv):
            return None  # a sweep job started before heartbeats: its own overrides are not recorded
        overrides, cwd = argv, ""
    kept = [o for o in overrides if not o.lstrip("+").startswith(("hydra.run.dir=", "hydra.sweep."))]
    command = shlex.join(["python", "-m", "mem0bench", "run", *kept, f"hydra.run.dir={run_dir.resolve()}"])
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command


_VALUE_OPTIONS = ("--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn")


def _hydra_options(argv: list[str]) -> list[str]:
    """The options of a `run` command line that are not overrides but that the run needs again: where
    its config comes from (`--config-dir DIR`, `--config-name NAME`, ... in either spelling)."""
    kept: list[str] = []
    for i, arg in enumerate(argv):
        name = arg.split("=", 1)[0]
        if name not in _VALUE_OPTIONS:
            continue
        if "=" in arg:
            kept.append(arg)
        elif i + 1 < len(argv):
            kept += [arg, argv[i + 1]]
    return kept


def sweep_resume_command(sweep_dir: Path, runs: list[Path]) -> str | None:
    """The multirun command that continues every job of a sweep in its own folder (finished jobs are
    reused, so rerunning them costs nothing)."""
    for run_dir in runs:
        manifest = _RunReader(run_dir).manifest()
        argv = [str(a) for a in manifest.get("command", [])][1:]
        if any(a in ("-m", "--multirun") for a in argv):
            heartbeat = HeartbeatInfo.read(run_dir)
            kept = [a for a in argv if not a.lstrip("+").startswith(("hydra.sweep.dir=", "hydra.run.dir="))]
            command = shlex.join(
                ["python", "-m", "mem0bench", "run", *kept, f"hydra.sweep.dir={Path(sweep_dir).resolve()}"]
            )
            cwd = heartbeat.cwd if heartbeat else ""
            return f"cd {shlex.quote(cwd)} && {command}" if cwd else command
    return None
