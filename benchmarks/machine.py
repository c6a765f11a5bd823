"""What the figures were measured on (the machine may be shared, so the load is recorded too)."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def machine_info() -> dict[str, Any]:
    """nproc, CPU model, memory, Python, date and load."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    mem_kb = _proc_field("/proc/meminfo", "MemTotal:")
    return {
        "nproc": usable,
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "memory_gb": round(int(mem_kb.split()[0]) / 1024 / 1024, 1) if mem_kb else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def _proc_field(path: str, prefix: str) -> str | None:
    """The value after the colon of the first line of a /proc file starting with `prefix`."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
