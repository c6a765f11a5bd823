from __future__ import annotations

import pytest

from mem0bench.__main__ import main


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("run", "judge", "report", "memories", "data"):
        assert f"  {command}" in out


def test_unknown_command(capsys):
    assert main(["fly"]) == 2
    assert "unknown command" in capsys.readouterr().err


def test_help_lists_the_comparison_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("import", "compare", "judge-check"):
        assert f"  {command}" in out
    for command in ("import", "compare", "judge-check"):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0
        assert "examples:\n  python -m mem0bench" in capsys.readouterr().out
