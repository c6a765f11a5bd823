"""A typed run status: run.json's `status` is one of RunState's values, written through the enum only."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from mem0bench.rundir.directory import RunDirectory
from mem0bench.rundir.status import RunState

PACKAGE = Path(__file__).resolve().parent.parent / "mem0bench"


def test_the_strings_run_json_always_held() -> None:
    assert [s.value for s in RunState] == [
        "running",
        "complete",
        "failed",
        "stopped",
        "interrupted",
        "aborted",
    ]
    assert json.dumps({"status": RunState.COMPLETE}) == '{"status": "complete"}'
    assert RunState.of("interrupted") is RunState.INTERRUPTED
    assert RunState.of("not started") is None and RunState.of(None) is None and RunState.of(3) is None


def test_finish_writes_the_plain_string(tmp_path: Path) -> None:
    rundir = RunDirectory(tmp_path / "run")
    rundir.finish(RunState.STOPPED, reason="server gone")
    manifest = json.loads((rundir.path / "run.json").read_text())
    assert manifest["status"] == "stopped" and manifest["reason"] == "server gone"


def test_no_status_is_written_as_a_bare_string() -> None:
    """`finish(...)` and a `"status": ...` entry never take a string constant: the enum is the one list."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "finish"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "status"
                        and isinstance(value, ast.Constant)
                        and value.value in {s.value for s in RunState}
                    ):
                        offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, offenders
