"""The benchmark data model: frozen dataclasses, built only by the suites' loaders.

Every suite (LOCOMO, Locomo-Plus, LongMemEval: `mem0bench.suites`) loads into these same objects: a
conversation is what a system ingests, its questions are asked after it. Categories of all suites share one
enum with disjoint numbers, so a run file's `category_id` says which suite's grading applies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum
from typing import Any


class Category(IntEnum):
    """Question categories under their official names. 1-5: LOCOMO's (its own evaluation code and counts);
    6: Locomo-Plus's cognitive questions (its "sixth LOCOMO category"); 11-17: LongMemEval's six question
    types, plus its abstention questions (`question_id` ending in `_abs`) as a category of their own."""

    MULTI_HOP = 1
    TEMPORAL = 2
    OPEN_DOMAIN = 3
    SINGLE_HOP = 4
    ADVERSARIAL = 5
    COGNITIVE = 6
    SINGLE_SESSION_USER = 11
    SINGLE_SESSION_ASSISTANT = 12
    SINGLE_SESSION_PREFERENCE = 13
    MULTI_SESSION = 14
    TEMPORAL_REASONING = 15
    KNOWLEDGE_UPDATE = 16
    ABSTENTION = 17

    @property
    def label(self) -> str:
        """The official name in snake_case: multi_hop, temporal, ..., single_session_user, abstention."""
        return self.name.lower()

    @property
    def family(self) -> str:
        """The data family whose category it is: locomo, locomo_plus or longmemeval."""
        return "locomo" if self <= 5 else "locomo_plus" if self == 6 else "longmemeval"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
        return [f"({s.date_text}) {t.speaker}: {t.text}" for s in self.sessions for t in s.turns]

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
