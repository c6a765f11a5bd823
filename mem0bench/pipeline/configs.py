"""Config groups as plain values for the code below the pipeline (which takes no OmegaConf objects)."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from mem0bench.common.errors import ConfigurationError
from mem0bench.systems.aliases import current_target


def config_section(node: Any) -> dict[str, Any]:
    """A config group (a DictConfig node) as a plain resolved dict."""
    data = OmegaConf.to_container(node, resolve=True)
    if not isinstance(data, dict):
        raise ConfigurationError(f"expected a config group, found {type(data).__name__}")
    return {str(key): value for key, value in data.items()}


def method_config(cfg: DictConfig) -> DictConfig:
    """`cfg.method` with its `_target_` naming today's module: a config saved before the systems moved
    names the old one (mem0bench.systems.aliases). A copy; `cfg` is untouched."""
    method = OmegaConf.create(OmegaConf.to_container(cfg.method, resolve=False))
    assert isinstance(method, DictConfig)  # a copy of a mapping is a mapping
    if "_target_" in method:
        method._target_ = current_target(str(method._target_))
    return method
