"""Benchmark suites behind one seam (see `base`): LOCOMO (the default), Locomo-Plus, LongMemEval, BEAM.

Importing the package registers every suite; a new one is a module here (imported below) plus a
`configs/dataset/<name>.yaml` naming it, or a module of one's own, importable (run from its folder, or on
PYTHONPATH), that a dataset yaml names as `module:` (`import_suite_module`; examples/pantry_suite).
"""

import importlib

from mem0bench.suites import beam, locomo, locomo_plus, longmemeval  # noqa: F401  (each registers itself)
from mem0bench.suites.base import (
    CATEGORIES,
    SUITES,
    DatasetRequest,
    Rubric,
    SourceFile,
    Suite,
    all_categories,
    category,
    register_suite,
)

__all__ = [
    "CATEGORIES",
    "SUITES",
    "DatasetRequest",
    "Rubric",
    "SourceFile",
    "Suite",
    "all_categories",
    "category",
    "get_suite",
    "import_suite_module",
    "register_suite",
    "suite_of",
]


def import_suite_module(module: str) -> None:
    """Import `module`, a user's suite that registers itself (`dataset.module`); a module that cannot be
    imported is a ValueError in one line saying where Python looked."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"cannot import suite module {module!r} ({exc}): run from the folder that holds it, or put that "
            "folder on PYTHONPATH"
        ) from None


def get_suite(name: str) -> Suite:
    """The suite called `name`; an unknown name is a ValueError listing the known ones."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r} (known: {', '.join(sorted(SUITES))})")
    return SUITES[name]


def suite_of(category_id: int) -> Suite:
    """The suite whose categories include `category_id` (LongMemEval's variants share theirs: the first);
    an id no registered suite has is a ValueError (a user's suite whose module was not imported)."""
    found = next((s for s in SUITES.values() if any(c.id == category_id for c in s.categories)), None)
    if found is None:
        raise ValueError(
            f"no registered suite has a category {category_id}: import the suite's module (dataset.module)"
        )
    return found
