"""Plugged-in systems with bugs of their own, for the tests of how a run reports them (built by Hydra
from `method._target_=tests.faulty_systems.<Name>`, run from the repository root)."""

from __future__ import annotations

from mem0bench.data.model import Conversation, Question
from mem0bench.memory.base import IngestReport, RetrievedContext
from mem0bench.systems.baselines.rag import RAG


class IngestRaises(RAG):
    """Its ingest raises a plain Python error (as a bug in a system's own code would)."""

    async def ingest(self, conversation: Conversation) -> IngestReport:
        raise KeyError("speaker_c")


class RetrieveRaises(RAG):
    """Its retrieve raises for the first question of each conversation and works for the others."""

    async def retrieve(self, conversation: Conversation, question: Question) -> RetrievedContext:
        if question.qid == conversation.questions[0].qid:
            raise ZeroDivisionError("division by zero in the ranking")
        return await super().retrieve(conversation, question)
