"""Nested mappings as flat dotted keys: one rule for everything that compares configs key by key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["flatten"]


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings to dotted keys; lists become tuples (hashable, comparable)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, dotted + "."))
        elif isinstance(value, list):
            flat[dotted] = tuple(value)
        else:
            flat[dotted] = value
    return flat
