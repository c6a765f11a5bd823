"""What `check-system TARGET` names: a class (`package.module.Class`) or a memory service's URL."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.conformance.checks import Target
from mem0bench.memory.base import MemorySystem, SystemContext
from mem0bench.systems.external.http_system.system import HttpSystem, check_health

__all__ = ["class_target", "http_target", "target"]

# The HTTP system's failure check must not sit through real backoff pauses.
_QUICK = {"max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 30.0}


def target(spec: str, settings: Mapping[str, Any]) -> Target:
    if spec.startswith(("http://", "https://")):
        return http_target(spec, settings)
    return class_target(spec, settings)


def http_target(url: str, settings: Mapping[str, Any]) -> Target:
    check_health(url)  # a service that is not there: one line now, not nine failed checks

    def build(context: SystemContext, failing: str | None) -> MemorySystem:
        return HttpSystem(**{**_QUICK, **settings, "url": failing or url}, context=context)

    method = {**_defaults(HttpSystem), **_QUICK, **settings, "url": url}
    return Target(label=f"http_system at {url}", cls=HttpSystem, method=method, build=build)


def class_target(path: str, settings: Mapping[str, Any]) -> Target:
    """`package.module.Class` (or `package.module:Class`), imported with the current folder on sys.path
    (as `python -m` has it), so a class in a file beside the user is found."""
    module_name, _, name = path.replace(":", ".").rpartition(".")
    if not module_name:
        raise ConfigurationError(
            f"check-system: {path!r} is neither a class path (package.module.Class) nor an http URL"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"check-system: cannot import {module_name} ({exc}): run from the folder that "
                                 "holds it, or put that folder on PYTHONPATH") from None  # fmt: skip
    cls = getattr(module, name, None)
    if not inspect.isclass(cls):
        raise ConfigurationError(f"check-system: {module_name} has no class {name}")

    system_class: type[MemorySystem] = cls  # type: ignore[assignment]  # any class: the checks say what it lacks

    def build(context: SystemContext, failing: str | None) -> MemorySystem:
        return system_class(**settings, context=context)  # type: ignore[call-arg]

    method = {"_target_": f"{module_name}.{name}", **_defaults(cls), **settings}
    return Target(label=f"{module_name}.{name}", cls=system_class, method=method, build=build)


def _defaults(cls: type) -> dict[str, Any]:
    """The constructor's keyword defaults (a subclass passing **kwargs on to its base included): what a
    method config file lists, for the dry run's cost_plan."""
    defaults: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        init = vars(klass).get("__init__")
        if klass is object or init is None:
            continue
        try:
            parameters = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in parameters:
            if p.default is not inspect.Parameter.empty and p.name != "context":
                defaults[p.name] = p.default
    return defaults
