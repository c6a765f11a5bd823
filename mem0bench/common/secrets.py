"""What counts as a secret in a config: one rule for every place that saves or caches a config."""

from __future__ import annotations

SECRET_KEYS = ("api_key",)
"""A config key whose name contains one of these (any case) holds a secret: never written to disk."""


def is_secret_key(name: str) -> bool:
    """True when a config key (or a dotted override path) names a secret."""
    lowered = name.lower()
    return any(secret in lowered for secret in SECRET_KEYS)
