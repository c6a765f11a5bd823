"""Find run directories and load what the report needs from them (metrics.json, config.yaml, run.json)."""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import yaml

from mem0bench.common.jsonfile import read_json_object
from mem0bench.common.mappings import flatten
from mem0bench.common.text import one_line
from mem0bench.rundir.find import find_run_dirs
from mem0bench.rundir.schema import Metrics, SchemaError, read_metrics
from mem0bench.suites import import_suite_module

__all__ = [
    "ReportError",
    "RunSummary",
    "UnfinishedRun",
    "find_results",
    "find_unfinished",
    "flatten",
    "folder_name",
    "load_run",
    "load_runs",
    "run_label",
    "short_names",
    "varying_hyperparameters",
]

METRICS = "metrics.json"
CONFIG = "config.yaml"
RUN_INFO = "run.json"

_HYPER_PREFIXES = ("method.", "judge.")
_HYPER_KEYS = ("llm.model", "embedder.model")
_NOT_HYPER = re.compile(r"(^|_)(target|path|paths|dir|dirs|id|ids|seed|seeds|file|host|port|url|env)(_|$)")


class ReportError(Exception):
    """A problem with the report's inputs, described in one line."""


@dataclass(frozen=True)
class RunSummary:
    """One run directory: its metrics and its flattened ('a.b.c' keys) resolved config."""

    path: Path
    method: str
    metrics: Metrics
    config: dict[str, Any] = field(default_factory=dict)
    status: str | None = None
    """run.json's status ('complete', ...), None if the run has no run.json."""
    manifest: dict[str, Any] = field(default_factory=dict)
    """run.json as a whole (dataset, scope, server, ...); empty when the run has none."""

    @property
    def name(self) -> str:
        return folder_name(self.path)


def folder_name(path: Path) -> str:
    """The run folder's name; a sweep job's numbered folder is named with its sweep's."""
    return f"{path.parent.name}/{path.name}" if path.name.isdigit() else path.name


def find_results(paths: Iterable[str | PathLike[str]]) -> list[Path]:
    """The run directories (`rundir.find_run_dirs`) at or below each path that hold a metrics.json, in
    argument order, each path's runs in natural order; duplicates dropped. Raises ReportError if a path
    holds none."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise ReportError(f"{path}: no such file or directory")
        if path.is_file() and path.name != METRICS:
            raise ReportError(f"{path}: not a run directory or a {METRICS}")
        runs = [run for run in find_run_dirs(path) if (run / METRICS).is_file()]
        if not runs:
            if (path / RUN_INFO).is_file() or any(path.rglob(RUN_INFO)):
                continue  # only runs that never finished: `find_unfinished` names them
            raise ReportError(f"{path}: no run directory found (no {METRICS} at or below it)")
        found.extend(r for r in runs if r not in found)
    return found


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return read_json_object(path)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def _one_line(exc: BaseException) -> str:
    return one_line(exc) or type(exc).__name__


def load_run(path: str | PathLike[str]) -> RunSummary:
    """Load one run directory. metrics.json is required; config.yaml and run.json are optional."""
    folder = Path(path)
    if not (folder / METRICS).is_file():
        raise ReportError(f"{folder / METRICS}: not found")
    config: dict[str, Any] = {}
    config_path = folder / CONFIG
    if config_path.is_file():
        try:
            tree = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ReportError(f"{config_path}: cannot read YAML ({_one_line(exc)})") from None
        if not isinstance(tree, Mapping):
            raise ReportError(f"{config_path}: expected a mapping at the top level")
        config = flatten(tree)
    module = config.get("dataset.module")
    if module:
        # A suite of one's own: its module registers its metrics, so that metrics.json's figures of them are
        # read as scores. Best effort: without the module (not importable from here) the report still shows
        # the suite's categories, by the names in the files, and leaves out only its own metrics.
        with contextlib.suppress(ValueError):
            import_suite_module(str(module))
    try:
        metrics = read_metrics(folder / METRICS)
    except SchemaError as exc:
        raise ReportError(str(exc)) from None
    manifest = _read_json(folder / RUN_INFO) if (folder / RUN_INFO).is_file() else {}
    status = manifest.get("status")
    method = metrics.method or config.get("method.name") or folder.name
    return RunSummary(
        path=folder, method=str(method), metrics=metrics, config=config, status=status, manifest=manifest
    )


@dataclass(frozen=True)
class UnfinishedRun:
    """A run (or sweep job) folder with a run.json but no metrics.json: it stopped before its end."""

    path: Path
    status: str
    reason: str | None
    method: str | None = None

    @property
    def name(self) -> str:
        return folder_name(self.path)


def find_unfinished(paths: Iterable[str | PathLike[str]]) -> list[UnfinishedRun]:
    """Run folders at or below each path that never wrote metrics.json (failed, stopped or interrupted
    runs, and sweep jobs that failed), so a report can name them instead of skipping them silently."""
    found: list[UnfinishedRun] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            continue
        for folder in find_run_dirs(path):
            if (folder / METRICS).is_file() or any(u.path == folder for u in found):
                continue
            try:
                manifest = json.loads((folder / RUN_INFO).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                manifest = {}
            manifest = manifest if isinstance(manifest, dict) else {}
            status, method = str(manifest.get("status", "unknown")), manifest.get("method")
            found.append(
                UnfinishedRun(folder, status, manifest.get("reason"), str(method) if method else None)
            )
    return found


def load_runs(paths: Iterable[str | PathLike[str]]) -> list[RunSummary]:
    """find_results then load_run on each."""
    return [load_run(p) for p in find_results(paths)]


def _is_hyperparameter(key: str) -> bool:
    if key == "method.name":  # shown as the method column
        return False
    if not (key in _HYPER_KEYS or key.startswith(_HYPER_PREFIXES)):
        return False
    return not any(_NOT_HYPER.search(part.strip("_")) for part in key.split("."))


def varying_hyperparameters(runs: Sequence[RunSummary]) -> list[str]:
    """Dotted config keys (method.*, llm.model, embedder.model, judge.*) whose values differ between the
    runs; a key missing from some runs counts as differing. Paths, ids, seeds and _target_ are ignored.
    Order: method.* first, then llm.model, embedder.model, judge.*, each in config order."""
    keys: list[str] = []
    for run in runs:
        keys.extend(k for k in run.config if k not in keys and _is_hyperparameter(k))
    varying = [k for k in keys if len({_hashable(run.config.get(k)) for run in runs}) > 1]
    rank = {"method": 0, "llm": 1, "embedder": 2, "judge": 3}
    return sorted(varying, key=lambda k: rank.get(k.split(".", 1)[0], 9))  # stable within a group


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True, default=str)


def short_key(key: str) -> str:
    """Display name of a hyperparameter: 'method.chunk_size' -> 'chunk_size'."""
    return key.removeprefix("method.")


def run_label(run: RunSummary, hyperparameters: Sequence[str]) -> str:
    """'rag (chunk_size=256, k=2)': the method and the run's values of the given hyperparameters."""
    parts = [f"{short_key(k)}={format_value(run.config[k])}" for k in hyperparameters if k in run.config]
    return f"{run.method} ({', '.join(parts)})" if parts else run.method


def unique_labels(runs: Sequence[RunSummary], hyperparameters: Sequence[str]) -> list[str]:
    """run_label for each run, with the run folder's name appended where two labels would clash."""
    labels = [run_label(r, hyperparameters) for r in runs]
    return [f"{lab} [{r.path.name}]" if labels.count(lab) > 1 else lab for lab, r in zip(labels, runs)]


SHORT_NAME_CHARS = 28
"""A run's label (method and varying hyperparameters) longer than this is not a name for a plot legend."""


def short_names(runs: Sequence[RunSummary]) -> list[str]:
    """What the tables, plots and the page's run selector call each run: its label ('rag (chunk_size=256,
    k=2)') when every run's label is short, else its method, numbered among runs of the same method
    ('mem0g #2'). The settings table maps each name to the run's hyperparameters, and the runs table to
    its folder."""
    labels = unique_labels(runs, varying_hyperparameters(runs))
    if all(len(label) <= SHORT_NAME_CHARS for label in labels):
        return labels
    total = Counter(run.method for run in runs)
    seen: Counter[str] = Counter()
    names = []
    for run in runs:
        seen[run.method] += 1
        names.append(f"{run.method} #{seen[run.method]}" if total[run.method] > 1 else run.method)
    return names


def format_value(value: Any) -> str:
    """A config value as a short display string."""
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)
