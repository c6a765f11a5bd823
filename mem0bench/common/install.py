"""The `pip install` line that adds an extra to the mem0bench being run, wherever it came from.

From a checkout (the package imported from a source tree whose pyproject.toml is mem0bench's), the
editable install of that tree: `pip install -e '.[local]'` in the tree, its absolute path elsewhere.
Installed (a wheel, `pip install .`), the package by name: pip takes the installed mem0bench as satisfying
the requirement and installs only the extra's packages, so `pip install 'mem0bench[local]'` works from any
folder. A hint that names `.` outside a checkout would install whatever project the user stands in.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["checkout_root", "install_hint"]

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_NAME = re.compile(r'^name\s*=\s*["\']mem0bench["\']\s*$', re.MULTILINE)


@cache
def checkout_root(package_dir: Path = _PACKAGE_DIR) -> Path | None:
    """The source tree the package was imported from, or None for an installed package."""
    pyproject = package_dir.parent / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return package_dir.parent if _NAME.search(text) else None


def install_hint(extra: str, package_dir: Path = _PACKAGE_DIR) -> str:
    """`pip install ...` adding `extra` (a name in pyproject.toml's optional-dependencies)."""
    root = checkout_root(package_dir)
    if root is None:
        return f"pip install 'mem0bench[{extra}]'"
    try:
        here = Path.cwd().resolve() == root
    except OSError:  # the current folder was removed
        here = False
    return f"pip install -e '{'.' if here else root}[{extra}]'"
