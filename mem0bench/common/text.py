"""Text helpers shared by error messages and logs."""

from __future__ import annotations


def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines included) collapsed to one space, so an error
    message fits one console, log or failures.jsonl line."""
    return " ".join(str(text).split())
