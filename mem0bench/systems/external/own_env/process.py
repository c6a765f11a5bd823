"""A service script run by a system's own venv: started on its data folder with its settings (secrets
included) as one JSON line on stdin, never on a command line or on disk; ready when it prints `PORT <n>`;
stopped with the run, and stopped at the next start if a killed run left it behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.private import private_dir

__all__ = ["KIT_DIR", "ServiceProcess"]

KIT_DIR = Path(__file__).with_name("kit")
"""On the service's PYTHONPATH (alone: nothing of mem0bench is importable there), for `service_kit`."""
_PID_FILE = "service.pid"


class ServiceProcess:
    """One service process: `script` run by `python` in `data` (its folder: data, pid and log)."""

    def __init__(self, *, label: str, python: Path, script: Path, data: Path) -> None:
        self.label, self.python, self.script, self.data = label, python, script, data
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.data / "service.log"

    def start(self, settings: dict[str, Any], *, env: dict[str, str] | None = None) -> int:
        """Start it -> its port. ConfigurationError (one line naming its log) when it does not come up."""
        private_dir(self.data)
        self.stop_orphan()
        environment = {**os.environ, **(env or {}), "PYTHONPATH": str(KIT_DIR)}
        log = self.log.open("ab")
        try:
            process = subprocess.Popen(
                [str(self.python), str(self.script)], cwd=self.data, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, start_new_session=True, env=environment,
            )  # fmt: skip
        except OSError as exc:
            raise ConfigurationError(
                f"{self.label}: cannot start its service ({self.python}): {exc}"
            ) from None
        finally:
            log.close()
        self._process = process
        (self.data / _PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(json.dumps(settings).encode() + b"\n")
            process.stdin.close()
        line = process.stdout.readline().decode(errors="replace").strip()
        if not line.startswith("PORT "):
            self.stop()
            raise ConfigurationError(
                f"{self.label}: its service did not start (exit {process.returncode}); its log: {self.log}"
            )
        return int(line.split()[1])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def stop_orphan(self) -> None:
        """The service an earlier instance (a killed run, or one not closed) left on this folder, stopped:
        embedded stores (qdrant's local mode, an embedded database) admit one process per folder."""
        try:
            pid = int((self.data / _PID_FILE).read_text(encoding="utf-8").strip())
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return
        if str(self.script).encode() not in command:
            return  # the pid is another program's now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                time.sleep(0.1)
                if not Path(f"/proc/{pid}").exists():
                    return
            os.kill(pid, signal.SIGKILL)
