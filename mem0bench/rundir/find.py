"""Which folders are runs: the one rule `status`, `report` and the other readers find run directories by.

A run directory holds run.json, config.yaml or metrics.json (a run that never finished has the first two;
an imported or hand-made results folder may have only the last). A folder found to be a run is not looked
into further: its own folders (state/ may hold thousands of files; judges/<name>/ holds another judge's
metrics.json and config.yaml of the same run) hold no other run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

RUN_MARKERS = ("run.json", "config.yaml", "metrics.json")
METRICS = "metrics.json"


def is_run_dir(path: Path) -> bool:
    return any((path / marker).is_file() for marker in RUN_MARKERS)


def natural_key(path: Path) -> list[Any]:
    """Sort key that orders sweep folders 0, 1, 2, ..., 10 rather than 0, 1, 10, 2."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(path))]


def find_run_dirs(path: Path) -> list[Path]:
    """`path` itself if it is a run directory (or the folder of a metrics.json given as `path`), else the
    run directories below it (a sweep, a results folder), in natural order. Empty when there is none."""
    path = Path(path)
    if path.is_file():
        return [path.parent] if path.name == METRICS else []
    if is_run_dir(path):
        return [path]
    found = []
    for folder, subdirs, _ in os.walk(path):
        here = Path(folder)
        if is_run_dir(here):
            found.append(here)
            subdirs.clear()
    return sorted(found, key=lambda p: natural_key(p.relative_to(path)))
