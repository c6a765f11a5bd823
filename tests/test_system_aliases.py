"""Run folders written before the systems moved into mem0bench/systems/ still name their system by the old
class path in config.yaml: everything that turns that name back into a class resolves it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_class
from omegaconf import OmegaConf

from mem0bench.cli.config import experiment_spec
from mem0bench.cli.run import CONFIG_DIR
from mem0bench.pipeline.experiment import build_system
from mem0bench.status.reader import read_status
from mem0bench.systems.aliases import MOVED, current_target
from mem0bench.systems.baselines.rag import RAG

# What configs/method/*.yaml named before the move, exactly as old run folders recorded it.
OLD_TARGETS = {
    "mem0": "mem0bench.memory.mem0.Mem0",
    "mem0g": "mem0bench.memory.mem0g.Mem0G",
    "rag": "baselines.rag.RAG",
    "full_context": "baselines.full_context.FullContext",
    "chatgpt_memory_emulation": "mem0bench.systems.chatgpt_memory_emulation.system.ChatGPTMemoryEmulation",
    "mem0_oss": "mem0bench.systems.mem0_oss.system.Mem0OSS",
    "zep_graphiti": "mem0bench.systems.zep_graphiti.system.ZepGraphiti",
    "langmem": "mem0bench.systems.langmem.system.LangMem",
    "amem": "mem0bench.systems.amem.system.AMem",
}


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="run", overrides=list(overrides))


@pytest.mark.parametrize("method", sorted(OLD_TARGETS))
def test_every_old_class_path_resolves_to_todays(method: str) -> None:
    today = OmegaConf.load(CONFIG_DIR / "method" / f"{method}.yaml")._target_
    assert current_target(OLD_TARGETS[method]) == today
    assert get_class(current_target(OLD_TARGETS[method])).__name__ == today.rpartition(".")[2]


def test_other_paths_pass_through_unchanged() -> None:
    for target in ("my_lab.systems.Mine", "baselines_extra.rag.RAG", "mem0bench.memory.mem0gx.X"):
        assert current_target(target) == target
    assert current_target("mem0bench.memory.mem0.system.Mem0") == "mem0bench.systems.methods.mem0.system.Mem0"
    assert all(current_target(new) == new for new in MOVED.values())  # today's paths are not moved again


def _old_run_folder(root: Path, method: str, target: str, locomo_mini: Path) -> Path:
    cfg = _compose(f"+exp={method}", f"dataset.path={locomo_mini}")
    cfg.method._target_ = target
    run_dir = root / method
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True), encoding="utf-8")
    return run_dir


@pytest.mark.parametrize("method", ["mem0", "rag", "chatgpt_memory_emulation", "langmem"])
def test_status_estimates_a_run_folder_that_names_the_old_class(tmp_path, locomo_mini, method) -> None:
    old = read_status(_old_run_folder(tmp_path / "old", method, OLD_TARGETS[method], locomo_mini))
    new_target = current_target(OLD_TARGETS[method])
    new = read_status(_old_run_folder(tmp_path / "new", method, new_target, locomo_mini))
    assert old.scope_error is None and old.left is not None, old.left_note
    assert old.left == new.left  # the same plan, read from the same class


def test_a_saved_config_with_the_old_class_builds_todays_system(tmp_path, locomo_mini) -> None:
    run_dir = _old_run_folder(tmp_path, "rag", "baselines.rag.RAG", locomo_mini)
    cfg = OmegaConf.load(run_dir / "config.yaml")

    class _Rundir:
        state_dir = tmp_path / "state"
        path = run_dir

    spec = experiment_spec(cfg)
    assert spec.system.target == "mem0bench.systems.baselines.rag.RAG"
    system = build_system(spec.system, client=None, rundir=_Rundir())  # type: ignore[arg-type]
    assert isinstance(system, RAG)
    assert cfg.method._target_ == "baselines.rag.RAG"  # the saved config itself is not rewritten
