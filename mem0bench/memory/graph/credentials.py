"""The password a FalkorDB client of ours sends, kept out of every config and file.

The run's own server (`embedded.EmbeddedFalkorDB`) gets a fresh random password each start, registered
here for its address while it runs; a server of the user's own (`graph.host` / `graph.port`) gets the
one in the environment variable `FALKORDB_PASSWORD`, or none. Never a config key: config.yaml and
run.json are kept with the results and copied around, and a password there would travel with them.
"""

from __future__ import annotations

import os

__all__ = ["PASSWORD_ENV", "forget", "password_for", "register"]

PASSWORD_ENV = "FALKORDB_PASSWORD"

_embedded: dict[tuple[str, int], str] = {}


def register(host: str, port: int, password: str) -> None:
    """The password of a server this process started at host:port (until `forget`)."""
    _embedded[(host, int(port))] = password


def forget(host: str, port: int) -> None:
    _embedded.pop((host, int(port)), None)


def password_for(host: str, port: int) -> str | None:
    """What a client connecting to host:port authenticates with: the run's own server's password,
    else `$FALKORDB_PASSWORD`, else None (a server without a password)."""
    return _embedded.get((host, int(port))) or os.environ.get(PASSWORD_ENV) or None
