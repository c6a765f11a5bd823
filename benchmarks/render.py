"""The figures as people read them: plain-text tables for the terminal, markdown for docs/benchmarks.md."""

from __future__ import annotations

from typing import Any

Row = tuple[str, str, str, str]  # figure, value, target, result
HEADER = ("figure", "value", "target", "result")


def fmt(value: Any, digits: int = 2) -> str:
    """A figure for a table: thousands separators, `digits` decimals, "n/a" for a missing one."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def _table(rows: list[Row], header: tuple[str, ...]) -> str:
    """Left-aligned columns, two spaces apart, under a dashed rule."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    return "\n".join(out)


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else "PASS" if ok else "FAIL"


def overhead_rows(res: dict[str, Any]) -> list[Row]:
    """The rows of an `overhead` result."""
    full = res["full_run"]
    checks = {c["figure"]: c for c in res["checks"]}

    def target(name: str) -> tuple[str, str]:
        c = checks.get(name)
        return (c["target"], _verdict(c["pass"])) if c else ("", "")

    rows = [
        ("conversations / turns / questions", f"{full['n_conversations']} / {full['n_turns']:,} / "
         f"{full['n_questions']:,}", "", ""),
        ("wall time, full run (s)", fmt(full["wall_s"], 1), "", ""),
        ("HTTP requests: chat / embeddings", f"{full['http']['chat']:,} / {full['http']['embeddings']:,}",
         "", ""),
        ("client calls incl. in-run cache hits", fmt(sum(s["calls"] for s in full["ledger"].values())), "", ""),
        ("harness CPU user+sys (s)", f"{full['cpu_s']:.1f} ({full['user_s']:.1f} + {full['sys_s']:.1f})",
         "", ""),
        ("harness CPU per LLM call (ms)", fmt(full.get("cpu_ms_per_call"), 3),
         *target("harness CPU per LLM call (ms)")),
    ]  # fmt: skip
    if "startup" in res:
        st = res["startup"]
        rows.append(
            ("  startup alone (dry run): CPU s / wall s", f"{st['cpu_s']:.2f} / {st['wall_s']:.2f}", "", "")
        )
        rows.append(
            ("  CPU per call after startup (ms)", fmt(full.get("cpu_ms_per_call_after_startup"), 3), "", "")
        )
    rows += [
        ("harness peak RSS (MB)", fmt(full["peak_rss_mb"], 0), *target("harness peak RSS (MB)")),
        ("stand-in CPU, own process (s)", fmt(full["standin_cpu_s"], 1), "", ""),
        ("ingestion finished after (s, in full run)", fmt(full["ingest_done_s"], 1), "", ""),
    ]
    ing = res.get("ingest_run")
    if ing:
        rows += [
            ("ingestion run (1 question/conv.): wall (s)", fmt(ing["wall_s"], 1), "", ""),
            ("ingestion run: HTTP chat / embeddings", f"{ing['http']['chat']:,} / {ing['http']['embeddings']:,}",
             "", ""),
            ("ingestion run: CPU per call (ms)", fmt(ing.get("cpu_ms_per_call"), 3), "", ""),
        ]  # fmt: skip
    pt = full["ingest_per_turn"] or {}
    rows += [
        ("ingest per turn: chat / embedding calls", f"{fmt(pt.get('chat_calls'))} / "
         f"{fmt(pt.get('embedding_calls'))}", "", ""),
        ("ingest per turn: prompt / completion tokens", f"{fmt(pt.get('prompt_tokens'), 0)} / "
         f"{fmt(pt.get('completion_tokens'), 0)}", "", ""),
        ("memory store per conversation (tokens)", fmt(full["memory_tokens_mean"], 0), "", ""),
        ("local search p50 / p95 / max (ms)", f"{fmt(full['local_search_ms']['p50'], 3)} / "
         f"{fmt(full['local_search_ms']['p95'], 3)} / {fmt(full['local_search_ms']['max'], 1)}",
         *target("local search p95 (ms)")),
        ("search latency p50 / p95 (ms)", f"{fmt(full['search_latency_ms']['p50'], 2)} / "
         f"{fmt(full['search_latency_ms']['p95'], 2)}", "", ""),
    ]  # fmt: skip
    return rows


def overlap_rows(res: dict[str, Any]) -> list[Row]:
    """The rows of an `overlap` result."""
    run = res["run"]
    ideal = run["ideal"]
    check = res["checks"][0]
    rows = [
        ("conversations / questions / judge runs", f"{run['n_conversations']} / {run['n_questions']} / "
         f"{run['judge_runs']}", "", ""),
        ("latency per call (ms)", fmt(res["latency_ms"], 0), "", ""),
        ("HTTP requests: chat / embeddings", f"{run['http']['chat']:,} / {run['http']['embeddings']:,}", "", ""),
        ("wall time (s)", fmt(run["wall_s"], 1), "", ""),
        ("calls x latency / wall", fmt(run["overlap"], 2), check["target"], _verdict(check["pass"])),
    ]  # fmt: skip
    if "overlap_after_startup" in run:
        rows.append(("  same, startup (dry-run wall) excluded", fmt(run["overlap_after_startup"], 2), "", ""))
    rows += [
        ("peak requests in flight (stand-in)", fmt(run["standin_max_in_flight"]), "", ""),
        ("llm.max_concurrency / ingest streams", f"{ideal['max_concurrency']} / {ideal['parallel_streams']}", "", ""),
        ("ideal wall: critical path / capacity (s)", f"{ideal['critical_path_s']:.1f} / "
         f"{ideal['capacity_bound_s']:.1f}", "", ""),
        ("ideal calls x latency / wall", fmt(ideal["parallelism"], 2), "", ""),
        ("achieved / ideal (ideal wall / wall)", fmt(run["achieved_over_ideal"], 2), "", ""),
    ]  # fmt: skip
    measured = run.get("ideal_measured_roundtrip")
    if measured:
        rt = measured["roundtrip_ms"]
        rows += [
            (f"bare-client round trip, {measured['parallel_streams']} chains: mean / p50 (ms)",
             f"{rt['mean']:.1f} / {rt['p50']:.1f}", "", ""),
            ("ideal wall with that round trip (s)", fmt(measured["wall_s"], 1), "", ""),
            ("achieved / that ideal", fmt(run["achieved_over_ideal_measured"], 2), "", ""),
        ]  # fmt: skip
    rows += [
        ("harness CPU (s) / peak RSS (MB)", f"{run['cpu_s']:.1f} / {run['peak_rss_mb']:.0f}", "", ""),
    ]  # fmt: skip
    return rows


def search_rows(res: dict[str, Any]) -> list[Row]:
    """The rows of a `search` result: in run and isolated, for each method."""
    rows: list[Row] = []
    for method, m in res["methods"].items():
        for where, key, check in (("in run", "in_run_ms", 0), ("isolated", "isolated_ms", 1)):
            s = m[key]
            c = m["checks"][check]
            rows.append(
                (
                    f"{method} local search, {where}: p50 / p95 / max (ms), n={s['n']}",
                    f"{fmt(s['p50'], 3)} / {fmt(s['p95'], 3)} / {fmt(s['max'], 2)}",
                    c["target"],
                    _verdict(c["pass"]),
                )
            )
    return rows


def bridge_rows(res: dict[str, Any]) -> list[Row]:
    """The rows of a `bridge` result: mem0's library directly and through `+exp=mem0_oss`."""
    d, b, r = res["direct"], res["bridged"], res["ratios"]
    checks = {c["figure"]: c for c in res["checks"]}

    def target(name: str) -> tuple[str, str]:
        c = checks[name]
        return c["target"], _verdict(c["pass"])

    def ms(s: dict[str, Any]) -> str:
        return f"{fmt(s['p50'])} / {fmt(s['p95'])}"

    return [
        ("direct: questions / adds / requests", f"{d['questions']} / {d['adds']} / {d['http']['total']:,}", "", ""),
        ("direct: one search p50 / p95 (ms)", ms(d["search_ms"]), "", ""),
        ("direct: a question's two searches p50 / p95 (ms)", ms(d["question_ms"]), "", ""),
        ("bridged: isolated search p50 / p95 (ms)", ms(b["isolated_search_ms"]), "", ""),
        ("bridged: inline search p50 / p95 (ms)", ms(b["inline_search_ms"]), "", ""),
        ("search p50, bridged / direct question", fmt(r["search_p50_bridged_vs_direct_question"]),
         *target("mem0_oss isolated search p50 / direct (both speakers)")),
        ("CPU per request, direct: whole / after start-up (ms)",
         f"{fmt(d['cpu_ms_per_request'])} / {fmt(d['cpu_ms_per_request_after_startup'])}", "", ""),
        ("CPU per request, bridged: whole / after start-up (ms)",
         f"{fmt(b['cpu_ms_per_request'])} / {fmt(b['cpu_ms_per_request_after_startup'])}", "", ""),
        ("CPU per request, bridged / direct (after start-up)", fmt(r["cpu_per_request_bridged_vs_direct"]),
         *target("mem0_oss CPU per request / direct (after start-up)")),
        ("load average 1 min: direct, bridged (start -> end)",
         f"{d['loadavg_1m'][0]} -> {d['loadavg_1m'][1]}, {b['loadavg_1m'][0]} -> {b['loadavg_1m'][1]}", "", ""),
    ]  # fmt: skip


def _section(res: dict[str, Any]) -> tuple[str, str, list[Row], list[dict[str, Any]]] | None:
    """One result's terminal title, markdown title, rows and the runs it made; None for an unknown one."""
    if res["command"] == "overhead":
        detail = f"zero-latency stand-in, judge.runs={res['judge_runs']}"
        runs = [res.get("startup"), res.get("ingest_run"), res["full_run"]]
        title = f"overhead: {res['method']}"
        return f"{title}, {detail}", f"{title} ({detail})", overhead_rows(res), [r for r in runs if r]
    if res["command"] == "overlap":
        detail = f"{res['latency_ms']:g} ms a call, default settings"
        runs = [res.get("startup"), res["run"]]
        title = f"overlap: {res['method']}"
        return f"{title}, {detail}", f"{title} ({detail})", overlap_rows(res), [r for r in runs if r]
    if res["command"] == "search":
        title = "search time excluding network"
        return title, title, search_rows(res), []
    if res["command"] == "bridge":
        title = f"bridge: mem0ai directly vs +exp=mem0_oss, {res['conversation']}, zero-latency stand-in"
        return title, title, bridge_rows(res), []
    return None


def render_text(results: list[dict[str, Any]]) -> str:
    """Each result as a titled plain-text table."""
    parts = []
    for res in results:
        section = _section(res)
        if section is not None:
            title, _, rows, _ = section
            parts.append(title + "\n" + _table(rows, HEADER))
    return "\n\n".join(parts)


def _md_table(rows: list[Row], header: tuple[str, ...]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).strip() for c in r) + " |" for r in rows]
    return "\n".join(out)


def render_markdown(results: list[dict[str, Any]], machine: dict[str, Any], bench_command: str) -> str:
    """The block for docs/benchmarks.md: the machine, the command, then each result's table, the
    commands it ran and the load average around each."""
    lines = [
        f"Measured {machine['date']} on {machine['nproc']} CPUs ({machine['cpu_model']}), "
        f"{machine['memory_gb']} GB RAM, Python {machine['python']}; load average at start "
        f"{machine['loadavg_1m']}.",
        "",
        f"    {bench_command}",
        "",
    ]
    for res in results:
        section = _section(res)
        if section is None:
            continue
        _, title, rows, runs = section
        lines += [f"### {title}", "", _md_table(rows, HEADER)]
        if runs:
            lines += ["", "Commands run (each with its own fresh `MEM0BENCH_CACHE_DIR`):", ""]
            lines += [f"    {r['command']}" for r in runs]
            loads = ", ".join(f"{r['label']}: {r['loadavg_1m'][0]} -> {r['loadavg_1m'][1]}" for r in runs)
            lines += ["", f"Load average (1 min) before -> after: {loads}."]
        lines.append("")
    return "\n".join(lines)
