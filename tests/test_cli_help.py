"""Every command's `--help` ends with its examples, and the `run` examples compose into valid configs."""

from __future__ import annotations

import contextlib
import io
import shlex

import pytest
from hydra import compose, initialize_config_dir

from devtools.e2e import cli_env, run_cli
from mem0bench.__main__ import main
from mem0bench.cli.examples import EXAMPLES
from mem0bench.cli.run import CONFIG_DIR


def _help_of(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([command, "--help"])
    return out.getvalue()


def _tail_examples(text: str, command: str) -> list[str]:
    lines = [line.strip() for line in text.strip().splitlines()]
    n = len(EXAMPLES[command])
    assert lines[-n - 1] == "examples:", text[-600:]
    return lines[-n:]


@pytest.mark.parametrize("command", sorted(set(EXAMPLES) - {"run"}))
def test_help_ends_with_real_examples(command):
    examples = _tail_examples(_help_of(command), command)
    assert 2 <= len(examples) <= 3
    for line, example in zip(examples, EXAMPLES[command]):
        assert shlex.split(line) == ["python", "-m", "mem0bench", *shlex.split(example)]
        assert shlex.split(example)[0] == command


def test_run_help_ends_with_examples_that_compose(tmp_path):
    result = run_cli(["run", "--help"], cli_env("http://127.0.0.1:9/v1", tmp_path))
    assert result.returncode == 0, result.stderr
    examples = _tail_examples(result.stdout, "run")
    assert examples == [f"python -m mem0bench {e}" for e in EXAMPLES["run"]]
    # Each example is a valid command line (a sweep's first value of each list stands for its jobs).
    for example in EXAMPLES["run"]:
        overrides = [a.split(",")[0] for a in shlex.split(example)[1:] if a not in ("-m", "--multirun")]
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose(config_name="run", overrides=overrides)
        assert cfg.method.name in ("mem0", "mem0g", "rag", "full_context")


def test_top_level_help_lists_status_and_ends_with_examples():
    text = _help_of("--help")
    assert "status PATH..." in text and "merge RUN... --out DIR" in text
    tail = text.strip().splitlines()[-3:]
    assert all(shlex.split(line)[:3] == ["python", "-m", "mem0bench"] for line in tail)
