"""Hydra's config as the commands hand it on: resolved to plain data (the only place a DictConfig is read),
then parsed once into `pipeline.spec.ExperimentSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mem0bench.pipeline.spec import ExperimentSpec


def plain(node: Any) -> dict[str, Any]:
    """A config node (a DictConfig) as a plain dict, interpolations resolved."""
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(node, resolve=True)
    if not isinstance(data, dict):
        raise TypeError(f"expected a config mapping, found {type(data).__name__}")
    return {str(key): value for key, value in data.items()}


def experiment_spec(cfg: Any) -> ExperimentSpec:
    """A composed config (or a run's saved one, loaded) parsed into the experiment spec."""
    from mem0bench.pipeline.spec import ExperimentSpec

    return ExperimentSpec.from_mapping(plain(cfg))
