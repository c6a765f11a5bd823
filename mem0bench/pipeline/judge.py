"""The judge stage: `runs` independent CORRECT/WRONG labels per answer, each its own cached call."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from mem0bench.llm.client import LLMClient
from mem0bench.llm.structured import parse_reply
from mem0bench.llm.timing import measure
from mem0bench.llm.types import STRUCTURED_MODES, LLMCallError, ReplyShapeError, StructuredMode
from mem0bench.prompts.judge import (
    GRADED_JUDGE_SPEC,
    JUDGE_PROMPTS,
    JUDGE_SPEC,
    GradedVerdict,
    JudgePrompt,
    Verdict,
    build_judge_messages,
)
from mem0bench.rundir.records import AnswerRecord, Judgement
from mem0bench.suites import suite_of


@dataclass(frozen=True)
class JudgeSettings:
    model: str
    runs: int = 10
    prompt: JudgePrompt = "lenient"
    mode: StructuredMode = "tool"
    panel: tuple[str, ...] = ()
    """More judge models over the same answers (same prompt, mode and runs), each kept apart."""

    def __post_init__(self) -> None:
        panel = self.panel
        if isinstance(panel, str) or not all(isinstance(m, str) and m for m in panel):
            raise ValueError(f"judge.panel must be a list of model names, not {panel!r}")
        object.__setattr__(self, "panel", tuple(panel))
        if isinstance(self.runs, bool) or not isinstance(self.runs, int):
            raise ValueError(f"judge.runs must be an integer >= 1, not {self.runs!r}")
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"judge.model must be a model name, not {self.model!r}")
        if self.prompt not in JUDGE_PROMPTS:
            raise ValueError(f"judge.prompt must be one of {', '.join(JUDGE_PROMPTS)}, not {self.prompt!r}")
        if self.mode not in STRUCTURED_MODES:
            raise ValueError(f"judge.mode must be one of {', '.join(STRUCTURED_MODES)}, not {self.mode!r}")
        if self.runs < 1:
            raise ValueError(f"judge.runs must be at least 1, not {self.runs}")

    def panel_judges(self) -> list[JudgeSettings]:
        """The panel's other judges (judge.model itself is the panel's first member, never repeated)."""
        models = [m for m in dict.fromkeys(self.panel) if m != self.model]
        return [dataclasses.replace(self, model=m, panel=()) for m in models]

    @property
    def name(self) -> str:
        """How tables name this judge: model and prompt."""
        return f"{self.model} ({self.prompt})"

    @property
    def signature(self) -> str:
        """Identifies the judge: labels from another model, prompt or mode are never mixed in."""
        blob = json.dumps([self.model, self.prompt, self.mode], separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


async def judge_once(client: LLMClient, settings: JudgeSettings, answer: AnswerRecord, run: int) -> Judgement:
    """One judge run on one answer. A reply that never parses becomes a recorded failure, not WRONG. The
    answer's category names its suite, whose own grading (if any) replaces `settings.prompt`'s."""
    suite = suite_of(answer.category_id)
    rubric = next((r for c, r in suite.rubrics.items() if int(c) == answer.category_id), None)
    graded = suite.grading == "graded"
    messages = build_judge_messages(
        answer.question,
        answer.gold,
        answer.prediction,
        prompt=settings.prompt,
        adversarial=answer.category == "adversarial",
        rubric=rubric.text if rubric else None,
        reference=rubric.reference if rubric else "Gold answer",
        graded=graded,
    )
    spec = dataclasses.replace(GRADED_JUDGE_SPEC if graded else JUDGE_SPEC, mode=settings.mode)
    with measure() as scope:
        try:
            reply = await client.structured(
                messages, spec, stage="judge", salt=f"judge-run-{run}", model=settings.model
            )
        except LLMCallError as exc:
            return Judgement(
                qid=answer.qid, run=run, label=None, signature=settings.signature,
                failure=f"{exc.failure.kind}: {exc.failure.message}", usage=scope.usage,
            )  # fmt: skip
    try:
        verdict = parse_reply(GradedVerdict, reply.data) if graded else parse_reply(Verdict, reply.data)
    except ReplyShapeError as exc:  # the client validated the same schema: only a server bypassing it
        return Judgement(
            qid=answer.qid, run=run, label=None, signature=settings.signature,
            failure=f"malformed: {exc}", usage=scope.usage,
        )  # fmt: skip
    return Judgement(
        qid=answer.qid,
        run=run,
        label=verdict.label,
        signature=settings.signature,
        reasoning=verdict.reasoning,
        usage=scope.usage,
    )
