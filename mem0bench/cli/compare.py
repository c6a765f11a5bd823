"""`mem0bench compare RUN_A RUN_B [--out DIR] [--intersect]`: B - A on the questions both runs answered.

Writes compare.json and compare.md (to --out, default RUN_B/compare-<A's folder name>) and prints the
table. Refuses, in one line, runs scored against different answer keys, and runs with different question
sets unless --intersect (then it says how many questions each run had alone).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mem0bench.cli.errors import report_errors
from mem0bench.cli.examples import with_examples
from mem0bench.common.errors import ConfigurationError


def compare_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mem0bench compare", description=__doc__.split("\n")[0], **with_examples("compare")
    )
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--out", type=Path, help="folder for compare.json and compare.md")
    parser.add_argument("--intersect", action="store_true", help="compare only the questions both runs have")
    parser.add_argument("--bootstrap", type=int, default=None, help="bootstrap replicates (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    args = parser.parse_args(argv)
    return report_errors(lambda: _compare(args))


def _compare(args: argparse.Namespace) -> int:
    from mem0bench.common.files import atomic_write
    from mem0bench.comparison.compare import CompareError, compare_pairs, pair_rows, panel_ranking
    from mem0bench.metrics.significance import fewest_pairs_for_significance
    from mem0bench.pipeline.statistics import BootstrapSettings
    from mem0bench.rundir.directory import write_json
    from mem0bench.rundir.schema import SchemaError, read_metrics, read_predictions

    try:
        settings = BootstrapSettings(args.bootstrap or 2000, args.seed)
        metrics_a = read_metrics(args.run_a / "metrics.json")
        metrics_b = read_metrics(args.run_b / "metrics.json")
        pairing = pair_rows(
            read_predictions(args.run_a / "predictions.jsonl"),
            read_predictions(args.run_b / "predictions.jsonl"),
            intersect=args.intersect,
        )
    except (SchemaError, CompareError, ValueError) as exc:
        raise ConfigurationError(str(exc)) from None
    result: dict[str, Any] = {
        "a": _describe(args.run_a, metrics_a.method, metrics_a.extra.get("judge_name")),
        "b": _describe(args.run_b, metrics_b.method, metrics_b.extra.get("judge_name")),
        **compare_pairs(pairing, settings),
        "only_a": pairing.only_a,
        "only_b": pairing.only_b,
        "bootstrap": {"replicates": settings.replicates, "seed": settings.seed},
    }
    panel = panel_ranking(metrics_a.extra.get("judge_panel"), metrics_b.extra.get("judge_panel"))
    if panel is not None:
        result["judge_panel"] = panel
    notes = []
    if pairing.only_a or pairing.only_b:
        notes.append(
            f"--intersect: {result['n_paired']} shared questions compared; "
            f"{pairing.only_a} only in A and {pairing.only_b} only in B left out"
        )
    if result["a"]["judge"] != result["b"]["judge"]:
        notes.append(
            f"the runs were judged by different judges ({result['a']['judge']} vs {result['b']['judge']})"
        )
    small = [name for name, block in _scopes(result) if block["judge"].get("too_small")]
    if small:
        fewest = fewest_pairs_for_significance()
        notes.append(
            f"the sample is too small for an interval or an MDD in {', '.join(small)} (fewer than {fewest} "
            f"questions judged in both runs): with fewer than {fewest} questions that differ, the exact "
            "McNemar test cannot reach p < 0.05 whatever the labels, so no difference can be told from chance"
        )
    result["notes"] = notes
    out = args.out or args.run_b / f"compare-{args.run_a.name}"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "compare.json", result)
    text = render_markdown(result)
    atomic_write(out / "compare.md", text)
    print(text)
    print(f"wrote {out / 'compare.json'} and {out / 'compare.md'}")
    return 0


def _describe(path: Path, method: str, judge: Any) -> dict[str, Any]:
    return {"run": str(path), "method": method, "judge": judge}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.2f}"


def _scopes(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [*result["categories"].items(), ("overall", result["overall"])]


def _ci(block: dict[str, Any]) -> str:
    ci = block.get("ci95")
    return (
        "too few"
        if block.get("too_small")
        else "-"
        if not ci
        else f"[{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]"
    )


def render_markdown(result: dict[str, Any]) -> str:
    from mem0bench.metrics.registry import per_question

    a, b = result["a"], result["b"]
    # The registry's table metrics beside J (F1, BLEU-1; one registered since where the comparison has it).
    shown = [m for m in per_question() if m.table and not m.from_judge and m.name in result["overall"]]
    lines = [
        f"**compare: B - A, {result['n_paired']} paired questions**",
        "",
        f"A = {a['method']} ({a['run']}, judge {a['judge']}); B = {b['method']} ({b['run']}, judge {b['judge']}).",
        "Differences in points (%). CI: 95% paired cluster-bootstrap interval (conversations, then questions); "
        "p: exact McNemar on majority judge labels; MDD: smallest true J difference detectable at 80% power.",
        "",
        "| scope | n | J A | J B | ΔJ | ΔJ 95% CI | p (McNemar) | MDD | "
        + "".join(f"Δ{m.title} | Δ{m.title} 95% CI | " for m in shown).rstrip(),
        "|---|---:|---:|---:|---:|---|---:|---:|" + "---:|---|" * len(shown),
    ]
    for name, s in _scopes(result):
        j = s["judge"]
        p = "-" if j.get("p_mcnemar") is None else f"{j['p_mcnemar']:.4g}"
        mdd = result["mdd"].get(name)
        mdd_text = "too few" if j.get("too_small") else "-" if mdd is None else f"{mdd:.2f}"
        lines.append(
            f"| {name} | {s['n']} | {_pct(j.get('a')).lstrip('+')} | {_pct(j.get('b')).lstrip('+')} | "
            f"{_pct(j['delta'])} | {_ci(j)} | {p} | {mdd_text} |"
            + "".join(f" {_pct(s[m.name]['delta'])} | {_ci(s[m.name])} |" for m in shown)
        )
    panel = result.get("judge_panel")
    if panel:
        lines += ["", "| judge (panel) | J A | J B | ΔJ |", "|---|---:|---:|---:|"]
        for name, j in panel["judges"].items():
            lines.append(
                f"| {name} | {_pct(j['a']).lstrip('+')} | {_pct(j['b']).lstrip('+')} | {_pct(j['delta'])} |"
            )
        verdict = "changes" if panel["ranking_changes"] else "does not change"
        lines.append(f"\nThe order of A and B {verdict} with the judge.")
    lines += ["", *(f"note: {n}" for n in result.get("notes", []))]
    return "\n".join(lines).rstrip() + "\n"
