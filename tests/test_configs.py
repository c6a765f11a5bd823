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
from mem0bench.pipeline.experiment import public_config
from mem0bench.pipeline.spec import ExperimentSpec

# Recipes in sub-folders too: "paper/mem0" is `+exp=paper/mem0`.
EXPERIMENTS = sorted(
    p.relative_to(CONFIG_DIR / "exp").with_suffix("").as_posix() for p in (CONFIG_DIR / "exp").rglob("*.yaml")
)


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="run", overrides=list(overrides))


def _plain(cfg) -> dict:
    return OmegaConf.to_container(cfg, resolve=True)


def _spec(*overrides: str) -> ExperimentSpec:
    return ExperimentSpec.from_mapping(_plain(_compose(*overrides)))


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
    spec = ExperimentSpec.from_mapping(_plain(paper))
    assert spec.run.answer_prompt == "paper" and spec.judge.prompt == "paper"
    if method in ("mem0", "mem0g"):
        assert paper.method.top_k == 30 and paper.method.per_speaker is True
        switches = ("ops", "extraction_source", "memory_style", "memory_date")
        assert [ours.method[k] for k in switches] == ["replace", "both", "short", "updated"]
        assert [paper.method[k] for k in switches] == ["paper", "owner", "rich", "updated"]
    if method == "rag":
        assert (paper.method.chunk_size, paper.method.k) == (256, 2)
        assert paper.embedder.model == "text-embedding-3-small"


def test_unknown_answer_prompt_is_one_clear_error():
    with pytest.raises(
        ConfigurationError, match="answer.prompt must be one of default, paper, zep, amem, memu, not 'short'"
    ):
        _spec("+exp=rag", "answer.prompt=short")


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
    spec = ExperimentSpec.from_mapping(_plain(cfg))  # every section parses
    assert spec.system.target == cfg.method._target_ and spec.system.name == cfg.method.name


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


def test_saved_config_has_no_secret(monkeypatch, tmp_path):
    # The key goes to the environment: monkeypatch restores it afterwards, so no later test sees it.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    key_file = tmp_path / "key"
    key_file.write_text("sk-secret-value-123\n")
    key_file.chmod(0o600)
    argv = _take_secrets(["+exp=mem0", f"llm.api_key_file={key_file}", "judge.runs=2"])
    assert argv == ["+exp=mem0", "judge.runs=2"]
    assert os.environ["OPENAI_API_KEY"] == "sk-secret-value-123"
    cfg = _compose(*argv)
    assert "sk-secret-value-123" not in OmegaConf.to_yaml(OmegaConf.create(public_config(_plain(cfg))))


def test_unknown_key_is_rejected():
    with pytest.raises(Exception, match="method.nonsense"):
        _compose("+exp=mem0", "method.nonsense=1")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+llm.max_concurency=4", "unknown llm setting 'max_concurency'"),
        ("judge.runs=0", "judge.runs must be at least 1"),
        ("run.max_failure_rate=2", "run.max_failure_rate must be between 0 and 1, not 2.0"),
        ("eval.sample=random", "eval.sample must be one of first, stratified, not 'random'"),
        ("dataset.conversations=[]", r"dataset.conversations=\[\] selects no conversation"),
        ("+embedder.backend_name=x", "unknown embedder setting 'backend_name'"),
    ],
)
def test_the_spec_stops_a_bad_value_in_one_line_naming_the_key(override, message):
    with pytest.raises(ConfigurationError, match=message) as info:
        _spec("+exp=rag", override)
    assert "\n" not in str(info.value)


def test_the_spec_is_parsed_once_into_typed_frozen_sections():
    import dataclasses

    spec = _spec("+exp=mem0g", "method.top_k=12", "judge.runs=3", "eval.max_questions=2")
    assert (
        spec.system.target == "mem0bench.systems.methods.mem0g.Mem0G" and spec.system.settings["top_k"] == 12
    )
    assert spec.system.graph["backend"] == "inprocess" and spec.judge.runs == 3
    assert spec.scope.max_questions == 2 and spec.llm.model == "gpt-4o-mini"
    assert spec.config == _plain(
        _compose("+exp=mem0g", "method.top_k=12", "judge.runs=3", "eval.max_questions=2")
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.judge = spec.judge  # type: ignore[misc]


def _spec_with_choices(*overrides: str):
    """The spec a run would parse, with the config-group choices Hydra made for it."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="run", overrides=list(overrides), return_hydra_config=True)
    choices = {k: str(v) for k, v in cfg.hydra.runtime.choices.items() if v is not None}
    return _spec(*overrides), choices


def test_a_paper_profile_with_overrides_is_marked_as_departing_from_it():
    from mem0bench.pipeline.profile import check_profile

    cfg, choices = _spec_with_choices(
        "+exp=paper/mem0", "judge.runs=2", "embedder=minilm", "eval.max_questions=5"
    )
    check = check_profile(cfg, choices)
    assert check is not None and check.name == "paper/mem0"
    # What the profile pins and the run changed, and nothing it leaves alone (the question scope).
    assert check.departures == ("embedder=minilm (profile: openai)", "judge.runs=2 (profile: 10)")
    assert check.to_dict() == {"name": "paper/mem0", "departs": True, "overrides": list(check.departures)}
    assert "departs from the paper/mem0 profile: embedder=minilm" in (check.warning() or "")

    cfg, choices = _spec_with_choices("+exp=paper/rag", "method=mem0", "method.top_k=5")
    departures = check_profile(cfg, choices).departures  # type: ignore[union-attr]
    assert "method=mem0 (profile: rag)" in departures
    kept, choices = _spec_with_choices("+exp=paper/mem0g", "dataset.path=x.json", "llm.timeout_s=3")
    check = check_profile(kept, choices)
    assert check is not None and check.departures == () and check.warning() is None
    ours, choices = _spec_with_choices("+exp=mem0", "judge.runs=2")
    assert check_profile(ours, choices) is None  # our own recipes are not profiles


@pytest.mark.parametrize(
    ("system", "shared", "pinned"),
    [
        ("mem0_oss", ("paper", False, "openai"), {"top_k": 30, "batch_size": 2, "extraction_date": "today"}),
        ("mem0_oss_graph", ("paper", False, "openai"),
         {"top_k": 30, "batch_size": 2, "extraction_date": "today", "relation_dates": "none", "graph": True}),
        ("zep_graphiti", ("zep", False, "openai"), {"fact_dates": "valid_at", "library_temperature": "default"}),
        ("langmem", ("paper", False, "openai"),
         {"mode": "agent", "retrieval": "agent", "per_speaker": True, "store_clock": "wall", "temperature": None}),
        ("amem", ("amem", True, "minilm"), {"k": 10, "query": "keywords", "temperature": 0.0}),
        ("chatgpt_memory_emulation", ("paper", False, "openai"), {"style": "reference"}),
    ],
)  # fmt: skip
def test_other_systems_have_a_paper_profile(system, shared, pinned):
    """`+exp=paper/<system>`: the system with the paper harness's shared settings and its authors' values
    (answer prompt, captions, embedder, method pins)."""
    paper = _compose(f"+exp=paper/{system}")
    assert paper.method.name == system
    assert (paper.answer.prompt, paper.dataset.fold_captions, paper.embedder.backend) == shared
    assert paper.judge.prompt == "paper"
    assert paper.judge.runs == 10 and paper.llm.model == paper.judge.model == "gpt-4o-mini"
    assert paper.llm.temperature == 0.0
    assert {key: paper.method[key] for key in pinned} == pinned
