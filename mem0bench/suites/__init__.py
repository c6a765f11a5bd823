"""Benchmark suites behind one seam (see `base`): LOCOMO (the default), Locomo-Plus, LongMemEval.

Importing the package registers every suite; a new one is a module here (imported below) plus a
`configs/dataset/<name>.yaml` naming it.
"""

from mem0bench.suites import locomo, locomo_plus, longmemeval  # noqa: F401  (each registers itself)
from mem0bench.suites.base import SUITES, DatasetRequest, Rubric, SourceFile, Suite

__all__ = ["SUITES", "DatasetRequest", "Rubric", "SourceFile", "Suite", "get_suite", "suite_of"]


def get_suite(name: str) -> Suite:
    """The suite called `name`; an unknown name is a ValueError listing the known ones."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r} (known: {', '.join(sorted(SUITES))})")
    return SUITES[name]


def suite_of(category_id: int) -> Suite:
    """The suite whose categories include `category_id` (LongMemEval's variants share theirs: the first)."""
    return next(s for s in SUITES.values() if any(int(c) == category_id for c in s.categories))
