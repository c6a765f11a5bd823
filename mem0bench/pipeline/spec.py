"""The experiment spec: the composed config, parsed once and checked, as typed sections.

The commands turn Hydra's config (or a run's saved config.yaml) into plain data and call
`ExperimentSpec.from_mapping`; everything below takes the spec (or one of its sections), never the raw
config. A bad value stops the command here, in one line naming the key. The plain data is kept as it came
(`config`): config.yaml is written from it, so a run's saved config does not depend on how it was parsed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.paths import cache_home, data_home
from mem0bench.pipeline.aggregate import check_missing_answers
from mem0bench.pipeline.attempt import RunOptions
from mem0bench.pipeline.budget import check_budget
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.latency import LATENCY_MODES, LatencyMode
from mem0bench.pipeline.progress import parse_mode
from mem0bench.pipeline.sample import SAMPLES, Sample, Shard, parse_shard
from mem0bench.pipeline.statistics import DEFAULT_REPLICATES, BootstrapSettings
from mem0bench.prompts.answer import ANSWER_PROMPTS, AnswerPrompt
from mem0bench.prompts.files import ANSWER_FIELDS, load_prompt_file
from mem0bench.suites import get_suite, import_suite_module
from mem0bench.systems.aliases import current_target

__all__ = [
    "CacheSpec",
    "ExperimentSpec",
    "ScopeSpec",
    "SystemSpec",
    "bootstrap_settings",
    "check_suite",
    "conversation_ids",
    "judge_settings",
    "run_options",
]


@dataclass(frozen=True)
class ScopeSpec:
    """`dataset.*` and the question selection of `eval.*`: what a run covers."""

    path: str | None
    data_dir: str | None
    conversations: tuple[str, ...] | None
    """None: every conversation."""
    fold_captions: bool
    answer_key: str | None
    answer_key_mode: str
    include_adversarial: bool
    max_questions: int | None
    sample: Sample
    seed: int
    suite: str = "locomo"
    """`dataset.suite`: which benchmark's files and grading (`mem0bench.suites`; absent: locomo)."""
    host_path: str | None = None
    """`dataset.host_path`: Locomo-Plus's LOCOMO file of host conversations (None: LOCOMO's own)."""
    mode: str = "faithful"
    """`dataset.mode`: Locomo-Plus's `faithful` or `grouped` stitching."""
    dataset_seed: int = 0
    """`dataset.seed`: Locomo-Plus's seed of the host choice (`seed` is the question sample's)."""
    module: str | None = None
    """`dataset.module`: a user's suite module to import (it registers `suite`); None: a built-in suite."""
    shard: Shard | None = None
    """`run.shard`: (K, N), the K-th of N cost-balanced parts of the conversations; None: all of them."""
    scale: str | None = None
    """`dataset.scale`: BEAM's 100K, 500K, 1M or 10M (None: the suite's default)."""
    options: tuple[tuple[str, Any], ...] = ()
    """The suite's own other `dataset.*` keys (BEAM's judge switches), as (key, value), for its loader."""


@dataclass(frozen=True)
class SystemSpec:
    """`method.*` (the system: its class as `_target_`, its name and settings, for Hydra to instantiate)
    and `graph.*` (where a graph system keeps its graph)."""

    name: str
    target: str | None
    """None in a config that names no class (an imported run's)."""
    settings: Mapping[str, Any]
    """The method section as configured, `_target_` and `name` included."""
    graph: Mapping[str, Any]


@dataclass(frozen=True)
class CacheSpec:
    enabled: bool
    dir: str | None


@dataclass(frozen=True)
class ExperimentSpec:
    llm: LLMSettings
    embedder: EmbedderSettings
    judge: JudgeSettings
    eval: BootstrapSettings
    """`eval.bootstrap` and `eval.bootstrap_seed` (the question selection is in `scope`)."""
    scope: ScopeSpec
    run: RunOptions
    dry_run: bool
    cache: CacheSpec
    system: SystemSpec
    config: Mapping[str, Any]
    """The resolved config as plain data, as it came (config.yaml is written from it)."""

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> ExperimentSpec:
        data = copy.deepcopy(dict(config))
        # In the order a run checked them before the spec existed: what a run does, then the judge, the
        # scope, the models.
        options = run_options(data)
        judge = judge_settings(_section(data, "judge"))
        scope = _scope(_section(data, "dataset"), _section(data, "eval"), _section(data, "run"))
        check_suite(scope, options.answer_prompt, judge.prompt)
        cache = _section(data, "cache")
        return cls(
            llm=LLMSettings.from_config(_section(data, "llm")),
            embedder=EmbedderSettings.from_config(_section(data, "embedder")),
            judge=judge,
            eval=options.bootstrap,
            scope=scope,
            run=options,
            dry_run=bool(_section(data, "run").get("dry_run", False)),
            cache=CacheSpec(enabled=bool(cache.get("enabled", True)), dir=_optional_str(cache.get("dir"))),
            system=_system(_section(data, "method"), _section(data, "graph", required=False)),
            config=data,
        )

    @property
    def method_name(self) -> str:
        return self.system.name

    def with_folders(self) -> ExperimentSpec:
        """The spec with the cache and data folders a run uses (null means the per-user default), in its
        config too: config.yaml says which folders were used."""
        config = copy.deepcopy(dict(self.config))
        cache_dir = str(cache_home(self.cache.dir))
        data_dir = str(data_home(self.scope.data_dir))
        config["cache"]["dir"] = cache_dir
        config["dataset"]["data_dir"] = data_dir
        return replace(
            self,
            cache=replace(self.cache, dir=cache_dir),
            scope=replace(self.scope, data_dir=data_dir),
            config=config,
        )


def _section(data: Mapping[str, Any], name: str, *, required: bool = True) -> dict[str, Any]:
    value = data.get(name)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        found = "missing" if value is None else f"a {type(value).__name__}"
        raise ConfigurationError(f"config section '{name}' must be a mapping, found {found}")
    return {str(k): v for k, v in value.items()}


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def judge_settings(section: Mapping[str, Any]) -> JudgeSettings:
    """`judge.*` checked: an unknown key or a bad value is one line naming it."""
    known = set(JudgeSettings.__dataclass_fields__)
    for key in section:
        if key not in known:
            raise ConfigurationError(f"unknown judge setting '{key}' (known: {', '.join(sorted(known))})")
    try:
        return JudgeSettings(**section)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        raise ConfigurationError(text if text.startswith("judge.") else f"judge: {text}") from None


def bootstrap_settings(eval_section: Mapping[str, Any]) -> BootstrapSettings:
    """`eval.bootstrap` and `eval.bootstrap_seed` checked (configs written before they existed: defaults)."""
    try:
        return BootstrapSettings(
            replicates=eval_section.get("bootstrap", DEFAULT_REPLICATES),
            seed=eval_section.get("bootstrap_seed", 0),
        )
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


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


def run_options(data: Mapping[str, Any]) -> RunOptions:
    """`run.*` (with `answer.prompt`, `answer.prompt_file` and the `eval.*` checks) checked: a bad value stops the run before
    anything happens, in one line."""
    run = _section(data, "run")
    evaluation = _section(data, "eval")
    try:
        rate = float(run.get("max_failure_rate"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"run.max_failure_rate must be a number between 0 and 1, not {run.get('max_failure_rate')!r}"
        ) from None
    if not 0.0 <= rate <= 1.0:
        raise ConfigurationError(f"run.max_failure_rate must be between 0 and 1, not {rate}")
    try:
        progress = parse_mode(run.get("progress"))
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    for name in ("strict", "dry_run", "retry_failed", "remeasure_latency", "allow_config_change"):
        if not isinstance(run.get(name, False), bool):  # absent in configs saved before it existed
            raise ConfigurationError(f"run.{name} must be true or false, not {run.get(name)!r}")
    answer = _section(data, "answer", required=False)
    answer_prompt = answer.get("prompt", "default")
    if answer_prompt not in ANSWER_PROMPTS:
        raise ConfigurationError(
            f"answer.prompt must be one of {', '.join(ANSWER_PROMPTS)}, not {answer_prompt!r}"
        )
    limit = evaluation.get("max_questions")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigurationError(f"eval.max_questions must be null or an integer >= 1, not {limit!r}")
    if evaluation.get("sample", "first") not in SAMPLES:
        raise ConfigurationError(
            f"eval.sample must be one of {', '.join(SAMPLES)}, not {evaluation.get('sample')!r}"
        )
    seed = evaluation.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigurationError(f"eval.seed must be an integer, not {seed!r}")
    answer_file = answer.get("prompt_file")
    # Configs saved before the isolated pass existed ran inline.
    latency = evaluation.get("latency", "inline")
    if latency not in LATENCY_MODES:
        raise ConfigurationError(f"eval.latency must be one of {', '.join(LATENCY_MODES)}, not {latency!r}")
    timed = evaluation.get("latency_questions")
    if timed is not None and (isinstance(timed, bool) or not isinstance(timed, int) or timed < 1):
        raise ConfigurationError(f"eval.latency_questions must be null or an integer >= 1, not {timed!r}")
    return RunOptions(
        strict=bool(run.get("strict", False)),
        max_failure_rate=rate,
        progress=progress,
        answer_prompt=cast(AnswerPrompt, answer_prompt),
        answer_file=None
        if answer_file is None
        else load_prompt_file("answer.prompt_file", str(answer_file), ANSWER_FIELDS, ANSWER_FIELDS),
        bootstrap=bootstrap_settings(evaluation),
        retry_failed=bool(run.get("retry_failed", False)),
        context_tokens_max=check_budget(evaluation.get("context_tokens_max")),
        latency=cast(LatencyMode, latency),
        latency_questions=timed,
        latency_seed=seed,
        remeasure_latency=bool(run.get("remeasure_latency", False)),
        missing_answers=check_missing_answers(evaluation.get("missing_answers", "wrong")),
    )


def check_suite(scope: ScopeSpec, answer_prompt: str, judge_prompt: str) -> None:
    """`dataset.suite` against the other settings that only LOCOMO has: one line naming the key."""
    try:
        suite = get_suite(scope.suite)
    except ValueError as exc:
        raise ConfigurationError(f"dataset.suite: {exc}") from None
    lme = bool(suite.categories) and suite.categories[0].suite == "longmemeval"
    if judge_prompt == "longmemeval" and not lme:
        raise ConfigurationError(
            f"judge.prompt=longmemeval is LongMemEval's authors' grading; {suite.name} is not LongMemEval "
            "(leave judge at its default)"
        )
    if suite.name == "locomo":
        return
    if answer_prompt != "default":
        raise ConfigurationError(
            f"answer.prompt={answer_prompt} is the Mem0 paper's LOCOMO wording; {suite.name} runs with "
            "answer.prompt=default"
        )
    if suite.own_judge and judge_prompt not in ("lenient", "longmemeval"):
        raise ConfigurationError(
            f"judge.prompt={judge_prompt} is a LOCOMO grading; {suite.name} is graded by its own rubric per "
            "category (leave judge.prompt at its default)"
        )


def _scope(dataset: Mapping[str, Any], evaluation: Mapping[str, Any], run: Mapping[str, Any]) -> ScopeSpec:
    ids = conversation_ids(dataset.get("conversations"))
    try:
        shard = parse_shard(run.get("shard"))
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    dataset_seed = dataset.get("seed", 0)
    if isinstance(dataset_seed, bool) or not isinstance(dataset_seed, int):
        raise ConfigurationError(f"dataset.seed must be an integer, not {dataset_seed!r}")
    return ScopeSpec(
        path=_optional_str(dataset.get("path")),
        data_dir=_optional_str(dataset.get("data_dir")),
        conversations=None if ids is None else tuple(ids),
        fold_captions=bool(dataset.get("fold_captions", True)),
        answer_key=_optional_str(dataset.get("answer_key")) or None,
        answer_key_mode=str(dataset.get("answer_key_mode", "replace")),
        include_adversarial=bool(evaluation.get("include_adversarial", False)),
        max_questions=evaluation.get("max_questions"),
        sample=cast(Sample, str(evaluation.get("sample", "first"))),
        seed=int(evaluation.get("seed", 0)),
        suite=str(dataset.get("suite", "locomo")),
        host_path=_optional_str(dataset.get("host_path")),
        mode=str(dataset.get("mode", "faithful")),
        dataset_seed=dataset_seed,
        module=_suite_module(dataset.get("module")),
        shard=shard,
        scale=_optional_str(dataset.get("scale")),
        options=tuple(sorted((str(k), v) for k, v in dataset.items() if k not in _DATASET_KEYS)),
    )


_DATASET_KEYS = frozenset(
    ("path", "data_dir", "conversations", "fold_captions", "answer_key", "answer_key_mode", "suite",
     "host_path", "mode", "seed", "module", "scale")
)  # fmt: skip
"""The `dataset.*` keys the harness reads itself; any other is the suite's own (`ScopeSpec.options`)."""


def _suite_module(value: Any) -> str | None:
    """`dataset.module`, imported here so that the suite it registers is known to every later step."""
    module = _optional_str(value)
    if module is not None:
        try:
            import_suite_module(module)
        except ValueError as exc:
            raise ConfigurationError(f"dataset.module: {exc}") from None
    return module


def _system(method: Mapping[str, Any], graph: Mapping[str, Any]) -> SystemSpec:
    if "password" in graph:  # config.yaml travels with the results: a secret must not be in it
        raise ConfigurationError(
            "graph.password is not read: give the FalkorDB server's password in the environment variable "
            "FALKORDB_PASSWORD"
        )
    settings = dict(method)
    target = settings.get("_target_")
    if target is not None:
        # A config saved before the systems moved names the old module (mem0bench.systems.aliases).
        target = settings["_target_"] = current_target(str(target))
    return SystemSpec(
        name=str(method.get("name")),
        target=None if target is None else str(target),
        settings=settings,
        graph=dict(graph),
    )
