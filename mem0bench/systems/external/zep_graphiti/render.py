"""The answer context of one question: graphiti's facts with their validity periods, then entity summaries.

The shape is the Mem0 paper's harness's Zep context (`evaluation/src/zep/search.py`: each fact with its
"valid from - to" range, "present" while not invalidated, then "ENTITY_NAME: entity summary" lines); our
dates go in square brackets, day precision, as every other system's notes carry them. The facts header
carries the meaning of Zep's own template: the dates are the event's, not the mention's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from mem0bench.common.text import one_line

__all__ = [
    "ENTITIES_HEADER",
    "FACTS_HEADER",
    "FACT_DATES",
    "VALID_AT_HEADER",
    "render_context",
    "render_date",
    "render_entity",
    "render_fact",
]

FACT_DATES = ("range", "valid_at")
"""`method.fact_dates`: `range` (our default), each fact with the period it held, `[from - to]`, as the Mem0
paper's Zep harness showed it; `valid_at`, with the time of the event only, as Zep's own template
(`zep_locomo_search.py`: `(event_time: <valid_at>)`), here as `[<day>]`."""

FACTS_HEADER = (
    'Facts, each with the period it held (from - to; "present": nothing has replaced it). The dates belong '
    'to the event or state itself, with phrases such as "last week" already turned into dates: when it '
    "happened or was true, not when someone spoke of it:"
)
"""The one place for what the answer model is told about fact dates. Zep's own answer context
(zep-papers `zep_locomo_search.py`) tells it the same thing in its words: a fact's time is when the event
it refers to occurred, not when it was said."""
VALID_AT_HEADER = (
    'Facts, each with the date of the event it refers to, with phrases such as "last week" already turned '
    "into dates: when it happened, not when someone spoke of it:"
)
"""The facts header with `fact_dates=valid_at`: Zep's template's meaning, in our words."""
ENTITIES_HEADER = "Entities (name: summary):"


class FactLike(Protocol):
    fact: str
    valid_at: datetime | None
    invalid_at: datetime | None


class EntityLike(Protocol):
    name: str
    summary: str


def render_date(value: datetime | None, missing: str) -> str:
    """'8 May 2023' (the day is what LOCOMO's dates carry), or `missing`."""
    if value is None:
        return missing
    return f"{value.day} {value:%B %Y}"


def render_fact(edge: FactLike, dates: str = "range") -> str:
    start = render_date(edge.valid_at, "date unknown")
    if dates == "valid_at":
        return f"- [{start}] {one_line(edge.fact)}"
    end = render_date(edge.invalid_at, "present")
    return f"- [{start} - {end}] {one_line(edge.fact)}"


def render_entity(node: EntityLike) -> str:
    summary = one_line(node.summary or "")
    return f"- {one_line(node.name)}: {summary}" if summary else f"- {one_line(node.name)}"


def render_context(edges: Sequence[FactLike], nodes: Sequence[EntityLike], fact_dates: str = "range") -> str:
    """Facts then entities, best first as the search ranked them; '' when the search found nothing."""
    if fact_dates not in FACT_DATES:
        raise ValueError(
            f"zep_graphiti: fact_dates must be one of {', '.join(FACT_DATES)}, not {fact_dates!r}"
        )
    blocks = []
    if edges:
        header = VALID_AT_HEADER if fact_dates == "valid_at" else FACTS_HEADER
        blocks.append("\n".join([header, *(render_fact(e, fact_dates) for e in edges)]))
    if nodes:
        blocks.append("\n".join([ENTITIES_HEADER, *(render_entity(n) for n in nodes)]))
    return "\n\n".join(blocks)
