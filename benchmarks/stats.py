"""Small numeric helpers: latency summaries and pass/fail checks (percentiles are the package's own)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mem0bench.metrics import percentile


def percentile_ms(values: Sequence[float], q: float) -> float | None:
    """`percentile` of values in seconds, in milliseconds."""
    v = percentile(values, q)
    return None if v is None else v * 1000.0


def summary_ms(values: Sequence[float], *, with_max: bool = True) -> dict[str, Any]:
    """n, p50, p95 (and max) in milliseconds of values in seconds."""
    out: dict[str, Any] = {
        "n": len(values),
        "p50": percentile_ms(values, 50),
        "p95": percentile_ms(values, 95),
    }
    if with_max:
        out["max"] = percentile_ms(values, 100)
    return out


def check(name: str, value: float | None, op: str, target: float) -> dict[str, Any]:
    """A figure against its target (`op` is "<=" or ">="); pass is None when there is no figure."""
    ok = None if value is None else (value <= target if op == "<=" else value >= target)
    return {"figure": name, "value": value, "target": f"{op} {target:g}", "pass": ok}


def checks_table(checks: Sequence[dict[str, Any]]) -> list[str]:
    """The markdown lines (after a blank line) of `check` results: figure, value, bound, verdict."""
    lines = ["", "| target | value | bound | result |", "|---|---|---|---|"]
    for c in checks:
        value = "-" if c["value"] is None else f"{c['value']:.2f}"
        verdict = "n/a" if c["pass"] is None else ("PASS" if c["pass"] else "FAIL")
        lines.append(f"| {c['figure']} | {value} | {c['target']} | {verdict} |")
    return lines
