"""The benchmark data model: frozen dataclasses, built only by the suites' loaders.

Every suite (LOCOMO, Locomo-Plus, LongMemEval: `mem0bench.suites`) loads into these same objects: a
conversation is what a system ingests, its questions are asked after it. A question's `Category` is a small
value (suite, id, name) that its suite defines; the suites' registry keeps the ids disjoint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import total_ordering
from typing import Any


@total_ordering
@dataclass(frozen=True)
class Category:
    """A question category: the suite (family) that defines it, its number and its official name.

    The core names no suite's categories: each suite module creates its own (`mem0bench.suites`, e.g.
    `suites/locomo.py`) and registers them, and the registry keeps the numbers of all suites disjoint, so a
    run file's `category_id` says which suite's grading applies. Categories order by their number."""

    suite: str
    """The family whose category it is (locomo, locomo_plus, longmemeval): variants of one benchmark
    (LongMemEval's S, M and oracle files) share their family's categories."""
    id: int
    name: str
    """The official name in snake_case (multi_hop, single_session_user, ...): run files' `category`."""

    @property
    def label(self) -> str:
        """The official name (`name`), as run files, metrics.json and reports write it."""
        return self.name

    def __int__(self) -> int:
        return self.id

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Category):
            return NotImplemented
        return self.id < other.id


@dataclass(frozen=True, slots=True)  # slots: a 10M-token conversation has ~240,000 turns (no __dict__ each)
class Turn:
    speaker: str
    dia_id: str
    text: str
    """The spoken text; with the loader's default, an image caption is folded in."""
    caption: str | None = None

    @property
    def session_index(self) -> int:
        """The N of 'DN:M' (0 if the dia_id is malformed)."""
        head = self.dia_id.split(":", 1)[0].lstrip("D")
        return int(head) if head.isdigit() else 0


@dataclass(frozen=True, slots=True)
class Session:
    index: int
    date_time: datetime
    date_text: str
    """The date as written in the file, e.g. '1:56 pm on 8 May, 2023'."""
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    qid: str
    """Stable id: '<sample_id>:q<index in the sample's qa list>'."""
    sample_id: str
    index: int
    question: str
    answer: str
    """Gold answer as text (ints become text). For adversarial questions without one, ''."""
    category: Category
    evidence: tuple[str, ...] = ()
    adversarial_answer: str | None = None
    evidence_sessions: tuple[int, ...] = ()
    """Session-level evidence (LongMemEval's `answer_session_ids`, as session indexes); empty for LOCOMO,
    whose evidence is turn-level only."""
    asked_on: str | None = None
    """When the question is asked, as the file writes dates (LongMemEval's `question_date`, Locomo-Plus's
    trigger time); None for LOCOMO, whose questions carry no date."""
    question_type: str | None = None
    """The suite's own type of the question where its authors score by it (LongMemEval's `question_type`,
    an abstention question's included); None for suites without one. Rows carry it so the suite's figures
    can be computed again from a run's files alone."""


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    position: int = 0
    """Index of the sample in the file (audit files name conversations by it)."""

    @property
    def speakers(self) -> tuple[str, str]:
        return (self.speaker_a, self.speaker_b)

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(t for s in self.sessions for t in s.turns)

    def render_lines(self) -> list[str]:
        """The conversation as '(date) speaker: text' lines, the form used by RAG and full context."""
        return [line for line, _ in self.iter_lines()]

    def iter_lines(self) -> Iterator[tuple[str, str]]:
        """(line, dia_id) of each turn, the line as `render_lines` has it, made one at a time: a consumer
        that keeps only what it builds from them (RAG's chunks) never holds the rendered conversation."""
        for s in self.sessions:
            for t in s.turns:
                yield f"({s.date_text}) {t.speaker}: {t.text}", t.dia_id

    def fingerprint(self, settings: Mapping[str, Any] | None = None) -> str:
        """A sha256 of what a memory is built from: every session (index, date) and turn (dia_id, speaker,
        text), and the `settings` that shaped it. A system's saved state is reused only under the same one."""
        digest = hashlib.sha256(json.dumps(dict(settings or {}), sort_keys=True, default=str).encode())
        for session in self.sessions:
            digest.update(f"#{session.index}\t{session.date_text}\n".encode())
            for turn in session.turns:
                digest.update(f"{turn.dia_id}\t{turn.speaker}\t{turn.text}\n".encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class Dataset:
    path: str
    sha256: str
    conversations: tuple[Conversation, ...]
    suite: str = "locomo"
    """The suite that loaded it (`mem0bench.suites`): names its categories, grading and answer intro."""

    @property
    def questions(self) -> tuple[Question, ...]:
        return tuple(q for c in self.conversations for q in c.questions)
