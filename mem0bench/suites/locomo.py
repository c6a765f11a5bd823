"""LOCOMO (Maharana et al., ACL 2024): 10 conversations, 1,986 questions; the default suite."""

from __future__ import annotations

from mem0bench.data.download import LOCOMO_FILENAME, LOCOMO_SHA256, LOCOMO_URL, resolve_dataset_path
from mem0bench.data.loader import LOCOMO_CATEGORIES, load_dataset
from mem0bench.data.model import Dataset
from mem0bench.suites.base import DatasetRequest, SourceFile, check_counts, register_suite

LOCOMO_SOURCE = SourceFile(
    LOCOMO_FILENAME,
    LOCOMO_URL,
    LOCOMO_SHA256,
    "CC BY-NC 4.0 (stated in snap-research/locomo's README and LICENSE)",
)
# LOCOMO's categories under their official names (the numbers its file writes: data.loader reads them).
MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP, ADVERSARIAL = (LOCOMO_CATEGORIES[n] for n in range(1, 6))
CATEGORIES = (MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP, ADVERSARIAL)
LOCOMO_COUNTS = {MULTI_HOP: 282, TEMPORAL: 321, OPEN_DOMAIN: 96, SINGLE_HOP: 841, ADVERSARIAL: 446}


@register_suite(
    name="locomo",
    title="LOCOMO",
    categories=CATEGORIES,
    scored=(MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP),
    optional=(ADVERSARIAL,),
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
