"""Locomo-Plus (xjtuleeyf/Locomo-Plus): LOCOMO's sixth, "cognitive" category, 401 items.

An item is a short cue dialogue between A and B, a trigger message and a time gap ("two weeks later").
Stitching follows the reference (`data/build_conv.py`): A and B become the host conversation's speaker_a and
speaker_b; the trigger is sent 7 days after the host's last session and the cue `time_gap` before it (a week
7 days, a month 30, a year 365; a gap the rule cannot read, such as "several months later", counts as 0
days, as in the reference); the cue becomes a session of its own, placed among the host's sessions by time
(after any session at the same time). The host conversation is chosen with a seed (`dataset.seed`), where the
reference called an unseeded `random.choice`.

Departures, both documented in docs/suites.md: the trigger is asked as the question rather than ingested as
a last session (every system is asked after ingestion, as on LOCOMO); and besides the reference's `faithful`
mode (one stitched copy of a host per item), `grouped` stitches every item drawn for a host into as few
copies as their cue times allow (two cues at the same time never share a copy), so the other cues of a copy
are distractors the reference did not have.

There is no reference answer: the judge grades the reply against the cue (CORRECT 1, PARTIAL 0.5, WRONG
0), and the lexical scores do not apply.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from mem0bench.data.download import resolve_dataset_path
from mem0bench.data.errors import DatasetError
from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Category, Conversation, Dataset, Question, Session, Turn
from mem0bench.suites.base import SUITES, DatasetRequest, Rubric, SourceFile, check_counts, register_suite
from mem0bench.suites.files import read_json, resolve_source
from mem0bench.suites.locomo import LOCOMO_SOURCE

__all__ = ["COGNITIVE", "MODES", "format_locomo_date", "gap_days", "load_locomo_plus", "stitch"]

COGNITIVE = Category("locomo_plus", 6, "cognitive")
"""Locomo-Plus's one category (its "sixth LOCOMO category")."""
MODES = ("faithful", "grouped")
QUERY_AFTER = timedelta(days=7)
"""The trigger comes this long after the host's last session (the reference's rule)."""

_NUMBERS = {
    w: n
    for n, w in enumerate(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"], 1
    )
}
_GAP = re.compile(r"\b(\d+|a|an|" + "|".join(_NUMBERS) + r")\b\s*(week|month|year)s?\b")
_UNIT_DAYS = {"week": 7, "month": 30, "year": 365}
_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

_SOURCE = SourceFile(
    "locomo_plus.json",
    "https://raw.githubusercontent.com/xjtuleeyf/Locomo-Plus/main/data/locomo_plus.json",
    "af2fc6e5e0e88735e28d8dd1ef474b718861a73beb21779809e3b9e1a4fe3d23",
    "none stated: the repository has no LICENSE file and its README says only 'See the repository for "
    "license information'; its host conversations are LOCOMO's (CC BY-NC 4.0)",
)
_RUBRIC = Rubric(
    "There is no gold answer. The question is the newest message of a long conversation, and the cue is an "
    "exchange from weeks or months earlier that a good reply should bring to mind. Count the reply CORRECT "
    "when it clearly draws on the cue: it mentions what the cue said, or acts on it, openly or implicitly. "
    "Count it PARTIAL when it seems connected to the cue but only vaguely, generically or in part. Count it "
    "WRONG when it shows no link to the cue.",
    reference="Cue (the earlier exchange)",
)


@dataclass(frozen=True)
class Item:
    """One Locomo-Plus entry, its cue and trigger still in A/B form."""

    position: int
    cue: tuple[tuple[str, str], ...]
    trigger: tuple[tuple[str, str], ...]
    time_gap: str


def gap_days(time_gap: str) -> int:
    """Days back from the trigger to the cue, by the reference's rule ('two weeks later' -> 14; 'a month
    later' -> 30; 'several months later' -> 0, the reference's reading of what it cannot count)."""
    m = _GAP.search(time_gap.lower())
    if m is None:
        return 0
    word, unit = m.groups()
    count = int(word) if word.isdigit() else 1 if word in ("a", "an") else _NUMBERS[word]
    return count * _UNIT_DAYS[unit]


def format_locomo_date(when: datetime) -> str:
    """A date as LOCOMO's files write them: '1:56 pm on 8 May, 2023'."""
    hour = when.hour % 12 or 12
    half = "am" if when.hour < 12 else "pm"
    return f"{hour}:{when.minute:02d} {half} on {when.day} {_MONTH_NAMES[when.month - 1]}, {when.year}"


def _dialogue(text: Any, field: str, file: str, position: int) -> tuple[tuple[str, str], ...]:
    """'A: ...' / 'B: ...' lines as (A or B, text); other lines are ignored, as in the reference. A literal
    backslash-n also ends a line: 31 of the 401 cues are written that way, and the reference glued their B
    line into A's turn."""
    if not isinstance(text, str):
        raise DatasetError("expected a string", file=file, sample=position, field=field)
    lines = text.replace("\\n", "\n").split("\n")
    turns = tuple((line[0], line[2:].strip()) for line in map(str.strip, lines) if line[:2] in ("A:", "B:"))
    if not turns:
        raise DatasetError("no 'A:' or 'B:' line", file=file, sample=position, field=field)
    return turns


def _named(turns: tuple[tuple[str, str], ...], host: Conversation) -> list[tuple[str, str]]:
    return [(host.speaker_a if who == "A" else host.speaker_b, text) for who, text in turns]


def stitch(host: Conversation, items: list[Item], sample_id: str) -> Conversation:
    """`host` with one cue session per item, placed by time; one question (the trigger) per item."""
    ordered = sorted(host.sessions, key=lambda s: s.date_time)  # stable: same-time sessions keep their order
    query_time = ordered[-1].date_time + QUERY_AFTER
    asked_on = format_locomo_date(query_time)
    next_index = max(s.index for s in host.sessions) + 1
    sessions = list(ordered)
    questions = []
    for k, item in enumerate(items):
        cue_time = query_time - timedelta(days=gap_days(item.time_gap))
        index = next_index + k
        cue = _named(item.cue, host)
        turns = tuple(
            Turn(speaker=who, dia_id=f"D{index}:{j}", text=text) for j, (who, text) in enumerate(cue, 1)
        )
        at = sum(1 for s in sessions if s.date_time <= cue_time)  # after every session at or before its time
        sessions.insert(
            at, Session(index=index, date_time=cue_time, date_text=format_locomo_date(cue_time), turns=turns)
        )
        questions.append(
            Question(
                qid=f"{sample_id}:q{k}", sample_id=sample_id, index=k,
                question="\n".join(f"{who}: {text}" for who, text in _named(item.trigger, host)),
                answer="\n".join(f"{who}: {text}" for who, text in cue),
                category=COGNITIVE, evidence=tuple(t.dia_id for t in turns), asked_on=asked_on,
            )
        )  # fmt: skip
    return replace(host, sample_id=sample_id, sessions=tuple(sessions), questions=tuple(questions))


def _items(data: Any, file: str) -> list[Item]:
    if not isinstance(data, list):
        raise DatasetError("expected a JSON list of items at the top level", file=file)
    items = []
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise DatasetError("expected an object", file=file, sample=i)
        gap = raw.get("time_gap")
        if not isinstance(gap, str):
            raise DatasetError("missing field 'time_gap' (a string)", file=file, sample=i, field="time_gap")
        items.append(
            Item(i, _dialogue(raw.get("cue_dialogue"), "cue_dialogue", file, i),
                 _dialogue(raw.get("trigger_query"), "trigger_query", file, i), gap)
        )  # fmt: skip
    return items


def host_choice(position: int, n_hosts: int, seed: int) -> int:
    """The host conversation of item `position`: seeded per item, so a selection never moves the others."""
    return random.Random(f"locomo_plus:{seed}:{position}").randrange(n_hosts)


def grouped_copies(items: list[Item], query_time: datetime) -> list[list[Item]]:
    """Items of one host in as few copies as possible, no two cues of a copy at the same time (first fit, in
    item order)."""
    copies: list[tuple[set[datetime], list[Item]]] = []
    for item in items:
        cue_time = query_time - timedelta(days=gap_days(item.time_gap))
        spot = next((c for c in copies if cue_time not in c[0]), None)
        if spot is None:
            spot = (set(), [])
            copies.append(spot)
        spot[0].add(cue_time)
        spot[1].append(item)
    return [members for _, members in copies]


@register_suite(
    name="locomo_plus", title="Locomo-Plus", categories=(COGNITIVE,), scored=(COGNITIVE,),
    expected_counts={COGNITIVE: 401}, grading="graded", rubrics={COGNITIVE: _RUBRIC},
    lexical=False, sources=(_SOURCE, LOCOMO_SOURCE),
    answer_intro=(
        "The question below is not a question: it is the newest message of the conversation, sent on "
        "{asked_on}. Reply to it as the other person in the conversation would."
    ),
    answer_style=(
        "6. Reply in one or two sentences, as the other person, and bring in anything said earlier in the "
        "conversation that bears on this message."
    ),
    notes="faithful: one stitched copy of a LOCOMO conversation per item (401 ingestions of ~600 turns, "
    "~40x LOCOMO's ingestion); grouped (a departure): many cues per copy",
)  # fmt: skip
def load_locomo_plus(request: DatasetRequest) -> Dataset:
    if request.mode not in MODES:
        raise DatasetError(f"dataset.mode must be one of {', '.join(MODES)}, not {request.mode!r}")
    path = resolve_source(request.path, request.data_dir, SUITES["locomo_plus"].sources[0])
    data, sha256 = read_json(path)
    items = _items(data, str(path))
    hosts = load_dataset(
        resolve_dataset_path(request.host_path, request.data_dir), fold_captions=request.fold_captions
    ).conversations
    if not hosts:
        raise DatasetError("the host LOCOMO file holds no conversation", file=str(request.host_path))
    drawn: dict[int, list[Item]] = {}
    for item in items:
        drawn.setdefault(host_choice(item.position, len(hosts), request.seed), []).append(item)
    conversations = []
    if request.mode == "faithful":
        for item in items:
            host = hosts[host_choice(item.position, len(hosts), request.seed)]
            conversations.append(stitch(host, [item], f"plus-{item.position}"))
    else:
        for h in sorted(drawn):
            host = hosts[h]
            query_time = max(s.date_time for s in host.sessions) + QUERY_AFTER
            for c, members in enumerate(grouped_copies(drawn[h], query_time)):
                conversations.append(stitch(host, members, f"{host.sample_id}+plus{c}"))
    conversations = [replace(c, position=i) for i, c in enumerate(conversations)]
    if request.conversations is not None:
        known = {c.sample_id for c in conversations}
        unknown = [c for c in request.conversations if c not in known]
        if unknown:
            raise DatasetError(f"unknown conversation id(s) {', '.join(unknown[:5])}", file=str(path))
        conversations = [c for c in conversations if c.sample_id in set(request.conversations)]
    dataset = Dataset(path=str(path), sha256=sha256, conversations=tuple(conversations), suite="locomo_plus")
    check_counts("locomo_plus", dataset, whole_file=request.conversations is None)
    return dataset
