"""Mem0^g prompts: entity extraction, relation generation, conflict resolution and query entities.

Our own wording of the four graph steps the Mem0 paper describes. Every call is a function call with a
small schema; existing relations are shown with short integer ids ("0", "1", ...) that the caller maps
back, because models copy short ids reliably and mangle long ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import Field, WithJsonSchema, field_validator

from mem0bench.data.model import Turn
from mem0bench.llm.structured import ReplyModel, parse_reply, spec_from_model
from mem0bench.llm.types import Message, ReplyShapeError

T = TypeVar("T")

# ---- replies: the schema sent and the validation of what came back, one model each ------------------
# Validation is lenient where it always was: a missing or empty list is empty, items of the wrong shape
# are dropped (or, for ids, reported as invented) by the parsers below rather than failing the reply;
# defaults are for validation only (strict_schema sends every property as required).


def _list_or_empty(value: Any) -> Any:
    """[] for a missing, null or empty field; anything else as it came (the list check then rejects it)."""
    return value or []


def _text_or_empty(value: Any) -> str:
    """A string as it came; anything else as '' (an item the parsers then drop)."""
    return value if isinstance(value, str) else ""


def _objects_only(value: Any) -> Any:
    """A list's objects, other items dropped; [] for a missing or empty field."""
    value = _list_or_empty(value)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else value


def _names(value: Any) -> Any:
    """Names as texts: some models answer {"name": ...} objects instead of strings, read their name."""
    value = _list_or_empty(value)
    if not isinstance(value, list):
        return value
    return [_text_or_empty(item.get("name") if isinstance(item, dict) else item) for item in value]


class Entity(ReplyModel):
    name: str = Field(default="", description="The entity as named in the messages.")
    type: str = Field(default="", description="A one- or two-word lowercase type.")

    _text = field_validator("name", "type", mode="before")(_text_or_empty)


class Entities(ReplyModel):
    entities: list[Entity] = Field(default_factory=list)

    _objects = field_validator("entities", mode="before")(_objects_only)


class Relation(ReplyModel):
    source: str = ""
    relation: str = Field(default="", description="A short snake_case verb phrase.")
    destination: str = ""

    _text = field_validator("source", "relation", "destination", mode="before")(_text_or_empty)


class Relations(ReplyModel):
    relations: list[Relation] = Field(default_factory=list)

    _objects = field_validator("relations", mode="before")(_objects_only)


# Any item is accepted so that an id the model invented ("x", 7 of 3 shown) is reported, not fatal; the
# schema asks for integers.
_RelationId = Annotated[Any, WithJsonSchema({"type": "integer"})]


class Obsolete(ReplyModel):
    obsolete: list[_RelationId] = Field(
        default_factory=list, description="Ids of existing relations that are no longer true; empty if none."
    )

    _list = field_validator("obsolete", mode="before")(_list_or_empty)


class Contradicted(ReplyModel):
    contradicted: list[_RelationId] = Field(
        default_factory=list,
        description="Ids of earlier relations the new messages say were wrong or changed; empty if none.",
    )

    _list = field_validator("contradicted", mode="before")(_list_or_empty)


class QueryEntities(ReplyModel):
    entities: list[str] = Field(default_factory=list)

    _read_names = field_validator("entities", mode="before")(_names)


ENTITIES_SPEC = spec_from_model(
    "record_entities", "Record the entities mentioned in the new messages.", Entities, mode=None
)
RELATIONS_SPEC = spec_from_model(
    "record_relations",
    "Record the relations that the new messages state between the given entities.",
    Relations,
    mode=None,
)
OBSOLETE_SPEC = spec_from_model(
    "mark_obsolete",
    "List the existing relations that the new relation makes no longer true.",
    Obsolete,
    mode=None,
)
RECURRENCE_SPEC = spec_from_model(
    "mark_contradicted",
    "List the earlier relations that the new messages say were wrong or have changed.",
    Contradicted,
    mode=None,
)
QUERY_ENTITIES_SPEC = spec_from_model(
    "record_query_entities", "Record the entities a question is about.", QueryEntities, mode=None
)

# ---- prompts ---------------------------------------------------------------------------------------

_ENTITIES_SYSTEM = """You build a knowledge graph of {owner} from a conversation between {user} and {other}.

List the entities that the NEW MESSAGES mention: people (by name), places, organisations, pets, \
objects, activities, events, works (books, songs, paintings), topics, and dates or periods that \
something happened in. Give each a short lowercase type such as person, place, organisation, pet, \
activity, event, object, work, topic or date.

Rules:
- A speaker is always named ("{user}", "{other}"), never "I", "me", "you", "user" or "assistant". \
Include a speaker when the messages say something about them.
- Keep names as written; write common things in a short canonical form ("pottery class", not \
"the pottery class I signed up for").
- The messages were sent on {date}. A relative time ("yesterday", "last week") becomes the absolute \
date or period it refers to, e.g. "7 May 2023" or "the week before 8 May 2023".
- Skip greetings, filler and things with no lasting meaning. An empty list is fine.

Call record_entities once."""

_RELATIONS_SYSTEM = """You add relations to a knowledge graph of {owner}, built from a conversation \
between {user} and {other}.

Given the NEW MESSAGES and the ENTITIES found in them, write the facts the messages state as \
relations (source, relation, destination):
- source and destination are names from the ENTITIES list, spelled exactly as there.
- relation is a short snake_case verb phrase in the present or past tense, e.g. lives_in, works_as, \
adopted, attended, plans_to_visit, is_friend_of, painted.
- The messages were sent on {date}. When a fact happened at a particular time, keep that time: \
relate the event to its date entity (e.g. (Ana, attended, support group) and (support group, \
happened_on, 7 May 2023)) or make the date the destination (e.g. (Tom, ran_charity_race_on, \
20 May 2023)). Never use today's date.
- Speakers are named ("{user}", "{other}"), never "I", "user" or "assistant".
- Only what the messages state or clearly imply; no guesses, no duplicates. An empty list is fine.

Call record_relations once."""

_OBSOLETE_SYSTEM = """You keep a knowledge graph true over time. A NEW RELATION was learned on \
{date}. The EXISTING RELATIONS below share an entity with it; each has an id and the date it was \
learned.

List the ids of existing relations that the new relation makes no longer true, e.g. a new home \
replaces the old one (lives_in), a new job the old job, a break-up ends a relationship, a finished \
plan replaces the plan. A relation that can hold together with the new one (another hobby, another \
friend, another trip) stays. Relations about different things stay. When unsure, keep it.

Only ids from the list. Call mark_obsolete once (an empty list when nothing is obsolete)."""

_RECURRENCE_SYSTEM = """You keep a knowledge graph true over time. A NEW RELATION, learned on {date} from \
the NEW MESSAGES, gives a thing another time than EARLIER RELATIONS of the same kind did (the same \
source and relation, another date or period). Either the thing happened again or at another time as \
well (a race run every year, a second visit, a weekly class), and both relations stay true; or the new \
messages say the earlier time was wrong or has changed (postponed, moved, corrected, cancelled), and \
the earlier relation is no longer true.

List the ids of the earlier relations that the NEW MESSAGES contradict. When the messages do not say \
the earlier time was wrong or changed, keep it (an empty list).

Only ids from the list. Call mark_contradicted once."""

_QUERY_SYSTEM = """You find the entities a question about a conversation between {speakers} is about: \
people (by name), places, organisations, pets, objects, activities, events, works, topics and dates. \
Include entities that are named and ones clearly implied (e.g. "her dog" -> the speaker's dog; \
"Where did Jon go for his birthday" -> Jon, birthday). Write each as a short name. Call \
record_query_entities once."""


def _owner(user: str, other: str, shared: bool) -> str:
    return f"{user} and {other}" if shared else user


def _render_pair(pair: Sequence[Turn], date: str) -> str:
    return "\n".join(f"[{date}] {t.speaker}: {t.text}" for t in pair)


def build_entity_messages(
    *, user: str, other: str, pair: Sequence[Turn], session_date: str, shared: bool = False
) -> list[Message]:
    """The entity extractor for one message pair, sent on `session_date`."""
    system = _ENTITIES_SYSTEM.format(
        owner=_owner(user, other, shared), user=user, other=other, date=session_date
    )
    body = f"NEW MESSAGES (sent on {session_date}):\n{_render_pair(pair, session_date)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def build_relations_messages(
    *,
    user: str,
    other: str,
    pair: Sequence[Turn],
    session_date: str,
    entities: Sequence[tuple[str, str]],
    shared: bool = False,
) -> list[Message]:
    """The relations generator: triplets among `entities` ((name, type) pairs) stated in the pair."""
    system = _RELATIONS_SYSTEM.format(
        owner=_owner(user, other, shared), user=user, other=other, date=session_date
    )
    listing = "\n".join(f"- {name} ({etype})" for name, etype in entities)
    body = (
        f"ENTITIES:\n{listing}\n\nNEW MESSAGES (sent on {session_date}):\n{_render_pair(pair, session_date)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def _relation_listing(relations: Sequence[tuple[int, tuple[str, str, str], str]]) -> str:
    """Relations shown with short ids, as a JSON list."""
    return json.dumps(
        [
            {"id": sid, "source": s, "relation": r, "destination": d, "learned_on": date}
            for sid, (s, r, d), date in relations
        ],
        ensure_ascii=False,
        indent=1,
    )


def _relation_json(triplet: tuple[str, str, str]) -> str:
    s, r, d = triplet
    return json.dumps({"source": s, "relation": r, "destination": d}, ensure_ascii=False)


def build_obsolete_messages(
    *,
    new: tuple[str, str, str],
    learned_on: str,
    existing: Sequence[tuple[int, tuple[str, str, str], str]],
) -> list[Message]:
    """The conflict detector + update resolver. `existing` holds (short id, (s, r, d), learned on)."""
    body = (
        f"EXISTING RELATIONS:\n{_relation_listing(existing)}\n\nNEW RELATION (learned on {learned_on}):\n"
        + _relation_json(new)
    )
    return [
        {"role": "system", "content": _OBSOLETE_SYSTEM.format(date=learned_on)},
        {"role": "user", "content": body},
    ]


def build_recurrence_messages(
    *,
    new: tuple[str, str, str],
    learned_on: str,
    earlier: Sequence[tuple[int, tuple[str, str, str], str]],
    pair: Sequence[Turn],
) -> list[Message]:
    """Recurrence or contradiction: `earlier` holds (short id, (s, r, d), learned on) relations with the new
    relation's source and relation and another time, which the conflict resolver named obsolete; the
    new messages decide (the resolver saw triplets only)."""
    body = (
        f"EARLIER RELATIONS:\n{_relation_listing(earlier)}\n\nNEW RELATION (learned on {learned_on}):\n"
        + _relation_json(new)
        + f"\n\nNEW MESSAGES (sent on {learned_on}):\n{_render_pair(pair, learned_on)}"
    )
    return [
        {"role": "system", "content": _RECURRENCE_SYSTEM.format(date=learned_on)},
        {"role": "user", "content": body},
    ]


def build_query_entity_messages(*, question: str, speakers: Sequence[str]) -> list[Message]:
    """The query entity extractor used at retrieval time."""
    system = _QUERY_SYSTEM.format(speakers=" and ".join(speakers))
    return [{"role": "system", "content": system}, {"role": "user", "content": f"Question: {question}"}]


# ---- parsing ---------------------------------------------------------------------------------------


def clean_name(value: Any) -> str:
    """A name on one line without surrounding quotes or spaces ('' for non-strings)."""
    if not isinstance(value, str):
        return ""
    return " ".join(value.split()).strip().strip("\"'`").strip()


def snake_relation(value: Any) -> str:
    """A relation in lowercase snake_case ('Lives In' -> 'lives_in')."""
    if not isinstance(value, str):
        return ""
    return re.sub(r"[^\w]+", "_", value.strip().lower()).strip("_")


def parse_entities(data: Any) -> list[tuple[str, str]]:
    """(name, type) pairs, deduplicated case-insensitively, in order; malformed items dropped."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for item in parse_reply(Entities, data).entities:
        name = clean_name(item.name)
        etype = snake_relation(item.type) or "entity"
        if name and name.lower() not in seen:
            seen.add(name.lower())
            out.append((name, etype))
    return out


def parse_relations(data: Any) -> list[tuple[str, str, str]]:
    """(source, relation, destination) triplets with snake_case relations, deduplicated, in order."""
    seen: set[tuple[str, str, str]] = set()
    out: list[tuple[str, str, str]] = []
    for item in parse_reply(Relations, data).relations:
        triplet = (clean_name(item.source), snake_relation(item.relation), clean_name(item.destination))
        key = (triplet[0].lower(), triplet[1], triplet[2].lower())
        if all(triplet) and key not in seen:
            seen.add(key)
            out.append(triplet)
    return out


def parse_obsolete(data: Any, shown: int) -> tuple[list[int], list[Any]]:
    """(valid short ids in 0..shown-1, deduplicated, in order; ids the model invented)."""
    return _short_ids(parse_reply(Obsolete, data).obsolete, shown)


def parse_contradicted(data: Any, shown: int) -> tuple[list[int], list[Any]]:
    """The recurrence check's reply as `parse_obsolete` reads the resolver's."""
    return _short_ids(parse_reply(Contradicted, data).contradicted, shown)


def _short_ids(raws: Sequence[Any], shown: int) -> tuple[list[int], list[Any]]:
    valid: list[int] = []
    invented: list[Any] = []
    for raw in raws:
        try:
            sid = int(str(raw).strip().strip("\"'[]"))
        except ValueError:
            invented.append(raw)
            continue
        if 0 <= sid < shown:
            if sid not in valid:
                valid.append(sid)
        else:
            invented.append(raw)
    return valid, invented


def parse_query_entities(data: Any) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for raw in parse_reply(QueryEntities, data).entities:
        name = clean_name(raw)
        if name and name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return out


def parse_or_none(parse: Callable[[Any], T], data: Any) -> T | None:
    """parse(data), or None when there is no reply or it has a shape the parser cannot read."""
    if data is None:
        return None
    try:
        return parse(data)
    except ReplyShapeError:
        return None
