"""Load locomo10.json into the typed model, validating as it goes.

Every problem becomes a :class:`DatasetError` that names the file, the sample and the field, in one line.
Only what the harness uses is required: per sample ``sample_id``, ``conversation`` and ``qa``; the
annotation fields (``event_summary``, ``observation``, ``session_summary``) and the turn fields
``img_url``, ``query`` and ``re-download`` are ignored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sys
from collections.abc import Sequence
from datetime import datetime
from os import PathLike
from pathlib import Path
from typing import Any

from mem0bench.data.errors import DatasetError, check_path_id, check_values, parse_json
from mem0bench.data.model import Category, Conversation, Dataset, Question, Session, Turn

__all__ = ["LOCOMO_CATEGORIES", "load_dataset", "parse_session_date", "fold_caption"]

# The numbers locomo10.json writes and their official names (LOCOMO's own evaluation code). This reader needs
# them to read the format; the LOCOMO suite (suites/locomo.py) names and registers them.
LOCOMO_CATEGORIES: dict[int, Category] = {
    n: Category("locomo", n, name)
    for n, name in enumerate(("multi_hop", "temporal", "open_domain", "single_hop", "adversarial"), 1)
}
_ADVERSARIAL = 5

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}


def parse_session_date(text: str) -> datetime | None:
    """Parse LOCOMO's session date, e.g. ``"1:56 pm on 8 May, 2023"``, into a naive datetime.

    Locale-independent (no ``strptime``). Returns None when the text is not in that form or names an
    impossible date or time.
    """
    m = _DATE.fullmatch(text)
    if m is None:
        return None
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        return None
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), h, int(minute))
    except ValueError:
        return None


def fold_caption(text: str, caption: str) -> str:
    """The turn's text with the caption of the image the speaker shared appended in brackets."""
    note = f"[shared an image: {caption.strip()}]"
    return f"{text} {note}" if text else note


def load_dataset(
    path: str | PathLike[str],
    *,
    conversations: Sequence[str] | None = None,
    fold_captions: bool = True,
) -> Dataset:
    """Read and validate a LOCOMO file (the released ``locomo10.json`` or one of the same shape).

    Args:
        path: the JSON file.
        conversations: sample ids to keep, e.g. ``["conv-26"]``; kept in file order. None keeps all.
            An id the file does not hold is an error that lists the valid ones.
        fold_captions: append each turn's ``blip_caption`` (the caption of a shared image) to its text,
            so that systems reading only text see it. The caption is kept in ``Turn.caption`` either way.

    Returns:
        The dataset, with ``sha256`` the hash of the file's bytes.

    Raises:
        DatasetError: the file cannot be read, is not valid JSON (with line and column), or a sample
            does not have the expected shape (naming the sample and the field).
    """
    file = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise DatasetError("file not found", file=file) from None
    except OSError as e:
        raise DatasetError(f"cannot read the file: {e.strerror or e}", file=file) from None
    sha256 = hashlib.sha256(raw).hexdigest()
    data = parse_json(raw, file=file)
    del raw  # a big file's bytes need not stay beside its parsed tree and the dataset built from it

    if not isinstance(data, list):
        raise DatasetError(
            f"expected a JSON list of samples at the top level, found {_kind(data)}", file=file
        )

    # First pass: the sample ids, so that a selection can be checked before any real work.
    ids: list[str] = []
    seen: dict[str, int] = {}
    folded: dict[str, int] = {}
    for i, sample in enumerate(data):
        if not isinstance(sample, dict):
            raise DatasetError(f"expected an object, found {_kind(sample)}", file=file, sample=i)
        sid = check_path_id(
            _req_str(sample, "sample_id", "sample_id", file, i), file=file, sample=i, field="sample_id"
        )
        check_values(sample, file=file, sample=sid)  # a lone surrogate, a NaN: refused before any work
        if sid in seen:
            raise DatasetError(
                f"duplicate sample_id (also sample #{seen[sid]})", file=file, sample=sid, field="sample_id"
            )
        if sid.casefold() in folded:  # one folder on a case-insensitive file system: memories would mix
            raise DatasetError(
                f"sample_id differs only in case from sample #{folded[sid.casefold()]}'s",
                file=file,
                sample=sid,
                field="sample_id",
            )
        seen[sid] = folded[sid.casefold()] = i
        ids.append(sid)

    if conversations is None:
        chosen: Sequence[int] = range(len(data))
    else:
        if isinstance(conversations, str):
            conversations = [conversations]
        wanted = set(conversations)
        unknown = [c for c in dict.fromkeys(conversations) if c not in seen]
        if unknown:
            raise DatasetError(
                f"unknown conversation id(s) {', '.join(map(str, unknown))}; valid: {', '.join(ids)}",
                file=file,
            )
        chosen = [i for i, sid in enumerate(ids) if sid in wanted]

    convs = tuple(
        dataclasses.replace(_conversation(data[i], ids[i], file, fold_captions), position=i) for i in chosen
    )
    return Dataset(path=file, sha256=sha256, conversations=convs)


# ---------------------------------------------------------------- one sample


def _conversation(sample: dict[str, Any], sid: str, file: str, fold: bool) -> Conversation:
    conv = _req(sample, "conversation", "conversation", file, sid)
    if not isinstance(conv, dict):
        raise DatasetError(
            f"expected an object, found {_kind(conv)}", file=file, sample=sid, field="conversation"
        )
    # Speaker names become folders (a store per speaker) and user ids: the same rule as sample ids.
    speaker_a, speaker_b = (
        check_path_id(
            _req_str(conv, key, f"conversation.{key}", file, sid),
            file=file,
            sample=sid,
            field=f"conversation.{key}",
        )
        for key in ("speaker_a", "speaker_b")
    )

    numbers: list[int] = []
    for key, value in conv.items():
        m = _SESSION_KEY.fullmatch(key)
        if m is None:
            continue
        if not isinstance(value, list):
            raise DatasetError(
                f"expected a list of turns, found {_kind(value)}",
                file=file,
                sample=sid,
                field=f"conversation.{key}",
            )
        numbers.append(int(m.group(1)))
    sessions = tuple(_session(conv, n, sid, file, fold) for n in sorted(numbers))

    qa = _req(sample, "qa", "qa", file, sid)
    if not isinstance(qa, list):
        raise DatasetError(f"expected a list, found {_kind(qa)}", file=file, sample=sid, field="qa")
    questions = tuple(_question(q, i, sid, file) for i, q in enumerate(qa))
    return Conversation(
        sample_id=sid, speaker_a=speaker_a, speaker_b=speaker_b, sessions=sessions, questions=questions
    )


def _session(conv: dict[str, Any], n: int, sid: str, file: str, fold: bool) -> Session:
    date_key = f"session_{n}_date_time"
    date_text = _req_str(conv, date_key, f"conversation.{date_key}", file, sid)
    when = parse_session_date(date_text)
    if when is None:
        raise DatasetError(
            f"cannot parse the date {date_text!r} (expected e.g. '1:56 pm on 8 May, 2023')",
            file=file,
            sample=sid,
            field=f"conversation.{date_key}",
        )
    key = f"session_{n}"
    turns = tuple(_turn(t, f"conversation.{key}[{j}]", sid, file, fold) for j, t in enumerate(conv[key]))
    return Session(index=n, date_time=when, date_text=date_text, turns=turns)


def _turn(t: Any, where: str, sid: str, file: str, fold: bool) -> Turn:
    if not isinstance(t, dict):
        raise DatasetError(f"expected an object, found {_kind(t)}", file=file, sample=sid, field=where)
    # Interned: the JSON parser makes a new string of each turn's speaker; two names serve every turn.
    speaker = sys.intern(_req_str(t, "speaker", f"{where}.speaker", file, sid))
    dia_id = _req_str(t, "dia_id", f"{where}.dia_id", file, sid)
    text = _req_str(t, "text", f"{where}.text", file, sid)
    caption = t.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise DatasetError(
            f"expected a string, found {_kind(caption)}", file=file, sample=sid, field=f"{where}.blip_caption"
        )
    if caption is not None and not caption.strip():
        caption = None
    if caption is not None and fold:
        text = fold_caption(text, caption)
    return Turn(speaker=speaker, dia_id=dia_id, text=text, caption=caption)


def _question(q: Any, i: int, sid: str, file: str) -> Question:
    where = f"qa[{i}]"
    if not isinstance(q, dict):
        raise DatasetError(f"expected an object, found {_kind(q)}", file=file, sample=sid, field=where)
    question = _req_str(q, "question", f"{where}.question", file, sid)

    raw_cat = _req(q, "category", f"{where}.category", file, sid)
    # Only LOCOMO's own categories: another suite's number (6, 11..17) would load and then be dropped
    # from scoring without a word.
    if isinstance(raw_cat, bool) or not isinstance(raw_cat, int) or raw_cat not in LOCOMO_CATEGORIES:
        raise DatasetError(
            f"unknown category {raw_cat!r} (expected an integer 1..5)",
            file=file,
            sample=sid,
            field=f"{where}.category",
        )
    category = LOCOMO_CATEGORIES[raw_cat]

    if category.id == _ADVERSARIAL:
        answer = _opt_text(q, "answer", f"{where}.answer", file, sid) or ""
        adversarial = _opt_text(q, "adversarial_answer", f"{where}.adversarial_answer", file, sid)
    else:
        gold = _opt_text(q, "answer", f"{where}.answer", file, sid)
        if gold is None:
            raise DatasetError(
                f"missing field 'answer' (required for category {int(category)}, {category.label})",
                file=file,
                sample=sid,
                field=f"{where}.answer",
            )
        answer = gold
        adversarial = None

    raw_ev = q.get("evidence", [])
    if raw_ev is None:
        raw_ev = []
    if not isinstance(raw_ev, list) or not all(isinstance(e, str) for e in raw_ev):
        raise DatasetError(
            "expected a list of strings (dia_ids)", file=file, sample=sid, field=f"{where}.evidence"
        )
    return Question(
        qid=f"{sid}:q{i}",
        sample_id=sid,
        index=i,
        question=question,
        answer=answer,
        category=category,
        evidence=tuple(raw_ev),
        adversarial_answer=adversarial,
    )


# ---------------------------------------------------------------- small checks


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    if type(value) in names:
        return names[type(value)]
    return "a number" if isinstance(value, (int, float)) else type(value).__name__


def _req(obj: dict[str, Any], key: str, field: str, file: str, sample: str | int) -> Any:
    if key not in obj:
        raise DatasetError(f"missing field {key!r}", file=file, sample=sample, field=field)
    return obj[key]


def _req_str(obj: dict[str, Any], key: str, field: str, file: str, sample: str | int) -> str:
    value = _req(obj, key, field, file, sample)
    if not isinstance(value, str):
        raise DatasetError(f"expected a string, found {_kind(value)}", file=file, sample=sample, field=field)
    return value


def _opt_text(obj: dict[str, Any], key: str, field: str, file: str, sample: str) -> str | None:
    """An optional answer-like field: strings kept, numbers turned into text (2022 -> '2022')."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(
        f"expected a string or a number, found {_kind(value)}", file=file, sample=sample, field=field
    )
