"""`dataset.conversations` as a user types it on the command line, through Hydra's override parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mem0bench.cli.run import CONFIG_DIR
from mem0bench.common.errors import ConfigurationError
from mem0bench.pipeline.experiment import load_scope
from mem0bench.pipeline.spec import ExperimentSpec


def _selection(fixture: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="run", overrides=["+exp=rag", f"dataset.path={fixture}", *overrides])
    return load_scope(ExperimentSpec.from_mapping(OmegaConf.to_container(cfg, resolve=True)).scope)


def test_one_id_given_as_a_string_is_one_id(locomo_mini: Path) -> None:
    dataset, questions = _selection(locomo_mini, "dataset.conversations=mini-2")
    assert [c.sample_id for c in dataset.conversations] == ["mini-2"]
    assert len(questions["mini-2"]) == 5  # categories 1-4 of mini-2


def test_a_list_of_ids(locomo_mini: Path) -> None:
    dataset, _ = _selection(locomo_mini, "dataset.conversations=[mini-3,mini-1]")
    assert [c.sample_id for c in dataset.conversations] == ["mini-1", "mini-3"]  # the file's order


def test_an_empty_list_is_an_error(locomo_mini: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"dataset.conversations=\[\] selects no conversation"):
        _selection(locomo_mini, "dataset.conversations=[]")


def test_no_question_in_scope_is_an_error(tmp_path: Path, locomo_mini: Path) -> None:
    # mini-3 cut to its adversarial question: nothing is in the default scope (categories 1-4).
    data = [s for s in json.loads(locomo_mini.read_text(encoding="utf-8")) if s["sample_id"] == "mini-3"]
    data[0]["qa"] = [q for q in data[0]["qa"] if q["category"] == 5]
    path = tmp_path / "only_adversarial.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="no question selected"):
        _selection(path)
    dataset, questions = _selection(path, "eval.include_adversarial=true")
    assert len(questions["mini-3"]) == 1
