"""What the figures were measured on (the machine may be shared, so the load is recorded too, and on a
virtual machine the CPU time the host took back: steal)."""

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
        usable = os.cpu_count() or 1
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


def cpu_ticks() -> tuple[int, int] | None:
    """(steal, total) clock ticks of all CPUs since boot, from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice)
    return (fields[7], sum(fields[:8])) if len(fields) >= 8 else None


def steal_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of CPU time between two `cpu_ticks()` that the host gave to other guests, in percent.

    A "quiet" virtual machine can still be slow: with the host busy, every figure here grows while the
    load average stays low (this VM's own speed moved by ~40% between sittings). Steal shows it."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round(100 * (after[0] - before[0]) / (after[1] - before[1]), 1)


def _proc_field(path: str, prefix: str) -> str | None:
    """The value after the colon of the first line of a /proc file starting with `prefix`."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
