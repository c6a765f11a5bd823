"""Node resolution for Mem0^g's ingestion: which existing node an extracted entity name maps to.

Reusing a node must never change a fact. The rules, in order:

* **Same key, same node.** Names whose `entity_key` is equal (they differ only in case, spacing,
  punctuation or an ordinal suffix: "Caroline" / "caroline", "20th May, 2023" / "20 May 2023") map to the
  oldest such node, whatever their similarity, found through the store's exact-key index
  (`GraphStore.nodes_with_key`), never through a top-k similarity search, which a few dozen similar dates
  can crowd the right node out of. A literal name only takes a literal node and a plain name a plain one.
* **Literals merge on equal key only.** Dates, times, numbers, quantities, and date-like phrases without
  a digit ("early May", "last summer") never merge by similarity: with dense embeddings "7 May 2023" and
  "20 May 2023" are ~0.85 similar, "May 2023" and "June 2023" ~0.93, "early May" and "late May" higher.
  An entity is literal when its extracted type says so, its name holds a digit, or (unless it is typed as a
  person, place or the like) its name is made of time words only.
* **Other names** reuse the most similar plain node at cosine >= ``reuse_threshold`` (default 0.9, the
  value mem0's graph code used at add time), a threshold of its own, apart from the retrieval threshold.
"""

from __future__ import annotations

import re

import numpy as np

from mem0bench.memory.graph.base import GraphStore, Node, entity_key, normalised_name

__all__ = ["LITERAL_TYPES", "is_literal", "is_time_entity", "normalised_name", "resolve_node"]

TIME_TYPES = frozenset(
    [
        "date",
        "time",
        "datetime",
        "period",
        "time_period",
        "timeframe",
        "time_frame",
        "season",
        "year",
        "month",
        "week",
        "weekend",
        "day",
        "weekday",
        "decade",
        "century",
    ]
)
"""Entity types that name a point or stretch of time."""

LITERAL_TYPES = TIME_TYPES | frozenset(
    [
        "number",
        "quantity",
        "amount",
        "count",
        "duration",
        "age",
        "money",
        "price",
        "cost",
        "percentage",
        "measurement",
        "distance",
        "weight",
        "height",
    ]
)
"""Entity types whose value is the text itself (compared by key, never by similarity)."""

_NAMED_TYPES = frozenset(
    ["person", "people", "name", "pet", "animal", "character", "organisation", "organization", "company",
     "place", "location", "city", "country", "band", "brand"]
)  # fmt: skip
"""Types under which a time word is a name ("April", a person; "Summer", a pet)."""

_TIME_WORDS = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "weekday",
        "weekdays",
        "weekend",
        "weekends",
        "spring",
        "summer",
        "autumn",
        "fall",
        "winter",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "decade",
        "decades",
        "morning",
        "afternoon",
        "evening",
        "night",
        "tonight",
        "today",
        "yesterday",
        "tomorrow",
        "christmas",
        "easter",
        "holidays",
    ]
)
"""Words that make a phrase name a time."""

_TIME_MODIFIERS = frozenset(
    [
        "early",
        "mid",
        "late",
        "last",
        "next",
        "this",
        "that",
        "the",
        "of",
        "past",
        "previous",
        "coming",
        "end",
        "beginning",
        "start",
        "middle",
        "a",
        "an",
        "few",
        "couple",
        "ago",
        "before",
        "after",
        "in",
        "on",
        "around",
        "during",
        "same",
        "following",
    ]
)
"""Words a time phrase may hold besides time words ("the end of last summer")."""

_CANDIDATES = 20
"""Existing nodes looked at per plain name in the similarity search (best first)."""

_WORD = re.compile(r"[a-z]+")


def is_time_phrase(name: str) -> bool:
    """True for a phrase made of time words and modifiers only, with at least one time word: 'early May',
    'last summer', 'the weekend before' (True); 'summer camp', 'the end' (False)."""
    words = _WORD.findall(normalised_name(name))
    return (
        bool(words)
        and all(w in _TIME_WORDS or w in _TIME_MODIFIERS for w in words)
        and any(w in _TIME_WORDS for w in words)
    )


def _type_key(type: str) -> str:
    return type.lower().replace("-", "_").replace(" ", "_")


def is_time_entity(name: str, type: str) -> bool:
    """A point or stretch of time: typed as one, or a time phrase not typed as a named thing."""
    key = _type_key(type)
    return key in TIME_TYPES or (key not in _NAMED_TYPES and is_time_phrase(name))


def is_literal(name: str, type: str) -> bool:
    """True for dates, times, date-like phrases, numbers and quantities: merged on equal key only."""
    return _type_key(type) in LITERAL_TYPES or any(ch.isdigit() for ch in name) or is_time_entity(name, type)


def resolve_node(
    store: GraphStore, name: str, type: str, vector: np.ndarray, reuse_threshold: float
) -> Node | None:
    """The existing node `name` (of extracted `type`, embedded as `vector`) maps to; None: a new node."""
    literal = is_literal(name, type)
    for node in store.nodes_with_key(entity_key(name)):
        if is_literal(node.name, node.type) == literal:
            return node
    if literal:
        return None
    for node, _ in store.find_similar_nodes(vector, reuse_threshold, _CANDIDATES):
        if not is_literal(node.name, node.type):
            return node
    return None
