"""The shards of one run (`run.shard=K/N`, see `pipeline.sample`) merged into one run folder.

A shard's run.json says which part of which whole it is (`shard`: its index, N, its conversations and the
whole's: conversations, scope, dataset sha256 and the hash of the result-changing config). Merging checks
that the shards given are every part of one whole, each once, then writes a folder as the unsplit run
would have: the stage files (ingestion, answers, judgements, latency, failures: whatever *.jsonl a run
folder holds) side by side, usage.json's entries of every process of every shard, the systems' state,
and predictions.jsonl and metrics.json computed again from the merged rows by the run's own aggregation
(`Attempt.finish`): every interval is the bootstrap over the merged questions with the run's seed, never
an average of the shards' figures. Another judge's figures (`mem0bench judge`, judges/<name>/) are computed
the same way from the merged labels, for every judge all the shards were judged with.

What a run folder may hold beyond what this module knows is merged without a crash: an unknown *.jsonl
is concatenated, any other file copied (to shards/<K>/ when several shards hold it). A shard's batch state
(`batch*`: the ids of its process's open or finished batches) always goes to shards/<K>/: it belongs to
that shard's process, and a merged folder must not pick another process's batches up. run.json's `timing`
(wall seconds and calls per stage): calls summed over the shards, every other figure (wall_s,
chain_bound_s, ...) the largest shard's, as the shards ran side by side.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import yaml

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.files import atomic_write
from mem0bench.common.jsonl import read_jsonl
from mem0bench.llm.client import LLMClient
from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.settings import LLMSettings
from mem0bench.pipeline.attempt import Attempt
from mem0bench.pipeline.manifest import result_config
from mem0bench.pipeline.outcome import RunOutcome
from mem0bench.pipeline.spec import ExperimentSpec
from mem0bench.rundir.directory import RunDirectory, write_json
from mem0bench.rundir.find import find_run_dirs, is_run_dir
from mem0bench.rundir.status import RunState
from mem0bench.rundir.usage import JOURNAL

__all__ = ["Shard", "find_shards", "merge_shards"]

RECOMPUTED = frozenset({"predictions.jsonl", "metrics.json"})
"""Written again from the merged rows, never copied."""
NOT_COPIED = frozenset({"run.json", "config.yaml", "usage.json", "heartbeat.json", *RECOMPUTED})
"""A shard's own record (run.json, config.yaml and usage.json are merged, not copied)."""
JUDGES = "judges"
"""Another judge's figures per judge (`mem0bench judge`): recomputed from the merged labels."""
PER_SHARD_PREFIX = "batch"
"""Top-level files and folders that belong to a shard's process (batch state): kept in shards/<K>/."""


@dataclass(frozen=True)
class Shard:
    path: Path
    manifest: dict[str, Any]
    config: dict[str, Any]

    @property
    def record(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.manifest["shard"])

    @property
    def index(self) -> int:
        return int(self.record["index"])

    @property
    def of(self) -> int:
        return int(self.record["of"])

    @property
    def whole(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.record["whole"])

    @property
    def name(self) -> str:
        return f"shard {self.index}/{self.of} ({self.path})"


def find_shards(paths: Sequence[Path]) -> list[Path]:
    """The run folders named, a sweep folder standing for every run folder below it."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise ConfigurationError(f"{path}: no such directory")
        runs = [path] if is_run_dir(path) else find_run_dirs(path)
        if not runs:
            raise ConfigurationError(f"{path}: not a run folder, and no run folder below it")
        found.extend(runs)
    return found


def _read_shard(path: Path) -> Shard:
    try:
        manifest = json.loads((path / "run.json").read_text(encoding="utf-8"))
        config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"{path}: cannot read its run.json and config.yaml ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shard"), dict):
        raise ConfigurationError(
            f"{path} is not a shard: its run.json has no `shard` (run without run.shard=K/N)"
        )
    if not isinstance(config, dict):
        raise ConfigurationError(f"{path}/config.yaml is not a mapping")
    record = manifest["shard"]
    whole = record.get("whole")
    if (
        not isinstance(record.get("index"), int)
        or not isinstance(record.get("of"), int)
        or not isinstance(record.get("conversations"), list)
        or not isinstance(whole, dict)
        or not {"conversations", "dataset_sha256", "config_sha256"} <= whole.keys()
    ):
        raise ConfigurationError(
            f"{path}/run.json: its `shard` lacks index, of, conversations or whole (conversations, "
            "dataset_sha256, config_sha256): not a shard this version can merge"
        )
    shard = Shard(path, manifest, config)
    if manifest.get("status") != RunState.COMPLETE:
        raise ConfigurationError(
            f"{shard.name} is not complete (status {manifest.get('status')}): finish it first "
            "(rerun its command; `python -m mem0bench status` shows where it stands)"
        )
    return shard


def _config_difference(a: Shard, b: Shard) -> str:
    """The first result-changing setting two shards' configs differ in, as `key: a -> b`."""
    left, right = result_config(a.config), result_config(b.config)
    for key in sorted(left.keys() | right.keys()):
        if left.get(key, "(absent)") != right.get(key, "(absent)"):
            return f"{key}: {left.get(key, '(absent)')} vs {right.get(key, '(absent)')}"
    return "the prompt files or the system's settings"


def _prompt_files(shard: Shard) -> dict[str, Any]:
    """setting -> sha256 of the prompt files a shard used (config.yaml has their paths, not contents)."""
    files = shard.manifest.get("prompt_files") or {}
    return {k: (v or {}).get("sha256") for k, v in sorted(files.items())}


def check_shards(shards: Sequence[Shard]) -> list[Shard]:
    """The shards in index order, after checking they are every part of one whole, each once."""
    first = shards[0]
    for other in shards[1:]:
        if other.whole["dataset_sha256"] != first.whole["dataset_sha256"]:
            raise ConfigurationError(
                f"{other.name} ran on a different dataset than {first.name} "
                f"(sha256 {other.whole['dataset_sha256'][:12]} vs {first.whole['dataset_sha256'][:12]})"
            )
        if other.whole["config_sha256"] != first.whole["config_sha256"]:
            difference = _config_difference(first, other)
            what = "judge" if difference.startswith("judge.") else "configuration"
            raise ConfigurationError(
                f"{other.name} ran with a different {what} than {first.name} ({difference})"
            )
        if _prompt_files(other) != _prompt_files(first):
            raise ConfigurationError(
                f"{other.name} ran with other prompt files than {first.name} "
                f"({_prompt_files(other)} vs {_prompt_files(first)})"
            )
        if other.of != first.of:
            raise ConfigurationError(
                f"{other.name} is one of {other.of} shards, {first.name} one of {first.of}"
            )
        if other.whole["conversations"] != first.whole["conversations"] or other.whole.get(
            "scope"
        ) != first.whole.get("scope"):
            raise ConfigurationError(f"{other.name} covers a different scope than {first.name}")
    by_index: dict[int, Shard] = {}
    for shard in shards:
        if shard.index in by_index:
            raise ConfigurationError(
                f"shard {shard.index}/{shard.of} is given twice: {by_index[shard.index].path} and {shard.path}"
            )
        by_index[shard.index] = shard
    missing = [k for k in range(1, first.of + 1) if k not in by_index]
    if missing:
        raise ConfigurationError(
            f"shard {missing[0]}/{first.of} is missing (given: "
            f"{', '.join(f'{k}/{first.of}' for k in sorted(by_index))})"
        )
    ordered = [by_index[k] for k in sorted(by_index)]
    covered = [sid for s in ordered for sid in s.record["conversations"]]
    if sorted(covered) != sorted(first.whole["conversations"]):
        raise ConfigurationError(
            "the shards' conversations do not make the whole run's, each once: were they made by another "
            "version of mem0bench?"
        )
    return ordered


def _whole_lines(path: Path) -> str:
    """The file's text up to its last newline: a torn last line (a write cut short by a kill, which every
    reader skips, `common.jsonl`) is left out, where another shard's rows after it would make it damage."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return text[: text.rfind("\n") + 1]


def _copy_files(shards: Sequence[Shard], out: Path) -> None:
    """Every top-level *.jsonl of every shard, concatenated in shard order (usage.jsonl's processes named
    apart per shard); every other file copied to the same place, unless more than one shard holds it (a
    graph server's database, a figure of the shard's own): then each shard's goes to shards/<K>/, kept, not
    mixed."""
    files: dict[int, list[Path]] = {}
    holders: dict[Path, int] = {}
    for shard in shards:
        files[shard.index] = []
        for item in sorted(shard.path.rglob("*")):
            rel = item.relative_to(shard.path)
            if item.is_dir() or (len(rel.parts) == 1 and rel.name in NOT_COPIED):
                continue
            if rel.parts[0] in (
                JUDGES,
                "superseded",
            ):  # recomputed (_merge_judges); replaced rows: not merged
                continue
            files[shard.index].append(rel)
            holders[rel] = holders.get(rel, 0) + 1
    for shard in shards:
        for rel in files[shard.index]:
            item = shard.path / rel
            top = len(rel.parts) == 1
            if top and rel.name == JOURNAL:
                _append_journal(item, out / rel, shard)
            elif top and rel.name == "run.log":
                text = item.read_text(encoding="utf-8", errors="replace")
                with (out / rel).open("a", encoding="utf-8") as f:
                    f.write(
                        f"== {shard.name} ==\n{text}" + ("\n" if text and not text.endswith("\n") else "")
                    )
            elif top and item.suffix == ".jsonl" and not rel.name.startswith(PER_SHARD_PREFIX):
                with (out / rel).open("a", encoding="utf-8") as f:
                    f.write(_whole_lines(item))
            else:
                apart = holders[rel] > 1 or rel.parts[0].startswith(PER_SHARD_PREFIX)
                target = out / "shards" / str(shard.index) / rel if apart else out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(item, target)


def _append_journal(item: Path, target: Path, shard: Shard) -> None:
    with target.open("a", encoding="utf-8") as f:
        for row in read_jsonl(item):
            row["session"] = _session(row.get("session"), shard)
            f.write(json.dumps(row) + "\n")


def _usage_sessions(shards: Sequence[Shard]) -> list[dict[str, Any]]:
    sessions: list[dict[str, Any]] = []
    for shard in shards:
        path = shard.path / "usage.json"
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            sessions.extend(
                {**s, "session": _session(s.get("session"), shard)}
                for s in data.get("sessions", [])
                if isinstance(s, dict)
            )
    return sessions


def _session(session: object, shard: Shard) -> str:
    """A process's usage entry, named apart per shard: two shards' processes may share an id (a basic
    launcher's jobs run in one process, and an id is its start second and pid), and usage.jsonl's rows are
    added to the entry of their id."""
    return f"{session}/shard-{shard.index}"


def _order(shards: Sequence[Shard]) -> list[str]:
    """The unsplit run's question order: the whole's conversations in order, each with its questions in
    the order of its shard's predictions.jsonl (the dataset's)."""
    by_conversation: dict[str, list[str]] = {}
    for shard in shards:
        for line in (shard.path / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                by_conversation.setdefault(str(row["conversation"]), []).append(str(row["qid"]))
    return [qid for sid in shards[0].whole["conversations"] for qid in by_conversation.get(sid, [])]


class _Offline:
    """What an attempt needs of a client to write its results: a ledger (that pays for nothing here)."""

    def __init__(self) -> None:
        self.ledger = UsageLedger({}, free=True)
        self.on_failure = None
        self.settings = LLMSettings()  # defaults: no Batch API queue to open (nothing is sent)
        self.batch = None


def _manifest(
    shards: Sequence[Shard], out: Path, outcome: RunOutcome, max_failure_rate: float
) -> dict[str, Any]:
    first = shards[0].manifest
    manifest = {k: v for k, v in first.items() if k not in ("shard", "reason", "resumed")}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    manifest.update(
        run_id=out.name,
        # Ended as the unsplit run would: by the run's own threshold on the merged failure rate.
        status=RunState.COMPLETE if outcome.failure_rate <= max_failure_rate else RunState.FAILED,
        started=min(str(s.manifest.get("started", now)) for s in shards),
        finished=now,
        scope=shards[0].whole["scope"],
        **(
            {"timing": timing} if (timing := merge_timing([s.manifest.get("timing") for s in shards])) else {}
        ),
        failure_rate=round(outcome.failure_rate, 6),
        failure_rates={k: round(v, 6) for k, v in outcome.failure_rates.items()},
        failures=outcome.metrics.get("failures"),
        merged_from=[
            {
                "index": s.index,
                "of": s.of,
                "path": str(s.path),
                "run_id": s.manifest.get("run_id"),
                "conversations": s.record["conversations"],
                "git_commit": s.manifest.get("git_commit"),
            }
            for s in shards
        ],
    )
    return manifest


def merge_timing(timings: Sequence[object]) -> dict[str, Any] | None:
    """run.json `timing` of the shards merged: per stage, calls (`calls`, `*_calls`) summed, every other
    number the largest (wall seconds of shards that ran side by side), anything else the first shard's."""
    blocks = [t for t in timings if isinstance(t, Mapping)]
    if not blocks:
        return None
    merged: dict[str, Any] = {}
    for block in blocks:
        for stage, figures in block.items():
            if not isinstance(figures, Mapping):
                merged.setdefault(stage, figures)
                continue
            into = merged.setdefault(stage, {})
            if not isinstance(into, dict):
                continue
            for key, value in figures.items():
                number = isinstance(value, int | float) and not isinstance(value, bool)
                if key not in into or not number or not isinstance(into[key], int | float):
                    into.setdefault(key, value)
                elif key == "calls" or key.endswith("_calls"):
                    into[key] += value
                else:
                    into[key] = max(into[key], value)
    return merged


def _judge_folders(shards: Sequence[Shard]) -> list[str]:
    """judges/<name> folders (with a config.yaml) of the shards, each held by every shard and judged
    with the same settings in each; else one line naming the shard."""
    held = {s.index: {p.parent.name for p in (s.path / JUDGES).glob("*/config.yaml")} for s in shards}
    names = sorted(set().union(*held.values()))
    for name in names:
        judge_of: dict[int, Any] = {}
        for shard in shards:
            if name not in held[shard.index]:
                raise ConfigurationError(
                    f"{shard.name} was not judged by {JUDGES}/{name}, which other shards were: run "
                    f"`python -m mem0bench judge {shard.path} ...` with that judge first"
                )
            config = yaml.safe_load((shard.path / JUDGES / name / "config.yaml").read_text(encoding="utf-8"))
            judge_of[shard.index] = (config or {}).get("judge")
        first = shards[0]
        for shard in shards[1:]:
            if judge_of[shard.index] != judge_of[first.index]:
                raise ConfigurationError(
                    f"{shard.name} was judged by {JUDGES}/{name} with other settings than {first.name}"
                )
    return names


def _merge_judges(shards: Sequence[Shard], out: Path, names: Sequence[str], order: list[str]) -> None:
    """Each other judge's predictions.jsonl and metrics.json, from the merged labels (judgements.jsonl)."""
    for name in names:
        subdir = f"{JUDGES}/{name}"
        config = _unsharded_config(
            yaml.safe_load((shards[0].path / subdir / "config.yaml").read_text(encoding="utf-8"))
        )
        spec = ExperimentSpec.from_mapping(config)
        (out / subdir).mkdir(parents=True, exist_ok=True)
        atomic_write(
            out / subdir / "config.yaml", yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
        )
        rundir = RunDirectory(out)
        options = replace(spec.run, progress=False, strict=False)
        attempt = Attempt(
            rundir=rundir, client=cast(LLMClient, _Offline()), judge=spec.judge, options=options,
            method_name=spec.method_name, questions={}, results_subdir=subdir,
        )  # fmt: skip
        attempt.order = list(order)
        attempt.finish()
        rundir.close()


def _unsharded_config(config: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(config)
    if isinstance(out.get("run"), Mapping):
        out["run"] = {k: v for k, v in out["run"].items() if k != "shard"}
    return out


def merge_shards(paths: Sequence[Path], out: Path) -> RunOutcome:
    """Merge the shards in `paths` (run folders, or sweep folders holding them) into the new folder `out`."""
    shards = check_shards([_read_shard(p) for p in find_shards(paths)])
    judges = _judge_folders(shards)
    if out.exists() and any(out.iterdir()):
        raise ConfigurationError(f"--out {out} is not empty: choose a new folder")
    config = _unsharded_config(shards[0].config)
    spec = ExperimentSpec.from_mapping(config)
    out.mkdir(parents=True, exist_ok=True)
    try:
        _copy_files(shards, out)
        write_json(out / "usage.json", {"sessions": _usage_sessions(shards)})
        atomic_write(out / "config.yaml", yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
        # run.json first as the first shard's (the aggregation reads it: empty contexts by design), then
        # as the merged run's.
        write_json(out / "run.json", {**shards[0].manifest, "run_id": out.name})
        rundir = RunDirectory(out)
        options = replace(spec.run, progress=False, strict=False)  # no bar, no call to fail
        attempt = Attempt(
            rundir=rundir, client=cast(LLMClient, _Offline()), judge=spec.judge,
            options=options, method_name=spec.method_name, questions={},
        )  # fmt: skip
        order = _order(shards)
        attempt.order = list(order)
        outcome = attempt.finish()
        rundir.close()
        _merge_judges(shards, out, judges, order)
        write_json(out / "run.json", _manifest(shards, out, outcome, options.max_failure_rate))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # no half-merged folder that looks like a run
        raise
    return outcome
