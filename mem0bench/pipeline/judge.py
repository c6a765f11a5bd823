"""The judge stage: `runs` independent CORRECT/WRONG labels per answer, each its own cached call."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, cast

from mem0bench.llm.client import LLMClient
from mem0bench.llm.probes import Probe
from mem0bench.llm.structured import parse_reply
from mem0bench.llm.timing import measure
from mem0bench.llm.types import STRUCTURED_MODES, LLMCallError, Message, ReplyShapeError, StructuredMode
from mem0bench.prompts.files import JUDGE_FIELDS, PromptFile, load_prompt_file, read_verdict
from mem0bench.prompts.judge import (
    ADVERSARIAL_GOLD,
    GRADED_JUDGE_SPEC,
    JUDGE_PROMPTS,
    JUDGE_SPEC,
    GradedVerdict,
    JudgePrompt,
    Verdict,
    build_judge_messages,
)
from mem0bench.prompts.lme_judge import (
    LME_MAX_TOKENS,
    LME_TEMPERATURE,
    build_lme_judge_messages,
    said_yes,
)
from mem0bench.rundir.records import AnswerRecord, Judgement, Label
from mem0bench.suites import suite_of
from mem0bench.suites.base import import_named

LME_PROMPT = "longmemeval"
"""`judge.prompt=longmemeval`: LongMemEval's authors' per-type prompts (prompts/lme_judge.py)."""
YES_NO = "yes_no"
"""`judge.mode=yes_no`: a free-text reply read as yes or no, at the authors' temperature 0 and 10 tokens."""
JudgeMode = StructuredMode | Literal["yes_no"]
JUDGE_MODES: tuple[str, ...] = (*STRUCTURED_MODES, YES_NO)


@dataclass(frozen=True)
class JudgeSettings:
    model: str
    runs: int = 10
    prompt: JudgePrompt | Literal["longmemeval"] = "lenient"
    mode: JudgeMode = "tool"
    panel: tuple[str, ...] = ()
    """More judge models over the same answers (same prompt, mode and runs), each kept apart."""
    prompt_file: str | None = None
    """`judge.prompt_file`: a prompt file (mem0bench.prompts.files) in place of `prompt`."""
    template: PromptFile | None = field(default=None, init=False, compare=False, repr=False)
    """The loaded prompt file (None without one)."""

    def __post_init__(self) -> None:
        if self.prompt_file is not None:
            template = load_prompt_file(
                "judge.prompt_file", str(self.prompt_file), JUDGE_FIELDS, JUDGE_FIELDS, judge=True
            )
            object.__setattr__(self, "template", template)
        panel = self.panel
        if isinstance(panel, str) or not all(isinstance(m, str) and m for m in panel):
            raise ValueError(f"judge.panel must be a list of model names, not {panel!r}")
        object.__setattr__(self, "panel", tuple(panel))
        if isinstance(self.runs, bool) or not isinstance(self.runs, int):
            raise ValueError(f"judge.runs must be an integer >= 1, not {self.runs!r}")
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"judge.model must be a model name, not {self.model!r}")
        prompts = (*JUDGE_PROMPTS, LME_PROMPT)
        if self.prompt not in prompts:
            raise ValueError(f"judge.prompt must be one of {', '.join(prompts)}, not {self.prompt!r}")
        if self.mode not in JUDGE_MODES:
            raise ValueError(f"judge.mode must be one of {', '.join(JUDGE_MODES)}, not {self.mode!r}")
        # The authors' prompts end in "yes or no only" and the yes/no reading fits no other prompt: together
        # or not at all (judge=longmemeval sets both).
        if (self.prompt == LME_PROMPT) != (self.mode == YES_NO):
            raise ValueError(
                f"judge.prompt={self.prompt} with judge.mode={self.mode}: judge.prompt=longmemeval and "
                "judge.mode=yes_no go together (judge=longmemeval)"
            )
        if self.mode == YES_NO and self.prompt_file is not None:
            raise ValueError("judge.mode=yes_no is the authors' prompt's; a judge.prompt_file brings its own")
        if self.runs < 1:
            raise ValueError(f"judge.runs must be at least 1, not {self.runs}")

    def panel_judges(self) -> list[JudgeSettings]:
        """The panel's other judges (judge.model itself is the panel's first member, never repeated)."""
        models = [m for m in dict.fromkeys(self.panel) if m != self.model]
        return [dataclasses.replace(self, model=m, panel=()) for m in models]

    def probes(self, *, panel: bool = True) -> list[Probe]:
        """The structured-output probes for this judge's models (with the panel's); none in the yes/no mode,
        which asks for plain text."""
        if self.mode == YES_NO:
            return []
        models = dict.fromkeys([self.model, *(self.panel if panel else ())])
        return [Probe(m, cast(StructuredMode, self.mode), "judge.mode") for m in models]

    @property
    def reply_tokens_max(self) -> int | None:
        """The verdict's token cap: the authors' 10 in the yes/no mode; None (the model's) otherwise."""
        return LME_MAX_TOKENS if self.mode == YES_NO else None

    @property
    def locomo_prompt(self) -> JudgePrompt:
        """`prompt` as one of our own gradings (the yes/no mode never asks: `judge_once` sends it elsewhere)."""
        return "lenient" if self.prompt == LME_PROMPT else cast(JudgePrompt, self.prompt)

    @property
    def prompt_name(self) -> str:
        """The prompt's name: `prompt`, or 'file-<name>-<sha256 start>' for a prompt file."""
        return self.prompt if self.template is None else f"file-{self.template.label}"

    @property
    def name(self) -> str:
        """How tables name this judge: model and prompt."""
        return f"{self.model} ({self.prompt_name})"

    @property
    def signature(self) -> str:
        """Identifies the judge: labels from another model, prompt (or prompt file) or mode are never mixed
        in. Without a prompt file the signature is what it always was."""
        parts = [self.model, self.prompt, self.mode]
        if self.template is not None:
            parts.append(self.template.sha256)
        blob = json.dumps(parts, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def messages(self, question: str, gold: str, prediction: str, *, adversarial: bool) -> list[Message]:
        """The messages of one judgement, from the prompt file when there is one (with the authors' LongMemEval
        prompts, whose wording depends on the question type, the fact type's: for a token estimate)."""
        if self.prompt == LME_PROMPT:
            category = "abstention" if adversarial else "single_session_user"
            return build_lme_judge_messages(question, gold, prediction, category=category)
        if self.template is None:
            return build_judge_messages(
                question, gold, prediction, prompt=self.locomo_prompt, adversarial=adversarial
            )
        return self.template.render(
            question=question, gold=ADVERSARIAL_GOLD if adversarial else gold, answer=prediction
        )


async def judge_once(client: LLMClient, settings: JudgeSettings, answer: AnswerRecord, run: int) -> Judgement:
    """One judge run on one answer. A reply that never parses becomes a recorded failure, not WRONG. The
    answer's category names its suite, whose own grading (if any) replaces `settings.prompt`'s; a judge
    prompt file replaces both."""
    adversarial = answer.category == "adversarial"
    suite = suite_of(answer.category_id)
    if suite.judge is not None and settings.template is None:  # the suite's own judge (BEAM's rubric)
        own = cast(Callable[..., Awaitable[Judgement]], import_named(suite.judge))
        return await own(client, settings, answer, run)
    rubric = next((r for c, r in suite.rubrics.items() if int(c) == answer.category_id), None)
    graded = suite.grading == "graded"
    template = settings.template
    if settings.mode == YES_NO:
        return await _judge_yes_no(client, settings, answer, run)
    if template is None:
        messages = build_judge_messages(
            answer.question,
            answer.gold,
            answer.prediction,
            prompt=settings.locomo_prompt,
            adversarial=adversarial,
            rubric=rubric.text if rubric else None,
            reference=rubric.reference if rubric else "Gold answer",
            graded=graded,
        )
    else:
        messages = settings.messages(answer.question, answer.gold, answer.prediction, adversarial=adversarial)
    salt = f"judge-run-{run}" if template is None else f"judge-run-{run}|{template.salt}"
    if template is not None and template.verdict != "tool":
        return await _judge_plain(client, settings, messages, salt, answer, run, template)
    mode = cast(StructuredMode, settings.mode)  # yes_no is answered above
    spec = dataclasses.replace(GRADED_JUDGE_SPEC if graded else JUDGE_SPEC, mode=mode)
    with measure() as scope:
        try:
            reply = await client.structured(messages, spec, stage="judge", salt=salt, model=settings.model)
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


async def _judge_plain(
    client: LLMClient,
    settings: JudgeSettings,
    messages: list[Message],
    salt: str,
    answer: AnswerRecord,
    run: int,
    template: PromptFile,
) -> Judgement:
    """A prompt file's judge that replies in plain text: the verdict read as the file says."""
    return await _judge_text(
        client, settings, messages, answer, run,
        read=lambda text: read_verdict(text, template.verdict),
        unread=f"no {template.verdict} verdict in the reply", salt=salt,
    )  # fmt: skip


async def _judge_yes_no(
    client: LLMClient, settings: JudgeSettings, answer: AnswerRecord, run: int
) -> Judgement:
    """LongMemEval's authors' judgement: their per-type prompt (an abstention question's by its category),
    temperature 0, at most 10 tokens, no tools or response format; CORRECT when the reply says yes. Any
    other reply is WRONG, as in their script; only a call that never gives a reply is a failure."""
    messages = build_lme_judge_messages(
        answer.question, answer.gold, answer.prediction, category=answer.category
    )
    return await _judge_text(
        client, settings, messages, answer, run,
        read=lambda text: "CORRECT" if said_yes(text) else "WRONG", unread="",
        salt=f"judge-run-{run}", temperature=LME_TEMPERATURE, max_tokens=settings.reply_tokens_max,
    )  # fmt: skip


async def _judge_text(
    client: LLMClient,
    settings: JudgeSettings,
    messages: list[Message],
    answer: AnswerRecord,
    run: int,
    *,
    read: Callable[[str], Label | None],
    unread: str,
    salt: str,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> Judgement:
    """A judgement from a plain-text reply: `read` finds its label (None: malformed, `unread` says why)."""
    with measure() as scope:
        try:
            reply = await client.chat(
                messages, stage="judge", salt=salt, model=settings.model,
                temperature=temperature, max_tokens=max_tokens,
            )  # fmt: skip
        except LLMCallError as exc:
            return Judgement(
                qid=answer.qid, run=run, label=None, signature=settings.signature,
                failure=f"{exc.failure.kind}: {exc.failure.message}", usage=scope.usage,
            )  # fmt: skip
    label = read(reply.text)
    if label is None:
        return Judgement(
            qid=answer.qid, run=run, label=None, signature=settings.signature,
            failure=f"malformed: {unread}", usage=scope.usage,
        )  # fmt: skip
    return Judgement(
        qid=answer.qid, run=run, label=label, signature=settings.signature, reasoning=reply.text.strip(),
        usage=scope.usage,
    )  # fmt: skip
