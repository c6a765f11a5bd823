from __future__ import annotations

from mem0bench.__main__ import main


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("run", "judge", "report", "memories", "data"):
        assert f"  {command}" in out


def test_unknown_command(capsys):
    assert main(["fly"]) == 2
    assert "unknown command" in capsys.readouterr().err
