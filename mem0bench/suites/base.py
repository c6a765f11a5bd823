"""The suite seam: what a benchmark suite tells the harness, and the registry that holds the suites.

A suite says how its files become our `Conversation`/`Question` objects (`load`), its categories under
their official names with the counts of the released files (checked on load), which of them a run scores
by default, how the judge grades them (binary CORRECT/WRONG, or graded 1 / 0.5 / 0 with PARTIAL) and in what
words, whether the lexical scores (F1, BLEU-1) apply, and what the answer prompt must add. A new suite is
one module that decorates its loader with `@register_suite(...)`, plus one `configs/dataset/<name>.yaml`.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mem0bench.data.model import Category, Dataset, Question

__all__ = [
    "CATEGORIES",
    "SUITES",
    "DatasetRequest",
    "Grading",
    "Rubric",
    "SourceFile",
    "Suite",
    "all_categories",
    "category",
    "check_counts",
    "import_named",
    "register_categories",
    "register_suite",
]

log = logging.getLogger("mem0bench.suites")

Grading = Literal["binary", "graded"]
"""binary: CORRECT 1 / WRONG 0; graded: CORRECT 1 / PARTIAL 0.5 / WRONG 0."""


@dataclass(frozen=True)
class DatasetRequest:
    """`dataset.*` of the config, checked: which files, which part of them, and the suite's own options."""

    path: str | None
    """The suite's main file; None: the file in `data_dir`, fetched there if missing."""
    data_dir: Path
    conversations: Sequence[str] | None = None
    fold_captions: bool = True
    host_path: str | None = None
    """Locomo-Plus: the LOCOMO file holding the host conversations (None: LOCOMO's own resolution)."""
    mode: str = "faithful"
    """Locomo-Plus: `faithful` (one stitched copy of a host per item) or `grouped` (many cues per copy)."""
    seed: int = 0
    """Locomo-Plus: the seed of the host choice."""
    scale: str | None = None
    """BEAM: which scale (100K, 500K, 1M, 10M); None: the suite's default."""
    options: Mapping[str, object] = field(default_factory=dict)
    """A suite's own `dataset.*` switches (BEAM's judge quirks), as the config gives them."""
    cache_dir: Path | None = None
    """Where `datasets` keeps the Arrow tables it builds from a suite's JSON (LongMemEval); None: the
    `datasets` folder of the harness's cache (`paths.cache_home()`)."""


@dataclass(frozen=True)
class Rubric:
    """The judge's grading of one category, in our words, and what the reference it sees is called."""

    text: str
    reference: str = "Gold answer"


@dataclass(frozen=True)
class SourceFile:
    """A file a suite is built from: where it comes from, its sha256 when pinned, what licence it states."""

    filename: str
    url: str
    sha256: str | None
    """None: the source publishes no fixed file (a hub dataset can change); the download records its hash."""
    licence: str
    hub_repo: str | None = None
    """A Hugging Face dataset repository to fetch `filename` from (then `url` is for people to read)."""


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    load: Callable[[DatasetRequest], Dataset]
    categories: tuple[Category, ...]
    scored: tuple[Category, ...]
    """Scored by default."""
    optional: tuple[Category, ...] = ()
    """Added by `eval.include_adversarial=true` (LOCOMO's category 5)."""
    expected_counts: Mapping[Category, int] = field(default_factory=dict)
    """Questions per category in the released files: a full load that differs is reported."""
    counts_note: str = ""
    """How `expected_counts` counts where that is not by category (`data stats` prints it)."""
    released: int | None = None
    """Questions in the release where that is not the sum of `expected_counts` (see `release_questions`)."""
    grading: Grading = "binary"
    rubrics: Mapping[Category, Rubric] = field(default_factory=dict)
    """The suite's own grading per category; a category without one is graded by `judge.prompt`."""
    lexical: bool = True
    """F1, BLEU-1 and LOCOMO's F1 apply (there is a short reference answer)."""
    answer_intro: str | None = None
    """A paragraph the answer prompt adds after its description of the context ({asked_on} is filled)."""
    answer_style: str | None = None
    """Replaces the answer prompt's "under 5 to 6 words" rule where a suite wants another kind of reply."""
    answer_prompt: str | None = None
    """'module:attribute' of the suite's own answer prompt, `(question, context) -> messages`, in place of
    the default prompt (BEAM asks for summaries, orderings and instructions followed, not a few words).
    Named, not imported: prompts sit beside suites in the layers, and the pipeline imports it."""
    answer_max_tokens: int | None = None
    """The answer's token cap where the suite wants one (None: the model's)."""
    judge: str | None = None
    """'module:attribute' of the suite's own judge, `async (client, settings, answer, run) -> Judgement`,
    in place of the one-call judge (BEAM: one call per rubric item). Named, not imported, for the layers."""
    configure_judge: Callable[[Mapping[str, object]], None] | None = None
    """Gives the suite's own judge its `dataset.*` switches where no load does it (`judge RUN_DIR`)."""
    judge_calls: Callable[[Question], int] | None = None
    """Judge calls one run makes on `question`, for the dry run's plan, where not one (BEAM: per item)."""
    sources: tuple[SourceFile, ...] = ()
    download_hint: str = ""
    """Where to get the files of a suite without `sources` (`data download` says it)."""
    notes: str = ""
    """One line the dry run and `data download` print (cost warnings, departures from the reference)."""

    @property
    def release_questions(self) -> int:
        """How many questions the released files hold."""
        return self.released if self.released is not None else sum(self.expected_counts.values())

    @property
    def own_judge(self) -> bool:
        """True when every scored category has the suite's own grading, or the suite brings its own judge
        (judge.prompt does not apply)."""
        return self.judge is not None or all(c in self.rubrics for c in (*self.scored, *self.optional))


SUITES: dict[str, Suite] = {}
CATEGORIES: dict[int, Category] = {}
"""Every registered suite's categories by id. Ids are disjoint across suites (variants of one family, such
as LongMemEval's S, M and oracle, register the same `Category` values), so a run file's `category_id` alone
names its suite's grading."""


def register_categories(categories: Sequence[Category]) -> None:
    """Add `categories` to the registry; an id or a name another category already holds is a ValueError
    (metrics.json's blocks and the report's columns are keyed by the name)."""
    for c in categories:
        held = CATEGORIES.get(c.id)
        if held is not None and held != c:
            raise ValueError(f"category id {c.id} ({c.suite} {c.name}) is already {held.suite}'s {held.name}")
        named = next((o for o in CATEGORIES.values() if o.name == c.name and o != c), None)
        if named is not None:
            raise ValueError(
                f"category name {c.name!r} ({c.suite} {c.id}) is already {named.suite}'s {named.id}"
            )
        CATEGORIES[c.id] = c


def register_suite(**spec: object) -> Callable[[Callable[[DatasetRequest], Dataset]], Callable[..., Dataset]]:
    """Decorate a loader to register it as suite `spec["name"]` (the other `Suite` fields as keywords); its
    categories join the registry."""

    def wrap(load: Callable[[DatasetRequest], Dataset]) -> Callable[[DatasetRequest], Dataset]:
        suite = Suite(load=load, **spec)  # type: ignore[arg-type]
        if suite.name in SUITES:
            raise ValueError(f"suite {suite.name!r} is registered twice")
        register_categories(suite.categories)
        SUITES[suite.name] = suite
        return load

    return wrap


def import_named(path: str) -> object:
    """The object a 'module:attribute' path names (a suite's own answer prompt or judge)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def category(category_id: int) -> Category:
    """The registered category numbered `category_id`; an unknown id is a ValueError."""
    try:
        return CATEGORIES[category_id]
    except KeyError:
        raise ValueError(f"no registered suite has a category {category_id}") from None


def all_categories() -> list[Category]:
    """Every registered category, by id (the order of tables and per-category blocks)."""
    return sorted(CATEGORIES.values())


def check_counts(
    name: str, dataset: Dataset, *, whole_file: bool, found: Mapping[Category, int] | None = None
) -> list[str]:
    """For suite `name`: lines naming each category whose count differs from the released files' (only for a
    whole file: a selection of conversations differs by design). Logged, and returned for tests."""
    suite = SUITES[name]
    if not whole_file or not suite.expected_counts:
        return []
    if found is None:  # by the questions' categories, unless the suite counts its own way
        found = Counter(q.category for q in dataset.questions)
    parts = [
        f"{found.get(c, 0)} {c.label} questions where the release of {suite.title} has {n}"
        for c, n in suite.expected_counts.items()
        if found.get(c, 0) != n
    ]
    lines = [f"{dataset.path}: {part} (another version of the file?)" for part in parts]
    # A file the release's size with other counts is another version of it: a warning on the console. A
    # file of another size (a subset, a test fixture, one's own data) is only noted in the log. Either way
    # one line for the file, not one per category (LongMemEval's seven filled a run's log).
    same_size = sum(found.get(c, 0) for c in suite.expected_counts) == sum(suite.expected_counts.values())
    if parts:
        kind = "another version of the file?" if same_size else "a subset or another file"
        log.log(
            logging.WARNING if same_size else logging.INFO, f"{dataset.path}: {'; '.join(parts)} ({kind})"
        )
    return lines
