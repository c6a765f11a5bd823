"""The oracle bound: the answer model sees exactly the question's annotated evidence turns, with their
session dates. Its J is the ceiling of this answer model under this judge: no memory system can hand the
answer stage a better context than the turns the annotators marked (up to the key's own errors).

LOCOMO's evidence lists are not clean: some ids are malformed ("D8:6; D9:17", "D:11:26", "D"), some point
to no turn ("D30:05" for D30:5, or ids past a session's end). Every id is parsed leniently into the
"D<session>:<turn>" ids it names; each one repaired, unusable or dangling is counted per conversation (the
ingest report's details), so the bound says how much of the key it could actually show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.memory.base import IngestReport, RetrievedContext, SystemBase, SystemContext
from mem0bench.memory.costs import CostPlan, MethodConfig
from mem0bench.tokens import count_tokens

__all__ = ["EvidenceIds", "Oracle", "parse_evidence"]

_CLEAN = re.compile(r"D(\d+):(\d+)")
# Inside a malformed id: "D" then an optional stray colon, the session, a colon, the turn.
_LOOSE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class EvidenceIds:
    """The turns one question's evidence names, and what was wrong with its ids."""

    ids: tuple[str, ...]
    """Canonical "D<session>:<turn>" ids (no leading zeros), in the order given, each once."""
    repaired: int = 0
    """Ids that were malformed but named turns once read leniently (one per original string)."""
    unusable: int = 0
    """Ids from which no turn could be read at all ("D")."""


def parse_evidence(evidence: Iterable[str]) -> EvidenceIds:
    ids: list[str] = []
    repaired = unusable = 0
    for raw in evidence:
        text = str(raw).strip()
        clean = _CLEAN.fullmatch(text)
        found = [clean.groups()] if clean else _LOOSE.findall(text)
        if not found:
            unusable += 1
            continue
        canonical = [f"D{int(s)}:{int(t)}" for s, t in found]
        if not clean or canonical[0] != text:
            repaired += 1
        ids += [i for i in canonical if i not in ids]
    return EvidenceIds(tuple(ids), repaired, unusable)


class Oracle(SystemBase):
    """Hands the answer stage the question's evidence turns as '(date) speaker: text' lines, in
    conversation order; an empty context when the evidence names no existing turn."""

    bound = "ceiling"

    def __init__(self, *, name: str = "oracle", context: SystemContext) -> None:
        super().__init__()
        self.name = name
        self.context = context
        self._lines: dict[str, dict[str, str]] = {}

    @classmethod
    def cost_plan(cls, method: MethodConfig, dataset: Dataset, n_questions: int) -> CostPlan:
        """No calls of its own; a context of a few turns (the dataset's mean over questions)."""
        sizes = []
        for conversation in dataset.conversations:
            lines = _turn_lines(conversation)
            for question in conversation.questions:
                sizes.append(count_tokens("\n".join(_evidence(lines, question)[0].values())))
        return CostPlan(context_tokens=sum(sizes) / max(len(sizes), 1), embeds_queries=False)

    def _conversation_lines(self, conversation: Conversation) -> dict[str, str]:
        lines = self._lines.get(conversation.sample_id)
        if lines is None:
            lines = self._lines[conversation.sample_id] = _turn_lines(conversation)
        return lines

    async def ingest(self, conversation: Conversation) -> IngestReport:
        """Nothing to build; counts the conversation's evidence ids that are malformed or point nowhere."""
        lines = self._conversation_lines(conversation)
        details = {"evidence_ids": 0, "evidence_repaired": 0, "evidence_unusable": 0, "evidence_dangling": 0}
        for question in conversation.questions:
            parsed = parse_evidence(question.evidence)
            details["evidence_ids"] += len(question.evidence)
            details["evidence_repaired"] += parsed.repaired
            details["evidence_unusable"] += parsed.unusable
            details["evidence_dangling"] += _evidence(lines, question)[1]
        return IngestReport(sample_id=conversation.sample_id, memory_tokens=None, details=details)

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        found, _ = _evidence(self._conversation_lines(conversation), question)
        text = "\n".join(found.values())
        return RetrievedContext(
            kind="evidence",
            text=text,
            tokens=count_tokens(text) if text else 0,
            source_dia_ids=tuple(found),
            search_latency_s=None,
            items=len(found),
        )


def _turn_lines(conversation: Conversation) -> dict[str, str]:
    """dia_id -> its '(date) speaker: text' line, in conversation order."""
    return {
        t.dia_id: f"({s.date_text}) {t.speaker}: {t.text}" for s in conversation.sessions for t in s.turns
    }


def _evidence(lines: dict[str, str], question: Question) -> tuple[dict[str, str], int]:
    """The question's evidence lines (dia_id -> line) in conversation order, and how many of its parsed
    ids name no turn."""
    wanted = set(parse_evidence(question.evidence).ids)
    found = {dia_id: line for dia_id, line in lines.items() if dia_id in wanted}
    return found, len(wanted) - len(found)
