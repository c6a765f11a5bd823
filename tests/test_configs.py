"""Every experiment recipe composes, names an importable system, and keeps secrets out."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_class
from omegaconf import OmegaConf

from mem0bench.cli.run import CONFIG_DIR, _take_secrets
from mem0bench.common.errors import ConfigurationError
from mem0bench.llm.settings import EmbedderSettings, LLMSettings
from mem0bench.pipeline.experiment import judge_settings, public_config, run_options

# Recipes in sub-folders too: "paper/mem0" is `+exp=paper/mem0`.
EXPERIMENTS = sorted(
    p.relative_to(CONFIG_DIR / "exp").with_suffix("").as_posix() for p in (CONFIG_DIR / "exp").rglob("*.yaml")
)


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="run", overrides=list(overrides))


def test_there_are_recipes_for_every_method():
    assert {"mem0", "mem0g", "rag", "full_context"} <= set(EXPERIMENTS)
    assert {"paper/mem0", "paper/mem0g", "paper/rag", "paper/full_context"} <= set(EXPERIMENTS)


@pytest.mark.parametrize("method", ["mem0", "mem0g", "rag", "full_context"])
def test_paper_profile_differs_where_the_paper_harness_did(method):
    ours, paper = _compose(f"+exp={method}"), _compose(f"+exp=paper/{method}")
    assert ours.method.name == paper.method.name == method
    assert (ours.answer.prompt, paper.answer.prompt) == ("default", "paper")
    assert (ours.judge.prompt, paper.judge.prompt) == ("lenient", "paper")
    assert (ours.dataset.fold_captions, paper.dataset.fold_captions) == (True, False)
    assert paper.judge.runs == 10 and paper.llm.model == paper.judge.model == "gpt-4o-mini"
    assert run_options(paper).answer_prompt == "paper" and judge_settings(paper).prompt == "paper"
    if method in ("mem0", "mem0g"):
        assert paper.method.top_k == 30 and paper.method.per_speaker is True
    if method == "rag":
        assert (paper.method.chunk_size, paper.method.k) == (256, 2)
        assert paper.embedder.model == "text-embedding-3-small"


def test_unknown_answer_prompt_is_one_clear_error():
    with pytest.raises(ConfigurationError, match="answer.prompt must be one of default, paper, not 'short'"):
        run_options(_compose("+exp=rag", "answer.prompt=short"))


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_experiment_composes(exp):
    cfg = _compose(f"+exp={exp}")
    system_class = get_class(cfg.method._target_)
    accepted: set[str] = set()
    for klass in system_class.__mro__:  # **kwargs pass the rest on to the base class
        params = inspect.signature(klass.__init__).parameters if "__init__" in vars(klass) else {}
        accepted |= set(params)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            break
    hyper = {k for k in cfg.method if k != "_target_"}
    assert hyper <= accepted, f"{exp}: {hyper - accepted} not accepted by {system_class.__name__}"
    assert "context" in accepted
    LLMSettings.from_config(OmegaConf.to_container(cfg.llm, resolve=True))
    EmbedderSettings.from_config(OmegaConf.to_container(cfg.embedder, resolve=True))
    judge_settings(cfg)


def test_recipes_hold_only_what_differs():
    for path in (CONFIG_DIR / "exp").rglob("*.yaml"):
        text = Path(path).read_text()
        assert "_target_" not in text, f"{path.name} repeats a method definition"


def test_sweepable_hyperparameters_are_in_config():
    cfg = _compose("+exp=mem0g", "method.m=5", "method.s=7", "method.threshold=0.8", "method.top_k=12")
    assert (cfg.method.m, cfg.method.s, cfg.method.threshold, cfg.method.top_k) == (5, 7, 0.8, 12)
    # Node reuse has a threshold of its own, swept apart from the retrieval one.
    assert _compose("+exp=mem0g").method.reuse_threshold == 0.9
    for value in (0.85, 0.95):
        cfg = _compose("+exp=mem0g", f"method.reuse_threshold={value}")
        assert (cfg.method.reuse_threshold, cfg.method.threshold) == (value, 0.7)
    cfg = _compose("+exp=rag", "method.chunk_size=512", "method.k=1")
    assert (cfg.method.chunk_size, cfg.method.k) == (512, 1)


def test_saved_config_has_no_secret(monkeypatch):
    # The key goes to the environment: monkeypatch restores it afterwards, so no later test sees it.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    argv = _take_secrets(["+exp=mem0", "llm.api_key=sk-secret-value-123", "judge.runs=2"])
    assert argv == ["+exp=mem0", "judge.runs=2"]
    assert os.environ["OPENAI_API_KEY"] == "sk-secret-value-123"
    cfg = _compose(*argv)
    assert "sk-secret-value-123" not in OmegaConf.to_yaml(OmegaConf.create(public_config(cfg)))


def test_unknown_key_is_rejected():
    with pytest.raises(Exception, match="method.nonsense"):
        _compose("+exp=mem0", "method.nonsense=1")


@pytest.mark.parametrize(
    ("system", "pinned"),
    [
        ("mem0_oss", {"top_k": 30, "batch_size": 2}),
        ("zep_graphiti", {}),
        ("langmem", {"mode": "agent", "per_speaker": True}),
        ("amem", {"k": 10, "query": "keywords", "temperature": 0.0}),
        ("chatgpt_memory_emulation", {"style": "reference"}),
    ],
)
def test_other_systems_have_a_paper_profile(system, pinned):
    """`+exp=paper/<system>`: the system with the paper harness's shared settings and its own pins."""
    paper = _compose(f"+exp=paper/{system}")
    assert paper.method.name == system
    assert (paper.answer.prompt, paper.judge.prompt, paper.dataset.fold_captions) == ("paper", "paper", False)
    assert paper.judge.runs == 10 and paper.llm.model == paper.judge.model == "gpt-4o-mini"
    assert paper.llm.temperature == 0.0
    assert {key: paper.method[key] for key in pinned} == pinned
