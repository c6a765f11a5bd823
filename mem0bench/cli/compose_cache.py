"""Hydra's composed config, kept per input: `run` skips composing a command line it composed before.

Composing is ~0.15-0.25 s of pure-Python work before a run's first request (ANTLR parses every override,
OmegaConf merges and deep-copies each config file, `python -m benchmarks startup` measures it), and its
result is a function of what it reads. The key holds all of it: the command line's overrides and the
config name, the run mode, the bytes of every file in our config folder, the search path, the Hydra
plugins loaded, the versions of Python, Hydra and OmegaConf, the version base, the job name and the
current folder. A composition that read anything else is not kept:

- a search path beyond Hydra's own configs and ours (`--config-dir`, a searchpath plugin, or
  `hydra.searchpath` set anywhere), whose files the key does not hold;
- environment values copied in (`hydra.job.env_copy`) or set (`hydra.job.env_set`);
- an override naming a secret (`common.secrets`): a secret is never written to disk.

Interpolations (`${now:...}`, `${oc.env:...}`) are still unresolved when composing ends, so they are
resolved afresh on every run, hit or miss. A failed composition is never kept: errors are Hydra's own,
every time. Entries are pickles read back with an unpickler that builds only OmegaConf's and Hydra's
config classes, from a folder only the user can write (0700). An unreadable entry is composed again and
replaced; `MEM0BENCH_COMPOSE_CACHE=off` turns the cache off (`mem0bench.paths`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mem0bench.common.secrets import is_secret_key
from mem0bench.paths import CONFIG_DIR, compose_cache_home

__all__ = ["FORMAT", "cached_compose", "composition_key"]

FORMAT = 1
"""Bumped when what an entry holds, or how it is keyed, changes."""
MAX_ENTRIES = 256
"""Older entries (by last use) are removed beyond this many."""

_HYDRA_OWN = ("hydra", "pkg://hydra.conf")
_STRUCTURED = ("schema", "structured://")


def _config_files_digest(config_dir: Path) -> str:
    """sha256 over every file below `config_dir`: its path relative to the folder, and its bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in config_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(config_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def composition_key(
    search_path: list[tuple[str, str]],
    config_name: str | None,
    overrides: list[str],
    run_mode: str,
    from_shell: bool,
    validate_sweep_overrides: bool,
    config_dir: Path = CONFIG_DIR,
) -> str | None:
    """The entry's name for these inputs, or None when the composition may read what the key lacks."""
    # A search path set by an override or a config file is the composed config's `hydra.searchpath`:
    # `_keepable` refuses it, since only the result says whether one was set.
    if search_path != [_HYDRA_OWN, ("main", str(config_dir)), _STRUCTURED]:
        return None
    if any(is_secret_key(_override_key(o)) for o in overrides):
        return None
    import hydra
    import omegaconf
    from hydra.core.utils import JobRuntime
    from hydra.version import getbase

    material = {
        "format": FORMAT,
        "python": sys.version,
        "hydra": hydra.__version__,
        "omegaconf": omegaconf.__version__,
        "version_base": str(getbase()),
        "job_name": JobRuntime().get("name"),
        "cwd": os.getcwd(),
        "config_name": config_name,
        "overrides": overrides,
        "run_mode": run_mode,
        "from_shell": from_shell,
        "validate_sweep_overrides": validate_sweep_overrides,
        "search_path": search_path,
        "plugins": sorted(name for name in sys.modules if name.startswith("hydra_plugins.")),
        "configs": _config_files_digest(config_dir),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _override_key(override: str) -> str:
    """`++a.b=1` -> `a.b`; `~a.b` -> `a.b`."""
    return override.split("=", 1)[0].lstrip("+~").strip()


def _keepable(cfg: Any) -> bool:
    """False when the composed config holds environment values, or a search path the key does not cover."""
    job = cfg.hydra.job
    return not (job.env_copy or job.env_set or cfg.hydra.searchpath)


# What an entry may build: OmegaConf's and Hydra's config classes and the containers inside them.
_SAFE_BUILTINS = frozenset({"dict", "list", "set", "frozenset", "tuple", "str", "int", "float", "bool"})
_SAFE_NAMES = {
    "builtins": _SAFE_BUILTINS,
    "collections": frozenset({"defaultdict", "OrderedDict"}),
    "typing": frozenset({"Any", "Dict", "List", "Optional", "Tuple", "Union"}),
}


class _ConfigUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name in _SAFE_NAMES.get(module, ()):
            return super().find_class(module, name)
        if module.split(".")[0] in ("omegaconf", "hydra"):
            found = super().find_class(module, name)
            if isinstance(found, type):  # classes only: no function of theirs is called while loading
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not a config class")


def _read(path: Path) -> Any | None:
    from omegaconf import DictConfig

    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        cfg = _ConfigUnpickler(io.BytesIO(data)).load()
    except Exception:  # a torn or foreign entry: composed again, and replaced
        return None
    if not isinstance(cfg, DictConfig):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # last use, for pruning
    return cfg


def _entry_bytes(cfg: Any) -> bytes:
    """`cfg` pickled without the values its resolvers cached while composing: Hydra resolves `${now:...}`
    patterns of its own defaults then, and an entry that kept them would give a later run stale times."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.get_cache(cfg)
    OmegaConf.clear_cache(cfg)
    try:
        return pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        OmegaConf.set_cache(cfg, resolved)  # this run keeps what it resolved


def _write(folder: Path, path: Path, cfg: Any) -> None:
    from mem0bench.common.files import atomic_write

    data = _entry_bytes(cfg)
    # Best effort: a cache that cannot be written only means composing again next time.
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(path, data)
        entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in entries[MAX_ENTRIES:]:
            stale.unlink(missing_ok=True)


@contextlib.contextmanager
def cached_compose() -> Iterator[None]:
    """While inside, Hydra's config loader answers from the cache when the same inputs were composed."""
    folder = compose_cache_home()
    if folder is None:
        yield
        return
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    compose = ConfigLoaderImpl.load_configuration

    def load_configuration(
        self: ConfigLoaderImpl,
        config_name: str | None,
        overrides: list[str],
        run_mode: Any,
        from_shell: bool = True,
        validate_sweep_overrides: bool = True,
    ) -> Any:
        search_path = [(e.provider, e.path) for e in self.config_search_path.get_path()]
        key = composition_key(
            search_path, config_name, list(overrides), run_mode.name, from_shell, validate_sweep_overrides
        )
        if key is None:
            return compose(self, config_name, overrides, run_mode, from_shell, validate_sweep_overrides)
        path = folder / f"{key}.pickle"
        if (cached := _read(path)) is not None:
            return cached
        cfg = compose(self, config_name, overrides, run_mode, from_shell, validate_sweep_overrides)
        if _keepable(cfg):
            _write(folder, path, cfg)
        return cfg

    ConfigLoaderImpl.load_configuration = load_configuration  # type: ignore[method-assign]
    try:
        yield
    finally:
        ConfigLoaderImpl.load_configuration = compose  # type: ignore[method-assign]
