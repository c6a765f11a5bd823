"""BEAM (Tavakoli et al., "Beyond a Million Tokens", arXiv 2510.27246): user-assistant chats of 100K, 500K,
1M and 10M tokens, 20 probing questions each (two per ability), scored by rubrics.

Files. `dataset.path` is a folder in the repository's layout (github.com/mohammadtavakoli78/BEAM):
`chats/<scale>/<n>/chat.json` and `chats/<scale>/<n>/probing_questions/probing_questions.json` (the folder
that holds `chats/`, or `chats/` itself); or the hub's dataset (`Mohammadta/BEAM`, `Mohammadta/BEAM-10M`)
saved by `datasets` (`save_to_disk`) or as its parquet files, read through `datasets` (`beam_hub.py`).
`dataset.scale` picks the scale. Conversation ids are `<scale>-<n>` (`100K-1`).

Model. A batch of the chat is a session, dated by its time anchor (the batch's, else the one its first
message carries, else the previous session's). Messages are turns of `User` and `Assistant`, dia_id
`D<session>:<message id>`, so a question's `source_chat_ids` (message ids, a list or a dict of lists) are
its evidence and feed evidence recall. Each ability is a category (ids 61-70, named `beam_<ability>`).

Grading. A question's gold is its rubric (a JSON list of the requirements): the authors' judge sees only the
rubric, never the ability's reference answer. The rubric judge (`pipeline/beam_judge.py`, `Suite.judge`)
asks once per rubric item; event ordering is also scored by Kendall tau (`beam_scoring.py`). Three
switches, each with the authors' behaviour available (`configs/exp/paper/beam.yaml` sets them all):

- `dataset.judge_question`: `filled` (ours) puts the question into the judge's prompt; `unfilled` leaves
  the `<question>` placeholder as the authors' code does (it never replaces it);
- `dataset.partial_credit`: `kept` (ours) counts a 0.5 as 0.5 in every ability; `authors` truncates it to
  0 in nine abilities (their `int(score)`), event ordering keeping it (their `float(score)`);
- `dataset.event_ordering_score`: `tau_norm` (the authors' report, the default), `rubric` (the rubric
  judge's mean, as the other abilities) or `final_score` (tau_norm times the items' F1).

A fourth quirk needs no switch here: the authors' evaluation script writes `evaluation-<file>` in its
parallel mode while their report reads only files whose name holds `evaluation-results`; we write no such
files (our figures are computed from the run's rows), and `beam_authors_file_names` says which name each
script uses for anyone importing their outputs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mem0bench.data.errors import DatasetError, check_path_id
from mem0bench.data.model import Category, Conversation, Dataset, Question, Session, Turn
from mem0bench.metrics.registry import Metric, register_metric
from mem0bench.suites.base import DatasetRequest, register_suite
from mem0bench.suites.beam_hub import RawConversation, read_hub
from mem0bench.suites.beam_scoring import (
    authors_average,
    beam_rows,
    conversation_bootstrap,
    per_question_average,
)
from mem0bench.suites.files import read_json

__all__ = [
    "ABILITIES",
    "ANSWER_MAX_TOKENS",
    "CATEGORIES",
    "SCALES",
    "JudgeOptions",
    "beam_authors_file_names",
    "judge_options",
    "load_beam",
]

SCALES = ("100K", "500K", "1M", "10M")
CONVERSATIONS = {"100K": 20, "500K": 35, "1M": 35, "10M": 10}
ABILITY_NAMES = (
    "abstention", "contradiction_resolution", "event_ordering", "information_extraction",
    "instruction_following", "knowledge_update", "multi_session_reasoning", "preference_following",
    "summarization", "temporal_reasoning",
)  # fmt: skip
ABILITIES: dict[str, Category] = {
    a: Category("beam", n, f"beam_{a}") for n, a in enumerate(ABILITY_NAMES, 61)
}
CATEGORIES = tuple(ABILITIES.values())
ABILITY_OF: dict[int, str] = {int(c): a for a, c in ABILITIES.items()}
EVENT_ORDERING = ABILITIES["event_ordering"]
SPEAKERS = {"user": "User", "assistant": "Assistant"}
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"

ANSWER_MAX_TOKENS = 1024
"""BEAM's replies are summaries, orderings and followed instructions, not a few words; the authors set no
cap (their client's default). 1,024 tokens holds their longest ideal summaries (~400 words) with room."""
JUDGE_QUESTION = ("filled", "unfilled")
PARTIAL_CREDIT = ("kept", "authors")
EVENT_ORDERING_SCORE = ("tau_norm", "rubric", "final_score")


@dataclass(frozen=True)
class JudgeOptions:
    """BEAM's judge switches (`dataset.judge_question`, `dataset.partial_credit`,
    `dataset.event_ordering_score`): ours by default, the authors' on request."""

    judge_question: str = "filled"
    partial_credit: str = "kept"
    event_ordering_score: str = "tau_norm"


_OPTIONS = JudgeOptions()
"""The switches of the dataset this process loaded last (the judge runs in the process that loaded it)."""


def judge_options() -> JudgeOptions:
    """The rubric judge's switches, as the last BEAM load was given them."""
    return _OPTIONS


def _read_options(options: Mapping[str, object]) -> JudgeOptions:
    values: dict[str, str] = {}
    for key, allowed in (
        ("judge_question", JUDGE_QUESTION),
        ("partial_credit", PARTIAL_CREDIT),
        ("event_ordering_score", EVENT_ORDERING_SCORE),
    ):
        value = options.get(key, getattr(JudgeOptions, key))
        if value not in allowed:
            raise DatasetError(f"dataset.{key} must be one of {', '.join(allowed)}, not {value!r}")
        values[key] = str(value)
    unknown = sorted(set(options) - {"judge_question", "partial_credit", "event_ordering_score"})
    if unknown:
        raise DatasetError(f"unknown dataset key(s) for BEAM: {', '.join(unknown)}")
    return JudgeOptions(**values)


def configure_judge(options: Mapping[str, object]) -> None:
    """Set the rubric judge's switches from `dataset.*` (a load does it; `judge RUN_DIR` calls this with the
    run's config, which loads nothing)."""
    global _OPTIONS
    _OPTIONS = _read_options(options)


def judge_calls(question: Question) -> int:
    """The rubric judge's calls on one answer: one per rubric item; event ordering adds its alignment, about
    n(n+1)/2 for n items when the reply's lines follow the items one to one (each line asked against the
    items left until it matches)."""
    n = len(json.loads(question.answer))
    return n + n * (n + 1) // 2 if question.category == EVENT_ORDERING else n


def beam_authors_file_names(answers_file: str) -> dict[str, str]:
    """The authors' evaluation output for `answers_file` as each of their scripts names it: the parallel
    mode of run_evaluation.py (the one they run), its sequential mode, and what report_results.py reads
    (any file name holding 'evaluation-results': the parallel mode's output is never found)."""
    return {
        "run_evaluation_parallel": f"evaluation-{answers_file}",
        "run_evaluation_sequential": f"evaluation-results-{answers_file}",
        "report_results_reads": "*evaluation-results*",
    }


@register_suite(
    name="beam",
    title="BEAM",
    categories=CATEGORIES,
    scored=CATEGORIES,
    counts_note="two questions per ability in each conversation: 20 a conversation, 400 at 100K, 700 at "
    "500K and at 1M, 200 at 10M (2,000 in all)",
    released=2000,
    grading="graded",
    lexical=False,
    answer_prompt="mem0bench.prompts.beam:build_answer_messages",
    answer_max_tokens=ANSWER_MAX_TOKENS,
    judge="mem0bench.pipeline.beam_judge:judge_beam",
    judge_calls=judge_calls,
    configure_judge=configure_judge,
    download_hint="clone github.com/mohammadtavakoli78/BEAM (chats/100K, 500K and 9 of 1M) or save the hub's "
    "Mohammadta/BEAM and Mohammadta/BEAM-10M with datasets, then set dataset.path to the folder; the hub "
    "cards state CC BY-SA 4.0, the repository no licence",
    notes="BEAM: one judge call per rubric item (~2.6 a question; event ordering adds its alignment calls); "
    "chats of 100K to 10M tokens per conversation",
)
def load_beam(request: DatasetRequest) -> Dataset:
    configure_judge(request.options)
    scale = request.scale or "100K"
    if scale not in SCALES:
        raise DatasetError(f"dataset.scale must be one of {', '.join(SCALES)}, not {scale!r}")
    root = Path(request.path).expanduser() if request.path else request.data_dir / "beam"
    if _is_hub(root):
        items, sha256, file = read_hub(root, scale, request.cache_dir)
    else:
        items, sha256, file = _read_repository(root, scale, request.conversations)
    chosen = [item for item in items if request.conversations is None or item.cid in request.conversations]
    if request.conversations is not None:
        unknown = sorted(set(request.conversations) - {item.cid for item in items})
        if unknown:
            raise DatasetError(
                f"unknown conversation id(s) {', '.join(unknown[:5])} (BEAM's are <scale>-<n>, e.g. {scale}-1)",
                file=file,
            )
    conversations = tuple(
        conversation(item.chat, item.questions, cid=item.cid, position=n, chat_file=item.chat_file,
                     questions_file=item.questions_file)
        for n, item in enumerate(chosen)
    )  # fmt: skip
    return Dataset(path=file, sha256=sha256, conversations=conversations, suite="beam")


def _is_hub(root: Path) -> bool:
    """A `datasets` save (`dataset_dict.json`) or parquet files, rather than the repository's layout."""
    if root.is_file():
        return root.suffix == ".parquet"
    return (root / "dataset_dict.json").is_file() or any(root.glob("*.parquet")) or (root / "data").is_dir()


def _read_repository(
    root: Path, scale: str, wanted: Sequence[str] | None
) -> tuple[list[RawConversation], str, str]:
    base = next((b for b in (root / "chats" / scale, root / scale) if b.is_dir()), None)
    if base is None:
        raise DatasetError(
            f"no chats/{scale}/ folder (dataset.path is the folder of BEAM's repository, or its chats/)",
            file=str(root),
        )
    numbers = sorted(int(p.name) for p in base.iterdir() if p.is_dir() and p.name.isdigit())
    if not numbers:
        raise DatasetError(f"no conversation folders (<n>/) in chats/{scale}", file=str(base))
    digest = hashlib.sha256()
    items = []
    for n in numbers:
        cid = f"{scale}-{n}"
        if wanted is not None and cid not in wanted:
            continue
        folder = base / str(n)
        chat_path, questions_path = folder / "chat.json", folder / QUESTIONS_FILE
        for path in (chat_path, questions_path):
            if not path.is_file():
                hint = (
                    " (the repository keeps only the questions of the larger scales: the chats are on the "
                    "hub, Mohammadta/BEAM and Mohammadta/BEAM-10M)"
                    if path == chat_path
                    else ""
                )
                raise DatasetError(f"missing {path.relative_to(folder)}{hint}", file=str(path), sample=cid)
        chat, chat_sha = read_json(chat_path)
        questions, questions_sha = read_json(questions_path)
        digest.update(f"{cid}:{chat_sha}:{questions_sha};".encode())
        items.append(RawConversation(cid, chat, questions, str(chat_path), str(questions_path)))
    return items, digest.hexdigest(), str(base)


_ANCHOR = re.compile(r"\s*([A-Za-z]+)-(\d{1,2})-(\d{4})\s*")


def parse_anchor(text: str) -> datetime | None:
    """A BEAM time anchor, e.g. 'March-15-2024'; None when not in that form or impossible."""
    m = _ANCHOR.fullmatch(text)
    if m is None:
        return None
    try:
        return datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}", "%B %d %Y")
    except ValueError:
        return None


def flatten_chat(chat: Any, file: str, cid: str) -> list[tuple[str, dict[str, Any]]]:
    """The batches of a chat, each with its place for errors: the 100K-1M list of batches, or the 10M
    list of plans ({'plan-<k>': [batch, ...]})."""
    if not isinstance(chat, list) or not chat:
        raise DatasetError(
            f"expected a non-empty list of batches, found {_kind(chat)}", file=file, sample=cid
        )
    batches: list[tuple[str, dict[str, Any]]] = []
    for i, element in enumerate(chat):
        if isinstance(element, dict) and "turns" not in element and len(element) == 1:  # a 10M plan
            (name, plan), = element.items()  # fmt: skip
            if not isinstance(plan, list):
                raise DatasetError(f"expected a list of batches, found {_kind(plan)}", file=file, sample=cid,
                                   field=f"[{i}].{name}")  # fmt: skip
            batches += [(f"[{i}].{name}[{j}]", b) for j, b in enumerate(plan)]
        else:
            batches.append((f"[{i}]", element))
    return batches


def conversation(
    chat: Any, questions: Any, *, cid: str, position: int, chat_file: str, questions_file: str
) -> Conversation:
    """One conversation from its chat (a list of batches) and its probing questions, checked: a problem is
    one DatasetError line naming the file, the conversation and the field."""
    check_path_id(cid, file=chat_file, sample=cid, field="conversation id")
    sessions: list[Session] = []
    dia_of: dict[int, str] = {}
    last: tuple[datetime, str] | None = None
    for index, (where, batch) in enumerate(flatten_chat(chat, chat_file, cid), start=1):
        if not isinstance(batch, dict):
            raise DatasetError(f"expected a batch object, found {_kind(batch)}", file=chat_file, sample=cid,
                               field=where)  # fmt: skip
        turns_raw = batch.get("turns")
        if not isinstance(turns_raw, list):
            raise DatasetError(f"expected a list of turns, found {_kind(turns_raw)}", file=chat_file,
                               sample=cid, field=f"{where}.turns")  # fmt: skip
        messages: list[tuple[str, dict[str, Any]]] = []
        for t, turn in enumerate(turns_raw):
            if not isinstance(turn, list):
                raise DatasetError(f"expected a list of messages, found {_kind(turn)}", file=chat_file,
                                   sample=cid, field=f"{where}.turns[{t}]")  # fmt: skip
            messages += [(f"{where}.turns[{t}][{m}]", message) for m, message in enumerate(turn)]
        anchor = batch.get("time_anchor") or next(
            (m.get("time_anchor") for _, m in messages if isinstance(m, dict) and m.get("time_anchor")), None
        )
        if anchor is not None:
            when = parse_anchor(anchor) if isinstance(anchor, str) else None
            if when is None:
                raise DatasetError(f"cannot parse the time anchor {anchor!r} (expected e.g. 'March-15-2024')",
                                   file=chat_file, sample=cid, field=f"{where}.time_anchor")  # fmt: skip
            last = (when, anchor)
        if last is None:
            raise DatasetError("the first batch has no time anchor (neither its own nor its first message's)",
                               file=chat_file, sample=cid, field=f"{where}.time_anchor")  # fmt: skip
        turns = []
        for at, message in messages:
            turns.append(_turn(message, index, at, chat_file, cid, dia_of))
        if turns:
            sessions.append(Session(index=index, date_time=last[0], date_text=last[1], turns=tuple(turns)))
    if not isinstance(questions, dict):
        raise DatasetError(f"expected an object of abilities, found {_kind(questions)}", file=questions_file,
                           sample=cid)  # fmt: skip
    unknown = [a for a in questions if a not in ABILITIES]
    if unknown:
        raise DatasetError(f"unknown ability {unknown[0]!r} (expected one of {', '.join(ABILITIES)})",
                           file=questions_file, sample=cid, field=str(unknown[0]))  # fmt: skip
    out: list[Question] = []
    for ability, items in questions.items():
        if not isinstance(items, list):
            raise DatasetError(f"expected a list of questions, found {_kind(items)}", file=questions_file,
                               sample=cid, field=ability)  # fmt: skip
        for k, item in enumerate(items):
            out.append(_question(item, ability, f"{ability}[{k}]", len(out), cid, questions_file, dia_of))
    return Conversation(
        sample_id=cid, speaker_a=SPEAKERS["user"], speaker_b=SPEAKERS["assistant"], sessions=tuple(sessions),
        questions=tuple(out), position=position,
    )  # fmt: skip


def _turn(message: Any, session: int, at: str, file: str, cid: str, dia_of: dict[int, str]) -> Turn:
    if not isinstance(message, dict):
        raise DatasetError(
            f"expected a message object, found {_kind(message)}", file=file, sample=cid, field=at
        )
    role = message.get("role")
    if role not in SPEAKERS:
        raise DatasetError(f"expected 'user' or 'assistant', found {_kind(role)}", file=file, sample=cid,
                           field=f"{at}.role")  # fmt: skip
    mid = message.get("id")
    if isinstance(mid, bool) or not isinstance(mid, int):
        raise DatasetError(f"expected an integer message id, found {_kind(mid)}", file=file, sample=cid,
                           field=f"{at}.id")  # fmt: skip
    if mid in dia_of:
        raise DatasetError(f"message id {mid} appears twice", file=file, sample=cid, field=f"{at}.id")
    content = message.get("content")
    if not isinstance(content, str):
        raise DatasetError(f"expected text, found {_kind(content)}", file=file, sample=cid,
                           field=f"{at}.content")  # fmt: skip
    dia_of[mid] = f"D{session}:{mid}"
    return Turn(speaker=SPEAKERS[role], dia_id=dia_of[mid], text=content)


def _question(
    item: Any, ability: str, at: str, index: int, cid: str, file: str, dia_of: Mapping[int, str]
) -> Question:
    if not isinstance(item, dict):
        raise DatasetError(
            f"expected a question object, found {_kind(item)}", file=file, sample=cid, field=at
        )
    text = item.get("question")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"expected the question's text, found {_kind(text)}", file=file, sample=cid,
                           field=f"{at}.question")  # fmt: skip
    rubric = item.get("rubric")
    if (
        not isinstance(rubric, list)
        or not rubric
        or not all(isinstance(r, str) and r.strip() for r in rubric)
    ):
        raise DatasetError(f"expected a non-empty list of requirements, found {_kind(rubric)}", file=file,
                           sample=cid, field=f"{at}.rubric")  # fmt: skip
    evidence = tuple(
        dia_of[m] for m in _message_ids(item.get("source_chat_ids"), file, cid, at) if m in dia_of
    )
    return Question(
        qid=f"{cid}:q{index}",
        sample_id=cid,
        index=index,
        question=text,
        answer=json.dumps(rubric, ensure_ascii=False),
        category=ABILITIES[ability],
        evidence=tuple(dict.fromkeys(evidence)),
        question_type=ability,
    )


def _message_ids(value: Any, file: str, cid: str, at: str) -> list[int]:
    """`source_chat_ids`: message ids, in a list, nested lists (one per mention) or an object of lists
    (contradiction resolution's first and second statement, ...); absent (abstention) is none. A value that
    is not an id (10M-6 holds "--") or an id that names no message is left out, as LOCOMO's evidence
    pointing nowhere is; only a value of another shape (an object where an id belongs) is an error."""
    out: list[int] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for part in v.values():
                walk(part)
        elif isinstance(v, list):
            for part in v:
                walk(part)
        elif isinstance(v, int) and not isinstance(v, bool):
            out.append(v)
        elif not isinstance(v, str) and v is not None:
            raise DatasetError(f"expected message ids (integers), found {_kind(v)}", file=file, sample=cid,
                               field=f"{at}.source_chat_ids")  # fmt: skip

    walk(value)
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"text {value[:40]!r}"
    return type(value).__name__


# ---- the suite's figures (per run, from the rows' exact rubric scores) ----


def _scores(rows: Sequence[Any]) -> list[tuple[str, str, float]]:
    return beam_rows(rows, ABILITY_OF)


def authors_overall(rows: Sequence[Any]) -> float | None:
    """The authors' average: each ability within each conversation, then over conversations; then over
    the abilities."""
    return authors_average(_scores(rows))[0]


def question_overall(rows: Sequence[Any]) -> float | None:
    """The mean over questions."""
    return per_question_average(_scores(rows))


def _interval(statistic: Any, end: int) -> Any:
    def bound(rows: Sequence[Any]) -> float | None:
        interval = conversation_bootstrap(_scores(rows), statistic)
        return None if interval is None else interval[end]

    return bound


def _ability(ability: str) -> Any:
    def figure(rows: Sequence[Any]) -> float | None:
        return authors_average(_scores(rows))[1].get(ability)

    figure.__doc__ = f"{ability}: the mean within each conversation, then over conversations (the authors')."
    return figure


_BEAM = frozenset({"beam"})
AGGREGATES = (
    Metric("beam_authors", "BEAM (authors': conv then ability)", "run", authors_overall, suites=_BEAM, table=True),
    Metric("beam_per_question", "BEAM (per question)", "run", question_overall, suites=_BEAM, table=True),
    Metric("beam_authors_ci95_low", "BEAM authors' 95% low (conversations)", "run",
           _interval(lambda s: authors_average(s)[0], 0), suites=_BEAM),
    Metric("beam_authors_ci95_high", "BEAM authors' 95% high (conversations)", "run",
           _interval(lambda s: authors_average(s)[0], 1), suites=_BEAM),
    Metric("beam_per_question_ci95_low", "BEAM per-question 95% low (conversations)", "run",
           _interval(per_question_average, 0), suites=_BEAM),
    Metric("beam_per_question_ci95_high", "BEAM per-question 95% high (conversations)", "run",
           _interval(per_question_average, 1), suites=_BEAM),
    *(Metric(f"beam_{a}_authors", f"BEAM {a} (authors')", "run", _ability(a), suites=_BEAM) for a in ABILITIES),
)  # fmt: skip
for _m in AGGREGATES:
    register_metric(_m)
