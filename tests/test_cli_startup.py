"""What a run pays before its first request and after its last (issue 18): the heavy imports stay off the
path, and Hydra composes the config once when nothing can set the run mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mem0bench.cli.run import _mode_needs_config
from mem0bench.paths import CONFIG_DIR

REPO = Path(__file__).resolve().parents[1]


# What a run must not import before its first request, and why it used to: the openai SDK (the harness's
# requests go over httpx2, llm/transport.py; httpx2 itself is imported on the run path and httpcore2, with
# trio when installed, when the client is built: the wire's cost, measured by `python -m benchmarks startup`),
# the report and scoring libraries (scoring comes after the last call), tiktoken's encoding (loaded on a
# thread), the table printer (`data stats` only) and the graph stores (a graph system only). pydantic (the
# reply models) and jsonschema (the reply check) are allowed: keeping our own copies of them for ~0.25 s of
# start-up was not worth it (issue 31).
NOT_ON_THE_RUN_PATH = ("openai", "pandas", "matplotlib", "nltk",
                       "tiktoken_ext.openai_public", "tabulate", "mem0bench.data.stats",
                       "mem0bench.memory.graph")  # fmt: skip


def test_the_run_path_imports_none_of_the_libraries_it_does_not_need_yet() -> None:
    # Everything `run` imports before its first request: the command, its error handling, Hydra's
    # callbacks, the pipeline and a system of ours.
    code = (
        "import sys, mem0bench.cli.run, mem0bench.cli.errors, mem0bench.cli.sweep_summary, "
        "mem0bench.pipeline.experiment, mem0bench.systems.methods.mem0.system\n"
        f"print(' '.join(m for m in {NOT_ON_THE_RUN_PATH!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


def test_lexical_scores_still_load_on_first_use() -> None:
    from mem0bench.metrics import bleu1, f1, locomo_f1

    assert (bleu1("a red cat", "a red cat"), f1("red cat", "red dog")) == (1.0, 0.5)
    assert locomo_f1("the cats", "cat", 1) == 1.0
    with pytest.raises(AttributeError):
        _ = __import__("mem0bench.metrics", fromlist=["nope"]).nope


def _has_hydra_mode(node: object) -> bool:
    return isinstance(node, dict) and isinstance(node.get("hydra"), dict) and "mode" in node["hydra"]


def test_no_packaged_config_sets_the_run_mode() -> None:
    # cli.run skips Hydra's mode-only compose on this premise.
    files = sorted(Path(CONFIG_DIR).rglob("*.yaml"))
    assert files
    offending = [str(f) for f in files if _has_hydra_mode(yaml.safe_load(f.read_text(encoding="utf-8")))]
    assert offending == []


@pytest.mark.parametrize(
    ("argv", "needs"),
    [
        (["+exp=mem0", "llm.max_concurrency=1"], False),
        (["-m", "+exp=mem0", "method.top_k=5,10"], False),
        (["+exp=mem0", "hydra.mode=MULTIRUN"], True),
        (["+exp=mem0", "++hydra.mode=RUN"], True),
        (["--config-dir", "/tmp/mine", "+exp=x"], True),
        (["-cd", "/tmp/mine", "+exp=x"], True),
        (["+hydra.searchpath=[file:///tmp/mine]"], True),
    ],
)
def test_when_the_mode_needs_the_composed_config(argv: list[str], needs: bool) -> None:
    assert _mode_needs_config(argv) is needs
