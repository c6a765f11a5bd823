"""The systems that run in a venv of their own, by name (`python -m mem0bench setup-system NAME`).
A new one is one line: its name and where its `OwnVenv` is."""

from __future__ import annotations

import importlib

from mem0bench.systems.external.own_env.venv import OwnVenv

__all__ = ["OWN_ENVS", "own_env"]

OWN_ENVS: dict[str, str] = {
    "mem0_v2": "mem0bench.systems.external.mem0_v2.env",
    "memu": "mem0bench.systems.external.memu.env",
    "cognee": "mem0bench.systems.external.cognee.env",
    "hindsight": "mem0bench.systems.external.hindsight.env",
}
"""name -> the module whose `ENV` is the system's venv."""


def own_env(name: str) -> OwnVenv:
    env = importlib.import_module(OWN_ENVS[name]).ENV
    assert isinstance(env, OwnVenv)
    return env
