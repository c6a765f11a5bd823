"""The error every layer may raise for a problem the user must fix before any work."""

from __future__ import annotations


class ConfigurationError(Exception):
    """A problem the user must fix before any work (missing key, unreachable server, unknown model)."""
