"""mem0 2.x's own virtual environment: `python -m mem0bench setup-system mem0_v2` makes it once.

mem0ai 2.x cannot share an environment with the 1.0.11 that `mem0_oss` and its graph variant need, so it
lives in a venv of its own, under the user's cache folder (private: 0700), named after the hash of the
pinned requirements.txt beside this file: a new pin makes a new venv, and an old one is never half
upgraded. A marker file written last says the install finished.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.private import private_dir
from mem0bench.paths import cache_home

__all__ = ["REQUIREMENTS", "SETUP_COMMAND", "installed_versions", "setup_venv", "venv_dir", "venv_python"]

REQUIREMENTS = Path(__file__).with_name("requirements.txt")
SETUP_COMMAND = "python -m mem0bench setup-system mem0_v2"
_READY = ".mem0bench-ready"


def venv_dir() -> Path:
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    return cache_home() / "systems" / f"mem0_v2-{digest}"


def _python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def venv_python() -> Path:
    """The venv's interpreter; ConfigurationError (one line, the command to run) when it is not set up."""
    folder = venv_dir()
    if not (folder / _READY).is_file():
        raise ConfigurationError(
            f"mem0_v2 runs mem0ai 2.x in its own environment, not set up yet ({folder}): run `{SETUP_COMMAND}`"
        )
    return _python(folder)


def installed_versions(names: tuple[str, ...] = ("mem0ai", "qdrant-client", "openai")) -> dict[str, str]:
    """The versions the venv holds (read from its metadata: no interpreter started)."""
    found: dict[str, str] = {}
    for site in sorted(venv_dir().glob("lib/python*/site-packages")):
        for dist in metadata.distributions(path=[str(site)]):
            name = dist.metadata["Name"]
            if name and name.lower() in names:
                found[name.lower()] = dist.version
    return found


def setup_venv(*, quiet: bool = False) -> Path:
    """Make the venv (if not made) and install the pinned requirements; -> its interpreter. Uses this
    interpreter's `venv` and the user's own pip settings (index, proxy)."""
    folder = venv_dir()
    if (folder / _READY).is_file():
        return _python(folder)
    private_dir(folder.parent)
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(folder)],
        [str(_python(folder)), "-m", "pip", "install", *(["-q"] if quiet else []), "-r", str(REQUIREMENTS)],
    ]
    for step in steps:
        done = subprocess.run(step, check=False)
        if done.returncode != 0:
            raise ConfigurationError(
                f"setting up mem0_v2's environment failed (exit {done.returncode}): {' '.join(step)}"
            )
    private_dir(folder)
    (folder / _READY).write_text("ok\n", encoding="utf-8")
    return _python(folder)
