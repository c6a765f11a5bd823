"""A system's own virtual environment: `python -m mem0bench setup-system NAME` makes it once.

It lives under the user's cache folder (private: 0700), named after the system and the hash of its pinned
requirements file: a new pin makes a new venv, and an old one is never half upgraded. A marker file written
last says the install finished.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.private import private_dir
from mem0bench.paths import cache_home

__all__ = ["OwnVenv"]

_READY = ".mem0bench-ready"


def _python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


@dataclass(frozen=True)
class OwnVenv:
    """`system`'s venv, installed from `requirements` (pinned); `packages` are the versions run.json records."""

    system: str
    requirements: Path
    packages: tuple[str, ...]
    what: str = ""
    """What the venv holds, for the one-line error (e.g. "mem0ai 2.x")."""

    @property
    def setup_command(self) -> str:
        return f"python -m mem0bench setup-system {self.system}"

    def folder(self) -> Path:
        digest = hashlib.sha256(self.requirements.read_bytes()).hexdigest()[:12]
        return cache_home() / "systems" / f"{self.system}-{digest}"

    def python(self) -> Path:
        """The venv's interpreter; ConfigurationError (one line, the command to run) when it is not set up."""
        folder = self.folder()
        if not (folder / _READY).is_file():
            raise ConfigurationError(
                f"{self.system} runs {self.what or 'its pinned packages'} in its own environment, not set up "
                f"yet ({folder}): run `{self.setup_command}`"
            )
        return _python(folder)

    def installed_versions(self) -> dict[str, str]:
        """The versions the venv holds (read from its metadata: no interpreter started)."""
        wanted = {name.lower() for name in self.packages}
        found: dict[str, str] = {}
        for site in sorted(self.folder().glob("lib/python*/site-packages")):
            for dist in metadata.distributions(path=[str(site)]):
                name = dist.metadata["Name"]
                if name and name.lower() in wanted:
                    found[name.lower()] = dist.version
        return found

    def setup(self, *, quiet: bool = False) -> Path:
        """Make the venv (if not made) and install the pinned requirements; -> its interpreter. Uses this
        interpreter's `venv` and the user's own pip settings (index, proxy)."""
        folder = self.folder()
        if (folder / _READY).is_file():
            return _python(folder)
        private_dir(folder.parent)
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(folder)],
            [str(_python(folder)), "-m", "pip", "install", *(["-q"] if quiet else []), "-r",
             str(self.requirements)],
        ]  # fmt: skip
        for step in steps:
            done = subprocess.run(step, check=False)
            if done.returncode != 0:
                raise ConfigurationError(
                    f"setting up {self.system}'s environment failed (exit {done.returncode}): {' '.join(step)}"
                )
        private_dir(folder)
        (folder / _READY).write_text("ok\n", encoding="utf-8")
        return _python(folder)
