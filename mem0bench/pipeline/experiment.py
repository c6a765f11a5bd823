"""From a composed Hydra config to a finished run: build the pieces, check them, run, report."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mem0bench.data import load_dataset, resolve_dataset_path
from mem0bench.data.answer_key import apply_answer_key, read_answer_key
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.llm.client import LLMClient
from mem0bench.llm.preflight import Probe
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.llm.types import ConfigurationError
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.pipeline.failures import RunAborted
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.plan import print_plan
from mem0bench.pipeline.progress import parse_mode
from mem0bench.pipeline.rundir import RunDirectory
from mem0bench.pipeline.runner import Runner, RunOptions
from mem0bench.pipeline.summary import print_summary

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


def judge_settings(cfg: DictConfig) -> JudgeSettings:
    data = OmegaConf.to_container(cfg.judge, resolve=True)
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
    settings = LLMSettings.from_config(OmegaConf.to_container(cfg.llm, resolve=True))
    embedder = EmbedderSettings.from_config(OmegaConf.to_container(cfg.embedder, resolve=True))
    cache_path = Path(cfg.cache.dir) / "llm-cache.sqlite" if cfg.cache.enabled else None
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
    return LLMClient.from_settings(settings, embedder, cache_path=cache_path)


def build_system(cfg: DictConfig, client: LLMClient, rundir: RunDirectory) -> MemorySystem:
    context = SystemContext(
        client=client,
        state_dir=rundir.state_dir,
        graph={**OmegaConf.to_container(cfg.graph, resolve=True), "run_id": rundir.path.name},
    )
    try:
        # A partial first: Hydra would otherwise try to turn the context object into config.
        factory = instantiate(cfg.method, _partial_=True, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        raise ConfigurationError(f"method {cfg.method.get('name')}: {cause}") from None
    try:
        return factory(context=context)
    except (TypeError, ValueError) as exc:
        name = str(cfg.method.get("name"))
        text = " ".join(str(exc).split())
        raise ConfigurationError(text if text.startswith(f"{name}:") else f"method {name}: {text}") from None


def select_questions(
    conversation: Conversation, *, include_adversarial: bool, max_questions: int | None
) -> list[Question]:
    """LOCOMO categories 1-4 (the paper's scope), plus 5 on request; optionally the first N."""
    chosen = [q for q in conversation.questions if include_adversarial or int(q.category) != 5]
    return chosen if max_questions is None else chosen[:max_questions]


def _load(cfg: DictConfig) -> tuple[Dataset, dict[str, list[Question]]]:
    dataset = load_dataset(
        resolve_dataset_path(cfg.dataset.path, Path(cfg.dataset.data_dir)),
        conversations=list(cfg.dataset.conversations) if cfg.dataset.conversations else None,
        fold_captions=bool(cfg.dataset.fold_captions),
    )
    if cfg.dataset.get("answer_key"):
        key = read_answer_key(cfg.dataset.answer_key, dataset)
        dataset = apply_answer_key(dataset, key, cfg.dataset.get("answer_key_mode", "replace"))
    questions = {
        c.sample_id: select_questions(
            c, include_adversarial=bool(cfg.eval.include_adversarial), max_questions=cfg.eval.max_questions
        )
        for c in dataset.conversations
    }
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
    for name in ("strict", "dry_run"):
        if not isinstance(run.get(name), bool):
            raise ConfigurationError(f"run.{name} must be true or false, not {run.get(name)!r}")
    limit = cfg.eval.max_questions
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigurationError(f"eval.max_questions must be null or an integer >= 1, not {limit!r}")
    return RunOptions(strict=bool(run.strict), max_failure_rate=rate, progress=progress)


async def run_experiment(cfg: DictConfig, run_dir: Path) -> int:
    """The `run` command's body. Returns the process exit code.

    Order: what can be checked offline (run options, judge settings, the method's hyperparameters) is
    checked first, then the key, the server and the models (one GET /models), then the dataset; only then
    does the run directory get its files and the first LLM call go out.
    """
    # faiss announces at import, at INFO, each CPU build it tries: keep that out of the console and log.
    logging.getLogger("faiss").setLevel(logging.WARNING)
    options = run_options(cfg)
    judge = judge_settings(cfg)
    if cfg.run.dry_run:
        dataset, questions = _load(cfg)
        print_plan(cfg, dataset, questions, judge)
        return 0

    client = build_client(cfg)
    system: MemorySystem | None = None
    try:
        rundir = RunDirectory(run_dir)
        system = build_system(cfg, client, rundir)
        # The key and the server before the dataset: with no key, nothing is downloaded either.
        await client.preflight(extra_models=[judge.model])
        dataset, questions = _load(cfg)
        await client.probe([Probe(judge.model, judge.mode, "judge.mode")])
        rundir.start(
            config_yaml=OmegaConf.to_yaml(OmegaConf.create(public_config(cfg))),
            method=str(cfg.method.name),
            dataset_path=dataset.path,
            dataset_sha256=dataset.sha256,
        )
        runner = Runner(
            dataset=dataset, questions=questions, system=system, client=client,
            rundir=rundir, judge=judge, options=options, method_name=str(cfg.method.name),
        )  # fmt: skip
        try:
            outcome = await runner.run()
        except RunAborted as exc:
            rundir.finish("aborted", reason=str(exc))
            rundir.close()
            print(f"error: run.strict=true and {_one_line(str(exc))}", file=sys.stderr)
            return 1
        status = "complete" if outcome.failure_rate <= options.max_failure_rate else "failed"
        rundir.finish(
            status,
            failure_rate=round(outcome.failure_rate, 6),
            failure_rates={k: round(v, 6) for k, v in outcome.failure_rates.items()},
            failures=outcome.metrics.get("failures"),
        )
        rundir.close()
        print_summary(outcome, rundir)
        if status == "failed":
            worst = max(outcome.failure_rates, key=outcome.failure_rates.get)
            print(
                f"error: {outcome.failure_rate:.1%} of the {worst} items failed, above "
                f"run.max_failure_rate={options.max_failure_rate:.1%}; rerun the same command to retry them",
                file=sys.stderr,
            )
            return 1
        return 0
    finally:
        close = getattr(system, "aclose", None)
        if close is not None:
            await close()
        await client.aclose()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def main_from_config(cfg: DictConfig, run_dir: Path) -> int:
    return asyncio.run(run_experiment(cfg, run_dir))
