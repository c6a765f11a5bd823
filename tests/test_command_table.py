"""`python -m mem0bench`'s command table: every command's entry point exists, and the usage lists each."""

from __future__ import annotations

import importlib

from mem0bench.__main__ import COMMANDS, USAGE, main


def test_every_command_names_a_callable_entry_point_once() -> None:
    names = [c.name for c in COMMANDS]
    assert len(names) == len(set(names))
    for command in COMMANDS:
        module, function = command.target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), command.target
        assert command.line.startswith(command.name + " ") and f"\n  {command.line}\n" in USAGE


def test_help_and_an_unknown_command(capsys) -> None:
    assert main(["--help"]) == 0 and capsys.readouterr().out.startswith("usage: python -m mem0bench COMMAND")
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
