"""Summary numbers of a loaded dataset, for `mem0bench data stats` and for run records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any

from tabulate import tabulate

from mem0bench.data.loader import LOCOMO_CATEGORIES
from mem0bench.data.model import Category, Dataset
from mem0bench.tokens import CHARS_PER_TOKEN, ENCODING, approx_tokens, count_tokens

__all__ = ["Spread", "SuiteStats", "dataset_stats", "format_stats_table", "format_suite_stats", "suite_stats"]


def dataset_stats(ds: Dataset) -> dict[str, Any]:
    """Counts and token sizes of a dataset, as a JSON-ready dict.

    Keys: ``conversations``, ``sessions``, ``turns``, ``questions``, ``categories`` (question counts by
    official label: LOCOMO's five for a LOCOMO file, zeros kept (multi_hop, temporal, open_domain,
    single_hop, adversarial), else the file's own, by id),
    ``turns_with_images`` (turns carrying an image caption), ``tokens_per_conversation`` (sample_id ->
    cl100k_base tokens of the conversation's ``render_lines()`` joined by newlines), ``tokens_min``,
    ``tokens_mean``, ``tokens_max`` and ``sha256`` (of the file).
    """
    convs = ds.conversations
    # The suite's categories and no other suite's: LOCOMO's five for a LOCOMO file (zeros included), else
    # the categories its questions have.
    present = sorted({q.category for q in ds.questions})
    locomo = all(c.suite == "locomo" for c in present)
    counts = {c.label: 0 for c in (LOCOMO_CATEGORIES.values() if locomo else present)}
    for q in ds.questions:
        counts[q.category.label] += 1
    tokens = {c.sample_id: count_tokens("\n".join(c.render_lines())) for c in convs}
    sizes = list(tokens.values())
    return {
        "conversations": len(convs),
        "sessions": sum(len(c.sessions) for c in convs),
        "turns": sum(len(s.turns) for c in convs for s in c.sessions),
        "questions": sum(len(c.questions) for c in convs),
        "categories": counts,
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
    labels = {c.label: c.id for c in LOCOMO_CATEGORIES.values()}
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


# ---- another suite's numbers (`data stats --suite NAME`) -------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """Smallest, mean and largest of a per-conversation or per-question count."""

    min: int
    mean: float
    max: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Spread:
        return cls(min(values), round(fmean(values), 1), max(values)) if values else cls(0, 0.0, 0)


@dataclass(frozen=True)
class SuiteStats:
    """The counts of a suite's loaded files: totals, questions per category (beside the release's), and
    per conversation (one per question in LongMemEval) sessions, turns, evidence and size.

    Sizes are estimated from characters (`approx_tokens`): counting LongMemEval_S's ~57M tokens with
    tiktoken would take minutes, and the estimate is what the dry run uses too."""

    suite: str
    title: str
    path: str
    sha256: str
    conversations: int
    sessions: int
    turns: int
    questions: int
    categories: dict[str, tuple[int, int, int | None]]
    """label -> (category id, questions in the file, questions in the release or None)."""
    sessions_per_conversation: Spread
    turns_per_conversation: Spread
    questions_per_conversation: Spread
    approx_tokens_per_conversation: Spread
    evidence_turns_per_question: Spread
    evidence_sessions_per_question: Spread
    release_note: str = ""
    """How the release's counts count, where that is not by category."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        out = asdict(self)
        out["categories"] = {
            label: {"id": cid, "questions": n, "release": release}
            for label, (cid, n, release) in self.categories.items()
        }
        return out


def suite_stats(
    ds: Dataset,
    *,
    title: str,
    categories: Sequence[Category],
    release: Mapping[Category, int],
    release_note: str = "",
) -> SuiteStats:
    """`ds`'s counts, its questions counted under `categories` (the suite's, in its order, zeros kept)."""
    convs = ds.conversations
    found = Counter(q.category for q in ds.questions)
    return SuiteStats(
        suite=ds.suite,
        title=title,
        path=ds.path,
        sha256=ds.sha256,
        conversations=len(convs),
        sessions=sum(len(c.sessions) for c in convs),
        turns=sum(len(s.turns) for c in convs for s in c.sessions),
        questions=len(ds.questions),
        categories={c.label: (int(c), found.get(c, 0), release.get(c)) for c in categories},
        sessions_per_conversation=Spread.of([len(c.sessions) for c in convs]),
        turns_per_conversation=Spread.of([len(c.turns) for c in convs]),
        questions_per_conversation=Spread.of([len(c.questions) for c in convs]),
        approx_tokens_per_conversation=Spread.of(
            [approx_tokens(sum(len(line) + 1 for line in c.render_lines())) for c in convs]
        ),
        evidence_turns_per_question=Spread.of([len(q.evidence) for q in ds.questions]),
        evidence_sessions_per_question=Spread.of([len(q.evidence_sessions) for q in ds.questions]),
        release_note=release_note,
    )


def format_suite_stats(stats: SuiteStats) -> str:
    """`suite_stats()` as plain-text tables: totals, questions by category, the per-conversation spreads."""
    totals = [
        ["conversations", stats.conversations],
        ["sessions", stats.sessions],
        ["turns", stats.turns],
        ["questions", stats.questions],
    ]
    total_q = stats.questions or 1
    cats = [
        [cid, label, n, f"{100 * n / total_q:.1f}%", "" if release is None else release]
        for label, (cid, n, release) in stats.categories.items()
    ]
    each = "per conversation" + (" (one per question)" if stats.conversations == stats.questions else "")
    spreads: list[tuple[str, Spread]] = [
        ("sessions", stats.sessions_per_conversation),
        ("turns", stats.turns_per_conversation),
        ("questions", stats.questions_per_conversation),
        (f"~tokens ({CHARS_PER_TOKEN} characters a token)", stats.approx_tokens_per_conversation),
        ("evidence turns a question", stats.evidence_turns_per_question),
        ("evidence sessions a question", stats.evidence_sessions_per_question),
    ]
    return "\n\n".join(
        [
            f"suite    {stats.title} ({stats.suite})\n"
            + tabulate(
                [[name, f"{value:,}"] for name, value in totals],
                tablefmt="plain",
                colalign=("left", "right"),
                disable_numparse=True,
            )
            + f"\nsha256  {stats.sha256}",
            tabulate(cats, headers=["cat", "label", "questions", "share", "release"], tablefmt="simple")
            + (f"\nrelease: {stats.release_note}" if stats.release_note else ""),
            tabulate(
                [[name, f"{s.min:,}", f"{s.mean:,.1f}", f"{s.max:,}"] for name, s in spreads],
                headers=[each, "min", "mean", "max"],
                tablefmt="simple",
                colalign=("left", "right", "right", "right"),
                disable_numparse=True,
            ),
        ]
    )
