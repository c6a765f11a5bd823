"""Where mem0bench keeps its data and its cache by default: per user, the same from any folder.

* cache (every paid LLM reply and embedding): `$MEM0BENCH_CACHE_DIR`, else `$XDG_CACHE_HOME/mem0bench`,
  else `~/.cache/mem0bench`;
* data (locomo10.json): `$MEM0BENCH_DATA_DIR`, else `$XDG_DATA_HOME/mem0bench`, else
  `~/.local/share/mem0bench`.

The Hydra configs ship inside the package (`CONFIG_DIR`).

`cache.dir=...` and `dataset.data_dir=...` (or `dataset.path=...`) override them; a relative override is
taken from the current folder, as any path on a command line.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

__all__ = ["CONFIG_DIR", "cache_home", "data_home"]

# mem0bench/configs; in a checkout a symlink to the top-level configs/, which stays the source. So an
# installed wheel finds them wherever it is run from.
CONFIG_DIR = Path(str(resources.files("mem0bench") / "configs"))


def _home(override: str | os.PathLike[str] | None, env: str, xdg: str, fallback: str) -> Path:
    chosen = override or os.environ.get(env)
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get(xdg)
    return (Path(base) if base else Path.home() / fallback) / "mem0bench"


def cache_home(override: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: `override` (cache.dir), else the per-user default."""
    return _home(override, "MEM0BENCH_CACHE_DIR", "XDG_CACHE_HOME", ".cache")


def data_home(override: str | os.PathLike[str] | None = None) -> Path:
    """The data folder: `override` (dataset.data_dir), else the per-user default."""
    return _home(override, "MEM0BENCH_DATA_DIR", "XDG_DATA_HOME", ".local/share")
