"""The search query, as the A-Mem authors' LOCOMO harness made it (`test_advanced.py`, `generate_query_llm`).

Their harness did not search with the question: it asked the LLM for keywords first, through the
library's own controller (JSON schema `{"keywords": string}`), and searched with those; a reply that
does not parse is used as it stands. The prompt below is theirs, character for character (indentation
and a trailing space included: they are part of the text they sent). `method.query=question` searches
with the question itself instead (no call).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["KEYWORDS_FORMAT", "keywords_prompt", "parse_keywords"]

_INDENT = " " * 16
_PROMPT = (
    "Given the following question, generate several keywords, using 'cosmos' as the separator.\n\n"
    f"{_INDENT}Question: {{question}}\n\n"
    f'{_INDENT}Format your response as a JSON object with a "keywords" field containing the selected text. \n\n'
    f"{_INDENT}Example response format:\n"
    f'{_INDENT}{{{{"keywords": "keyword1, keyword2, keyword3"}}}}'
)

KEYWORDS_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "response",
        "schema": {
            "type": "object",
            "properties": {"keywords": {"type": "string"}},
            "required": ["keywords"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


def keywords_prompt(question: str) -> str:
    return _PROMPT.format(question=question)


def parse_keywords(reply: str | None) -> tuple[str, bool]:
    """(query, parsed): the reply's keywords, or (as their harness did) the stripped reply itself."""
    try:
        value = json.loads(reply or "")
        if isinstance(value, dict) and isinstance(value.get("keywords"), str):
            return value["keywords"], True
    except (TypeError, ValueError):
        pass
    return (reply or "").strip(), False
