"""Summary numbers of a loaded dataset, for `mem0bench data stats` and for run records."""

from __future__ import annotations

from statistics import fmean
from typing import Any

from tabulate import tabulate

from mem0bench.data.model import Category, Dataset
from mem0bench.tokens import ENCODING, count_tokens

__all__ = ["dataset_stats", "format_stats_table"]


def dataset_stats(ds: Dataset) -> dict[str, Any]:
    """Counts and token sizes of a dataset, as a JSON-ready dict.

    Keys: ``conversations``, ``sessions``, ``turns``, ``questions``, ``categories`` (question counts by
    official label, in category order: multi_hop, temporal, open_domain, single_hop, adversarial),
    ``turns_with_images`` (turns carrying an image caption), ``tokens_per_conversation`` (sample_id ->
    cl100k_base tokens of the conversation's ``render_lines()`` joined by newlines), ``tokens_min``,
    ``tokens_mean``, ``tokens_max`` and ``sha256`` (of the file).
    """
    convs = ds.conversations
    # The categories of the dataset's own family (LOCOMO's five for LOCOMO), zeros included.
    families = {q.category.family for q in ds.questions} or {"locomo"}
    categories = {c.label: 0 for c in Category if c.family in families}
    for q in ds.questions:
        categories[q.category.label] += 1
    tokens = {c.sample_id: count_tokens("\n".join(c.render_lines())) for c in convs}
    sizes = list(tokens.values())
    return {
        "conversations": len(convs),
        "sessions": sum(len(c.sessions) for c in convs),
        "turns": sum(len(s.turns) for c in convs for s in c.sessions),
        "questions": sum(len(c.questions) for c in convs),
        "categories": categories,
        "turns_with_images": sum(1 for c in convs for s in c.sessions for t in s.turns if t.caption),
        "tokens_per_conversation": tokens,
        "tokens_min": min(sizes) if sizes else 0,
        "tokens_mean": round(fmean(sizes), 1) if sizes else 0.0,
        "tokens_max": max(sizes) if sizes else 0,
        "sha256": ds.sha256,
    }


def format_stats_table(stats: dict[str, Any]) -> str:
    """``dataset_stats()`` output as plain-text tables: totals, questions by category, tokens per
    conversation."""
    totals = [
        ["conversations", stats["conversations"]],
        ["sessions", stats["sessions"]],
        ["turns", stats["turns"]],
        ["turns with images", stats["turns_with_images"]],
        ["questions", stats["questions"]],
        [f"tokens/conversation min ({ENCODING})", stats["tokens_min"]],
        [f"tokens/conversation mean ({ENCODING})", stats["tokens_mean"]],
        [f"tokens/conversation max ({ENCODING})", stats["tokens_max"]],
    ]
    labels = {c.label: int(c) for c in Category}
    total_q = stats["questions"] or 1
    cats = [
        [labels.get(name, "?"), name, n, f"{100 * n / total_q:.1f}%"]
        for name, n in stats["categories"].items()
    ]
    per_conv = list(stats["tokens_per_conversation"].items())
    return "\n\n".join(
        [
            tabulate(
                [[name, f"{value:,}"] for name, value in totals],
                tablefmt="plain",
                colalign=("left", "right"),
                disable_numparse=True,
            )
            + f"\nsha256  {stats['sha256']}",
            tabulate(cats, headers=["cat", "label", "questions", "share"], tablefmt="simple"),
            tabulate(per_conv, headers=["conversation", "tokens"], tablefmt="simple"),
        ]
    )
