"""Config groups as plain values for the code below the pipeline (which takes no OmegaConf objects)."""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

from mem0bench.common.errors import ConfigurationError


def config_section(node: Any) -> dict[str, Any]:
    """A config group (a DictConfig node) as a plain resolved dict."""
    data = OmegaConf.to_container(node, resolve=True)
    if not isinstance(data, dict):
        raise ConfigurationError(f"expected a config group, found {type(data).__name__}")
    return {str(key): value for key, value in data.items()}
