"""Whether a run kept to the published profile it was started from (`+exp=paper/...`).

A paper profile pins what the paper's harness did (model, judge runs, prompts, top-k, ...). Adding an
override on top (`+exp=paper/mem0 judge.runs=2`) is allowed, but the result is then no longer the paper's
setup and must not pass for it: run.json records the profile and every pinned value the run changed, and
the report's runs table shows them. What a profile pins is what its file sets: its config-group choices
(`override /method: mem0`) and its values; anything it leaves alone (paths, timeouts, the question scope)
is not a departure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from mem0bench.common.mappings import flatten
from mem0bench.paths import CONFIG_DIR

if TYPE_CHECKING:
    from mem0bench.pipeline.spec import ExperimentSpec

__all__ = ["PROFILE_FOLDER", "ProfileCheck", "check_profile", "hydra_choices"]

PROFILE_FOLDER = "paper"
"""Experiments under configs/exp/paper/ are profiles: they pin a published setup."""


@dataclass(frozen=True)
class ProfileCheck:
    name: str
    """The experiment, e.g. 'paper/mem0'."""
    departures: tuple[str, ...]
    """'key=value (profile: pinned)' for each pinned value the run changed."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "departs": bool(self.departures), "overrides": list(self.departures)}

    def warning(self) -> str | None:
        if not self.departures:
            return None
        return f"warning: this run departs from the {self.name} profile: {', '.join(self.departures)}"


def hydra_choices() -> dict[str, str]:
    """The config-group choices of the current Hydra job ({'exp': 'paper/mem0', 'method': 'mem0', ...});
    {} outside Hydra."""
    try:
        from hydra.core.hydra_config import HydraConfig

        choices = HydraConfig.get().runtime.choices
    except (ImportError, ValueError):
        return {}
    return {str(k): str(v) for k, v in choices.items() if v is not None}


def _profile_file(name: str) -> Path:
    return CONFIG_DIR / "exp" / f"{name}.yaml"


def _show(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def check_profile(spec: ExperimentSpec, choices: Mapping[str, str]) -> ProfileCheck | None:
    """The run's departures from its profile (read from the spec's resolved config); None when the
    experiment is not a profile."""
    name = choices.get("exp", "")
    path = _profile_file(name)
    if not name.startswith(PROFILE_FOLDER + "/") or not path.is_file():
        return None
    profile = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(profile, dict)  # an experiment file is a mapping (Hydra composed it)
    departures: list[str] = []
    for entry in profile.get("defaults") or []:
        if not isinstance(entry, dict):
            continue  # `_self_` and the like pin nothing
        for key, pinned in entry.items():
            group = str(key).removeprefix("override").strip().lstrip("/")
            chosen = choices.get(group)
            if chosen != str(pinned):
                departures.append(f"{group}={_show(chosen)} (profile: {pinned})")
    values = {k: v for k, v in profile.items() if k != "defaults"}
    config = flatten(spec.config)  # a key the config lacks reads as None
    for key, pinned in flatten(values).items():
        actual = config.get(key)
        if actual != pinned:
            departures.append(f"{key}={_show(actual)} (profile: {_show(pinned)})")
    return ProfileCheck(name, tuple(departures))
