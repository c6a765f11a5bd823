"""LOCOMO (Maharana et al., ACL 2024): 10 conversations, 1,986 questions; the default suite."""

from __future__ import annotations

from mem0bench.data.download import LOCOMO_FILENAME, LOCOMO_SHA256, LOCOMO_URL, resolve_dataset_path
from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Category, Dataset
from mem0bench.suites.base import DatasetRequest, SourceFile, check_counts, register_suite

LOCOMO_SOURCE = SourceFile(
    LOCOMO_FILENAME,
    LOCOMO_URL,
    LOCOMO_SHA256,
    "CC BY-NC 4.0 (stated in snap-research/locomo's README and LICENSE)",
)
LOCOMO_COUNTS = {
    Category.MULTI_HOP: 282,
    Category.TEMPORAL: 321,
    Category.OPEN_DOMAIN: 96,
    Category.SINGLE_HOP: 841,
    Category.ADVERSARIAL: 446,
}


@register_suite(
    name="locomo",
    title="LOCOMO",
    categories=tuple(LOCOMO_COUNTS),
    scored=(Category.MULTI_HOP, Category.TEMPORAL, Category.OPEN_DOMAIN, Category.SINGLE_HOP),
    optional=(Category.ADVERSARIAL,),
    expected_counts=LOCOMO_COUNTS,
    sources=(LOCOMO_SOURCE,),
)
def load_locomo(request: DatasetRequest) -> Dataset:
    """locomo10.json (or a file of its shape), through the one LOCOMO loader."""
    dataset = load_dataset(
        resolve_dataset_path(request.path, request.data_dir),
        conversations=request.conversations,
        fold_captions=request.fold_captions,
    )
    check_counts("locomo", dataset, whole_file=request.conversations is None)
    return dataset
