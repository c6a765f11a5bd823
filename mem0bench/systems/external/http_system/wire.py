"""The JSON bodies of the HTTP system protocol (docs/http_system.openapi.yaml), built and read here only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mem0bench.data.model import Conversation, Question, Session
from mem0bench.llm.types import ReplyShapeError, Usage

__all__ = [
    "SearchItem",
    "SearchReply",
    "ServiceUsage",
    "parse_search",
    "parse_usage",
    "search_body",
    "session_body",
]


@dataclass(frozen=True)
class ServiceUsage:
    """LLM usage a service reports for one request (its own calls, which the harness then counts)."""

    calls: int
    usage: Usage
    model: str | None


@dataclass(frozen=True)
class SearchItem:
    text: str
    date: str | None = None
    score: float | None = None
    turn_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchReply:
    """Either `items` (rendered one a line) or one `context` string, as the service chose."""

    items: tuple[SearchItem, ...] | None
    context: str | None
    usage: ServiceUsage | None


def session_body(conversation: Conversation, session: Session) -> dict[str, Any]:
    """PUT /conversations/{id}/sessions/{n}: one session's turns, with its date."""
    return {
        "speakers": list(conversation.speakers),
        "date": session.date_text,
        "date_iso": session.date_time.isoformat(),
        "turns": [
            {"turn_id": t.dia_id, "speaker": t.speaker, "text": t.text, "caption": t.caption}
            for t in session.turns
        ],
    }


def search_body(question: Question, top_k: int | None) -> dict[str, Any]:
    """POST /conversations/{id}/search."""
    return {"question": question.question, "question_id": question.qid, "top_k": top_k}


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReplyShapeError(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ReplyShapeError(f"usage.{key} must be an integer >= 0, got {value!r}")
    return value


def parse_usage(body: Any) -> ServiceUsage | None:
    """The optional `usage` of any reply: {calls, prompt_tokens, completion_tokens, model}."""
    if not isinstance(body, Mapping) or body.get("usage") is None:
        return None
    data = _object(body["usage"], "usage")
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise ReplyShapeError(f"usage.model must be a string, got {model!r}")
    prompt, completion = _count(data, "prompt_tokens"), _count(data, "completion_tokens")
    calls = _count(data, "calls") if "calls" in data else int(bool(prompt or completion))
    return ServiceUsage(calls=calls, usage=Usage(prompt, completion), model=model)


def _item(value: Any, i: int) -> SearchItem:
    data = _object(value, f"items[{i}]")
    text = data.get("text")
    if not isinstance(text, str):
        raise ReplyShapeError(f"items[{i}].text must be a string, got {text!r}")
    date = data.get("date")
    if date is not None and not isinstance(date, str):
        raise ReplyShapeError(f"items[{i}].date must be a string or null, got {date!r}")
    score = data.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise ReplyShapeError(f"items[{i}].score must be a number or null, got {score!r}")
    turn_ids = data.get("turn_ids") or []
    if not isinstance(turn_ids, list) or not all(isinstance(t, str) for t in turn_ids):
        raise ReplyShapeError(f"items[{i}].turn_ids must be a list of strings, got {turn_ids!r}")
    return SearchItem(text, date, None if score is None else float(score), tuple(turn_ids))


def parse_search(body: Any) -> SearchReply:
    """A search reply: `items` (a list) or `context` (a string), exactly one of them."""
    data = _object(body, "the search reply")
    items, context = data.get("items"), data.get("context")
    if (items is None) == (context is None):
        raise ReplyShapeError(
            "the search reply must hold exactly one of 'items' (a list) or 'context' (a string)"
        )
    if context is not None and not isinstance(context, str):
        raise ReplyShapeError(f"context must be a string, got {type(context).__name__}")
    if items is not None and not isinstance(items, list):
        raise ReplyShapeError(f"items must be a list, got {type(items).__name__}")
    parsed = None if items is None else tuple(_item(v, i) for i, v in enumerate(items))
    return SearchReply(items=parsed, context=context, usage=parse_usage(data))
