"""judge_check.json as markdown (the .md file beside it, and what the command prints), and both written.

Rates in %, with their Wilson 95% intervals; the stress table per family and kind, overall and per scored
category of the suite (`n/a` where a stress kind does not apply to a category).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mem0bench.common.files import atomic_write
from mem0bench.judge_check.calibration import SCORED_CATEGORIES
from mem0bench.rundir.directory import write_json
from mem0bench.suites import get_suite

__all__ = ["render_markdown", "write_check"]


def _fmt_rate(r: dict[str, Any]) -> str:
    if r["rate"] is None:
        return "-"
    lo, hi = r["ci95"]
    return f"{100 * r['rate']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] (n={r['n']})"


def render_markdown(result: dict[str, Any]) -> str:
    j = result["judge"]
    on = f" on {result['suite']} (its own grading)" if result.get("suite") else ""
    lines = [
        f"**judge-check: {j['model']} ({j['prompt']}, {j['mode']}, {j['runs']} run(s)), {result['items']} "
        f"items{on}**",
        "",
        "Rates in %, Wilson 95% interval in brackets. False accept: a known-wrong answer judged CORRECT; "
        "false reject: a known-right answer judged WRONG.",
        "",
        "| scope | false accept | false reject | judge failures |",
        "|---|---|---|---:|",
    ]
    for name, b in [*result["categories"].items(), ("overall", result["overall"])]:
        lines.append(
            f"| {name} | {_fmt_rate(b['false_accept'])} | {_fmt_rate(b['false_reject'])} | {b['failed']} |"
        )
    partial = result["overall"].get("partial")
    if partial is not None:
        lines += ["", f"Graded scale: a PARTIAL counts 0.5 (half an error on a known-wrong item, as it is half "
                  f"a point of J); {partial} item(s) judged PARTIAL."]  # fmt: skip
    lines += ["", "| item kind | judged against its known label |", "|---|---|"]
    lines += [f"| {k} | {_fmt_rate(r)} |" for k, r in result["kinds"].items()]
    stress = result.get("stress")
    if stress:
        lines += _stress_lines(stress, result.get("suite"), result.get("not_applicable", []))
    if result.get("not_applicable"):
        lines += ["", f"Not applicable on {result['suite']} (no item made, so no rate):", ""]
        lines += [f"- {n['scope']}: {', '.join(n['kinds'])}: {n['why']}" for n in result["not_applicable"]]
    probe = result.get("probe")
    if probe:
        lines += _probe_lines(probe)
    opinion = result.get("second_opinion")
    if opinion:
        lines += [
            "",
            f"Second opinion: {opinion['run']}",
            "",
            "| scope | n | agreement | Cohen's kappa |",
            "|---|---:|---:|---:|",
        ]
        for name, b in [*opinion["categories"].items(), ("overall", opinion["overall"])]:
            agree = "-" if b["agreement"] is None else f"{100 * b['agreement']:.1f}"
            kappa = "-" if b["cohen_kappa"] is None else f"{b['cohen_kappa']:.3f}"
            lines.append(f"| {name} | {b['n']} | {agree} | {kappa} |")
    return "\n".join(lines) + "\n"


def _stress_lines(stress: dict[str, Any], suite: str | None, absent: list[dict[str, Any]]) -> list[str]:
    """The stress table; on another suite than LOCOMO its scored categories, `n/a` in a column where the
    stress kinds do not apply (`absent`: the not_applicable entries)."""
    scored = SCORED_CATEGORIES if suite is None else get_suite(suite).scored
    names = [c.label for c in scored]
    no_stress = {n["scope"] for n in absent if "stress kinds" in n["kinds"]}
    where = "per LOCOMO category" if suite is None else f"per {get_suite(suite).title} category"
    lines = [
        "",
        f"Stress test: {stress['items']} known-WRONG answers made from the "
        f"{'cues' if suite == 'locomo_plus' else 'golds'}; false accepts in %, "
        f"Wilson 95% interval, per family and kind, overall and {where}.",
        "",
        "| family / kind | overall | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    rows = [(f"**{k}**", b) for k, b in stress["families"].items()] + list(stress["kinds"].items())
    for name, b in rows:
        cells = [
            _fmt_rate(b["categories"][c]) if c in b["categories"] else "n/a" if c in no_stress else "-"
            for c in names
        ]
        lines.append(f"| {name} | {_fmt_rate(b['overall'])} | " + " | ".join(cells) + " |")
    return lines


def _probe_lines(probe: dict[str, Any]) -> list[str]:
    def theirs(b: dict[str, Any]) -> str:
        share = b["theirs_accept"]
        return "-" if share is None else f"{100 * share:.1f} ({b['theirs_judgments']} judgments)"

    lines = [
        "",
        f"Probe: {probe['file']} ({probe['matched']} known-WRONG answers matched): accepted in %",
        "",
        "| scope | our judge (false accept) | the file's judge | agreement | Cohen's kappa |",
        "|---|---|---|---:|---:|",
    ]
    for name, b in [*probe["categories"].items(), ("overall", probe["overall"])]:
        agreement = b["agreement"]
        agree = "-" if agreement["agreement"] is None else f"{100 * agreement['agreement']:.1f}"
        kappa = (
            "-" if agreement["cohen_kappa"] is None else f"{round(agreement['cohen_kappa'], 3) + 0.0:.3f}"
        )  # no -0.000
        lines.append(f"| {name} | {_fmt_rate(b['ours_false_accept'])} | {theirs(b)} | {agree} | {kappa} |")
    return lines


def write_check(out: Path, result: dict[str, Any]) -> str:
    """judge_check.json and judge_check.md in `out` (made if missing); the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "judge_check.json", result)
    text = render_markdown(result)
    atomic_write(out / "judge_check.md", text)
    return text
