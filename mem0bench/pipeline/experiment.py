"""From a composed Hydra config to a finished run: build the pieces, check them, run, report."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.text import one_line
from mem0bench.data import load_dataset, resolve_dataset_path
from mem0bench.data.answer_key import apply_answer_key, read_answer_key
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.payloads import request_adaptation
from mem0bench.llm.probes import Probe, probe
from mem0bench.llm.reachability import ServerUnreachable
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.paths import cache_home, data_home
from mem0bench.pipeline.advice import rerun_advice
from mem0bench.pipeline.attempt import RunOptions
from mem0bench.pipeline.budget import check_budget
from mem0bench.pipeline.configs import config_section, method_config
from mem0bench.pipeline.failures import RunAborted
from mem0bench.pipeline.heartbeat import beating, with_heartbeat_cost
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.manifest import run_scope, server_record
from mem0bench.pipeline.plan import print_plan, stage_estimates
from mem0bench.pipeline.progress import parse_mode
from mem0bench.pipeline.rundir import RunDirectory, discard_unused_run_dir
from mem0bench.pipeline.runner import Runner
from mem0bench.pipeline.sample import SAMPLES, Sample, sample_questions
from mem0bench.pipeline.statistics import DEFAULT_REPLICATES, BootstrapSettings
from mem0bench.pipeline.summary import print_summary
from mem0bench.prompts.answer import ANSWER_PROMPTS, AnswerPrompt
from mem0bench.tokens import encoding

SECRET_KEYS = ("api_key",)


def public_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data, with every secret-looking key removed (at any depth)."""
    data = OmegaConf.to_container(cfg, resolve=True)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not any(s in str(k).lower() for s in SECRET_KEYS)}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(data)


def saved_config(cfg: DictConfig, settings: LLMSettings, judge: JudgeSettings) -> dict[str, Any]:
    """What config.yaml holds: the public config, plus how requests were adapted to the models used."""
    config = public_config(cfg)
    adaptations = {
        model: note
        for model in dict.fromkeys([settings.model, judge.model])
        if (note := request_adaptation(model, settings)) is not None
    }
    if adaptations:
        config["request_adaptations"] = adaptations
    return config


def judge_settings(cfg: DictConfig) -> JudgeSettings:
    data = config_section(cfg.judge)
    known = set(JudgeSettings.__dataclass_fields__)
    for key in data:
        if key not in known:
            raise ConfigurationError(f"unknown judge setting '{key}' (known: {', '.join(sorted(known))})")
    try:
        return JudgeSettings(**data)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        raise ConfigurationError(text if text.startswith("judge.") else f"judge: {text}") from None


def build_client(cfg: DictConfig) -> LLMClient:
    settings = LLMSettings.from_config(config_section(cfg.llm))
    embedder = EmbedderSettings.from_config(config_section(cfg.embedder))
    cache_path = cache_home(cfg.cache.dir) / "llm-cache.sqlite" if cfg.cache.enabled else None
    try:
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
        return LLMClient.from_settings(settings, embedder, cache_path=cache_path)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigurationError(
            f"cannot use the cache folder {cache_path.parent if cache_path else cfg.cache.dir} "
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


def build_system(cfg: DictConfig, client: LLMClient, rundir: RunDirectory) -> MemorySystem:
    context = SystemContext(
        client=client,
        state_dir=rundir.state_dir,
        graph={**config_section(cfg.graph), "run_id": rundir.path.name},
    )
    try:
        # A partial first: Hydra would otherwise try to turn the context object into config.
        factory = instantiate(method_config(cfg), _partial_=True, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        raise ConfigurationError(f"method {cfg.method.get('name')}: {cause}") from None
    try:
        return factory(context=context)
    except (TypeError, ValueError) as exc:
        name = str(cfg.method.get("name"))
        text = one_line(exc)
        raise ConfigurationError(text if text.startswith(f"{name}:") else f"method {name}: {text}") from None


def select_questions(
    conversation: Conversation,
    *,
    include_adversarial: bool,
    max_questions: int | None,
    sample: Sample = "first",
    seed: int = 0,
) -> list[Question]:
    """LOCOMO categories 1-4 (the paper's scope), plus 5 on request; optionally N of them (the first N,
    or a seeded sample that keeps each category's share: `sample`)."""
    chosen = [q for q in conversation.questions if include_adversarial or int(q.category) != 5]
    return sample_questions(chosen, max_questions, how=sample, seed=f"{seed}:{conversation.sample_id}")


def conversation_ids(value: Any) -> list[str] | None:
    """`dataset.conversations`: null (all), one id as a string, or a list of ids; an empty list is an error."""
    if value is None:
        return None
    if isinstance(value, str):  # `dataset.conversations=conv-26`: one id, not its characters
        return [value]
    ids = [str(v) for v in value]
    if not ids:
        raise ConfigurationError(
            "dataset.conversations=[] selects no conversation: name at least one id, or leave it unset for all"
        )
    return ids


def load_scope(cfg: DictConfig) -> tuple[Dataset, dict[str, list[Question]]]:
    """The dataset and, per conversation, the questions a run of `cfg` covers (paths relative to cwd)."""
    dataset = load_dataset(
        resolve_dataset_path(cfg.dataset.path, data_home(cfg.dataset.data_dir)),
        conversations=conversation_ids(cfg.dataset.conversations),
        fold_captions=bool(cfg.dataset.fold_captions),
    )
    if cfg.dataset.get("answer_key"):
        key = read_answer_key(cfg.dataset.answer_key, dataset)
        dataset = apply_answer_key(dataset, key, cfg.dataset.get("answer_key_mode", "replace"))
    questions = {
        c.sample_id: select_questions(
            c,
            include_adversarial=bool(cfg.eval.include_adversarial),
            max_questions=cfg.eval.max_questions,
            sample=str(cfg.eval.get("sample", "first")),  # type: ignore[arg-type]
            seed=int(cfg.eval.get("seed", 0)),
        )
        for c in dataset.conversations
    }
    if not any(questions.values()):
        raise ConfigurationError(
            "no question selected: the chosen conversations have none in scope "
            "(eval.include_adversarial=true adds category 5)"
        )
    return dataset, questions


def run_options(cfg: DictConfig) -> RunOptions:
    """`run.*` checked: a bad value stops the run before anything happens, in one line."""
    run = cfg.run
    try:
        rate = float(run.max_failure_rate)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"run.max_failure_rate must be a number between 0 and 1, not {run.max_failure_rate!r}"
        ) from None
    if not 0.0 <= rate <= 1.0:
        raise ConfigurationError(f"run.max_failure_rate must be between 0 and 1, not {rate}")
    try:
        progress = parse_mode(run.progress)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    for name in ("strict", "dry_run", "retry_failed"):
        if not isinstance(run.get(name), bool):
            raise ConfigurationError(f"run.{name} must be true or false, not {run.get(name)!r}")
    answer_prompt = cfg.get("answer", {}).get("prompt", "default")
    if answer_prompt not in ANSWER_PROMPTS:
        raise ConfigurationError(
            f"answer.prompt must be one of {', '.join(ANSWER_PROMPTS)}, not {answer_prompt!r}"
        )
    limit = cfg.eval.max_questions
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigurationError(f"eval.max_questions must be null or an integer >= 1, not {limit!r}")
    if cfg.eval.get("sample", "first") not in SAMPLES:
        raise ConfigurationError(f"eval.sample must be one of {', '.join(SAMPLES)}, not {cfg.eval.sample!r}")
    seed = cfg.eval.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigurationError(f"eval.seed must be an integer, not {seed!r}")
    return RunOptions(
        strict=bool(run.strict),
        max_failure_rate=rate,
        progress=progress,
        answer_prompt=cast(AnswerPrompt, answer_prompt),
        bootstrap=bootstrap_settings(cfg),
        retry_failed=bool(run.retry_failed),
        context_tokens_max=check_budget(cfg.eval.get("context_tokens_max")),
    )


def bootstrap_settings(cfg: DictConfig) -> BootstrapSettings:
    """`eval.bootstrap` and `eval.bootstrap_seed` checked (configs written before they existed: defaults)."""
    try:
        return BootstrapSettings(
            replicates=cfg.eval.get("bootstrap", DEFAULT_REPLICATES), seed=cfg.eval.get("bootstrap_seed", 0)
        )
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


async def run_experiment(cfg: DictConfig, run_dir: Path) -> int:
    """The `run` command's body. Returns the process exit code.

    Order: what can be checked offline (run options, judge settings, the method's hyperparameters) is
    checked first, then the key, the server and the models (one GET /models), then the dataset; only then
    does the run directory get its files and the first LLM call go out.
    """
    # faiss announces at import, at INFO, each CPU build it tries: keep that out of the console and log.
    logging.getLogger("faiss").setLevel(logging.WARNING)
    # The folders actually used, in config.yaml too (null there means "the per-user default").
    cfg.cache.dir = str(cache_home(cfg.cache.dir))
    cfg.dataset.data_dir = str(data_home(cfg.dataset.data_dir))
    options = run_options(cfg)
    judge = judge_settings(cfg)
    conversation_ids(cfg.dataset.conversations)  # an empty selection stops here, before the server is asked
    encoding()  # offline without TIKTOKEN_CACHE_DIR: one line now, not a traceback mid-run
    if cfg.run.dry_run:
        dataset, questions = load_scope(cfg)
        print_plan(cfg, dataset, questions, judge)
        return 0

    client = build_client(cfg)
    client.retry_cached_failures = options.retry_failed
    system: MemorySystem | None = None
    rundir: RunDirectory | None = None
    try:
        check_run_dir(run_dir)
        rundir = RunDirectory(run_dir)
        system = build_system(cfg, client, rundir)
        # The key and the server before the dataset: with no key, nothing is downloaded either.
        await client.preflight(extra_models=[judge.model, *judge.panel])
        dataset, questions = load_scope(cfg)
        await probe(
            client,
            [Probe(model, judge.mode, "judge.mode") for model in dict.fromkeys([judge.model, *judge.panel])],
        )
        rundir.start(
            config_yaml=OmegaConf.to_yaml(OmegaConf.create(saved_config(cfg, client.settings, judge))),
            method=str(cfg.method.name),
            dataset_path=dataset.path,
            dataset_sha256=dataset.sha256,
            system_packages=system.packages,
            server=server_record(client),
            scope=run_scope(cfg, questions),
        )
        runner = Runner(
            dataset=dataset, questions=questions, system=system, client=client,
            rundir=rundir, judge=judge, options=options, method_name=str(cfg.method.name),
        )  # fmt: skip
        # What a killed earlier process paid after its last save of usage.json is in its heartbeat, which
        # this process is about to overwrite: keep it in usage.json.
        runner.attempt.usage.earlier = with_heartbeat_cost(rundir.path, runner.attempt.usage.earlier)
        estimates = stage_estimates(cfg, dataset, questions, judge)
        runner.attempt.progress.plan({stage: e.calls for stage, e in estimates.items()})
        with _stopped_by_sigterm(), beating(rundir.path, runner.attempt.id, runner.attempt.progress.snapshot):
            try:
                outcome = await runner.run()
            except RunAborted as exc:
                rundir.finish("aborted", reason=str(exc))
                print(f"error: run.strict=true and {one_line(exc)}", file=sys.stderr)
                return 1
            except ServerUnreachable as exc:
                rundir.finish("stopped", reason=str(exc))
                print(
                    f"error: {exc}; finished work is kept in {rundir.path}: rerun the same command once "
                    "the server is back to continue",
                    file=sys.stderr,
                )
                return 1
            except (asyncio.CancelledError, KeyboardInterrupt):
                rundir.finish("interrupted")
                raise
            except BaseException as exc:
                rundir.finish("failed", reason=one_line(f"{type(exc).__name__}: {exc}"))
                raise
        status = "complete" if outcome.failure_rate <= options.max_failure_rate else "failed"
        rundir.finish(
            status,
            failure_rate=round(outcome.failure_rate, 6),
            failure_rates={k: round(v, 6) for k, v in outcome.failure_rates.items()},
            failures=outcome.metrics.get("failures"),
        )
        print_summary(outcome, rundir, retried=options.retry_failed)
        if status == "failed":
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
        await client.aclose()


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


def main_from_config(cfg: DictConfig, run_dir: Path) -> int:
    try:
        return asyncio.run(run_experiment(cfg, run_dir))
    except asyncio.CancelledError:  # SIGTERM (see _stopped_by_sigterm): reported like Ctrl-C
        raise KeyboardInterrupt from None
    finally:
        discard_unused_run_dir(run_dir)
