"""BEAM's rubric judge (the suite's own, `Suite.judge`): one call per rubric item, as the authors' code.

Each item is its own cached call (salted by the run and the item), scored 1 / 0.5 / 0; the question's score
is the mean over the items (`dataset.partial_credit=authors`: a 0.5 counts 0 outside event ordering). Event
ordering also aligns the reply's lines with the items (one yes/no call per pair tried, as their
`align_with_llm`) and scores the order by Kendall tau; `dataset.event_ordering_score` says which figure is
the question's score (the authors' report: `tau_norm`). A reply whose score cannot be read, or a call that
fails for good, makes the judgement a failure (never a 0): that run's figures leave it out and count it.
"""

from __future__ import annotations

import json
from typing import Any

from mem0bench.llm.client import LLMClient
from mem0bench.llm.timing import measure
from mem0bench.llm.types import LLMCallError
from mem0bench.prompts.beam import (
    build_equivalence_messages,
    build_rubric_messages,
    read_item_score,
    said_same,
)
from mem0bench.rundir.records import Judgement, score_label
from mem0bench.suites.beam import EVENT_ORDERING, judge_options
from mem0bench.suites.beam_scoring import align, ordering_score, rubric_score

__all__ = ["judge_beam"]


class _Unread(Exception):
    """A judge reply with no score in it."""


async def judge_beam(client: LLMClient, settings: Any, answer: Any, run: int) -> Judgement:
    """One judge run of one BEAM answer: its rubric items (and, for event ordering, the alignment)."""
    options = judge_options()
    base: dict[str, Any] = {"qid": answer.qid, "run": run, "signature": settings.signature}
    try:
        rubric = json.loads(answer.gold)
        if not isinstance(rubric, list) or not rubric or not all(isinstance(r, str) for r in rubric):
            raise ValueError
    except ValueError:
        return Judgement(**base, label=None, failure="malformed: the gold is not a BEAM rubric (a JSON list)")
    question = answer.question if options.judge_question == "filled" else None
    ordering = answer.category_id == int(EVENT_ORDERING)
    with measure() as scope:
        try:
            items = []
            for i, item in enumerate(rubric):
                reply = await client.chat(
                    build_rubric_messages(question, item, answer.prediction),
                    stage="judge", salt=f"judge-run-{run}|beam-item-{i}", model=settings.model,
                )  # fmt: skip
                score = read_item_score(reply.text)
                if score is None:
                    raise _Unread(f"no score of 1, 0.5 or 0 in the reply to rubric item {i}")
                items.append(score)
            detail: dict[str, Any] = {"items": items}
            if ordering:

                async def same(i: int, item: str, k: int, line: str) -> bool:
                    reply = await client.chat(
                        build_equivalence_messages(item, line),
                        stage="judge", salt=f"judge-run-{run}|beam-align-{k}-{i}", model=settings.model,
                    )  # fmt: skip
                    return said_same(reply.text)

                aligned = await align(rubric, answer.prediction.split("\n"), same)
                detail.update(ordering_score(rubric, aligned))
        except LLMCallError as exc:
            return Judgement(**base, label=None, failure=f"{exc.failure.kind}: {exc.failure.message}",
                             usage=scope.usage)  # fmt: skip
        except _Unread as exc:
            return Judgement(**base, label=None, failure=f"malformed: {exc}", usage=scope.usage)
    truncate = options.partial_credit == "authors" and not ordering
    detail["rubric"] = rubric_score(items, truncate_partial=truncate)
    if ordering and options.event_ordering_score != "rubric":
        value = float(detail[options.event_ordering_score])
    else:
        value = float(detail["rubric"])
    return Judgement(
        **base,
        label=score_label(round(value * 2) / 2),  # type: ignore[arg-type]
        reasoning=json.dumps(detail),
        usage=scope.usage,
        score=value,
        detail=detail,
    )
