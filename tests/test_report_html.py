"""report.html: self-contained, and what a person sees in a real browser (headless Chromium) is right.

Two real runs (rag and full_context, through the CLI against the stand-in server, on a tiny LOCOMO-format
file) feed `report --out DIR`; the page is opened in Debian's Chromium, filters are applied as a user
would (select / type, which fire the page's own events) and the counts and question elements shown are
compared with what predictions.jsonl says. The screenshot is kept as a test artifact.
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from tests.chromium import Browser, find_chromium
from tests.tiny_locomo import write_tiny_locomo

ARTIFACTS = Path(
    os.environ.get("MEM0BENCH_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "test-artifacts")
)

pytestmark = pytest.mark.slow


def _browser() -> str:
    """Chromium's binary; the browser tests are deselected by default (pyproject.toml), and selected with
    -m chromium they fail without it: never skip."""
    found = find_chromium()
    if found is None:
        pytest.fail("Debian's chromium package is not installed: apt-get install chromium", pytrace=False)
    return found


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two finished runs and the report built from them."""
    root = tmp_path_factory.mktemp("html")
    data = write_tiny_locomo(root / "tiny.json")
    with StandinServer(api_key=TEST_KEY) as server:
        env = cli_env(server.base_url, root / "cache")

        def run(exp: str) -> Path:
            run_dir = root / exp
            args = [
                "run",
                f"+exp={exp}",
                f"dataset.path={data}",
                "judge.runs=3",
                f"hydra.run.dir={run_dir}",
                *FAST,
                "llm.timeout_s=60",  # the stand-in is fast; a loaded machine is not
            ]
            result = run_cli(args, env)
            assert result.returncode == 0, result.stderr[-2000:]
            return run_dir

        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(run, ["rag", "full_context"]))
    out = root / "report"
    result = run_cli(["report", *map(str, runs), "--out", str(out)], env)
    assert result.returncode == 0, result.stderr[-2000:]
    return {
        "runs": runs,
        "html": out / "report.html",
        "rows": [read_jsonl(r / "predictions.jsonl") for r in runs],
    }


def _majority(labels: list) -> bool | None:
    given = [x for x in labels if x is not None]
    return None if not given else sum(x == "CORRECT" for x in given) > len(given) / 2


def test_the_page_needs_no_network(report):
    page = report["html"].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page), "the page loads something remote"
    assert "<link" not in page and not re.search(r"<script[^>]*\bsrc=", page)
    assert page.count("data:image/png;base64,") == 2  # both plots inline
    for row in report["rows"][0]:  # every question, its gold and the context text travel in the page
        assert json.dumps(row["qid"]) in page


def _select(browser: Browser, element_id: str, value: str) -> None:
    browser.evaluate(
        f"(() => {{ const s = document.getElementById({json.dumps(element_id)}); s.value = {json.dumps(value)};"
        " s.dispatchEvent(new Event('change')); })()"
    )


def _shown(browser: Browser) -> tuple[str, list[str]]:
    count = browser.evaluate("document.getElementById('count').textContent")
    qids = browser.evaluate(
        "[...document.querySelectorAll('[data-qid]:not(.hidden)')].map(e => e.dataset.qid)"
    )
    return count, qids


@pytest.mark.chromium
def test_what_a_person_sees_in_chromium(report, tmp_path):
    rag_rows, full_rows = report["rows"]
    qids = [r["qid"] for r in rag_rows]
    n = len(qids)
    rag_wrong = sorted(r["qid"] for r in rag_rows if _majority(r["judge"]) is False)
    temporal = sorted(r["qid"] for r in rag_rows if r["category"] == "temporal")
    full_by_qid = {r["qid"]: r for r in full_rows}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    with Browser(_browser(), tmp_path / "profile") as browser:
        browser.open(report["html"].resolve().as_uri())
        count, shown = _shown(browser)
        assert count == f"Showing {n} of {n} questions"
        assert sorted(shown) == sorted(qids)

        _select(browser, "f-run", "0")  # the rag run
        _select(browser, "f-verdict", "wrong")
        count, shown = _shown(browser)
        assert count == f"Showing {len(rag_wrong)} of {n} questions"
        assert sorted(shown) == rag_wrong
        stats = browser.evaluate("document.getElementById('runstats').textContent")
        assert stats.startswith("rag") and f"0/{len(rag_wrong)} judged correct" in stats

        _select(browser, "f-verdict", "")
        _select(browser, "f-run", "")
        _select(browser, "f-cat", "temporal")
        assert sorted(_shown(browser)[1]) == temporal
        _select(browser, "f-cat", "")

        # Typing in the search box: one question's own words find it.
        target = next(r for r in rag_rows if r["category"] == "single_hop")
        browser.evaluate(
            "(() => { const box = document.getElementById('f-text');"
            f" box.value = {json.dumps(target['question'])}; box.dispatchEvent(new Event('input')); }})()"
        )
        count, shown = _shown(browser)
        assert shown == [target["qid"]] and count == f"Showing 1 of {n} questions"

        # Opening it shows the gold answer, each run's answer and judge labels, and the full context with
        # the gold evidence turn marked.
        browser.evaluate(
            f"document.querySelector('[data-qid={json.dumps(target['qid'])}] > summary').click()"
        )
        deadline = time.monotonic() + 10
        while (
            not browser.evaluate("!!document.querySelector('[data-qid] .body')")
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        browser.evaluate(
            "document.querySelectorAll('[data-qid] .body details.ctxbox').forEach(d => d.open = true)"
        )
        body = browser.evaluate(
            f"document.querySelector('[data-qid={json.dumps(target['qid'])}] .body').innerText"
        )
        assert f"Gold: {target['gold']}" in body
        assert target["prediction"] in body and full_by_qid[target["qid"]]["prediction"] in body
        assert body.count("Judge:") == 2
        marked = browser.evaluate("[...document.querySelectorAll('.body .ctx mark')].map(m => m.textContent)")
        assert any("I moved to" in line for line in marked), marked  # the evidence turn D1:2 of the fixture
        shot = browser.screenshot(ARTIFACTS / "report_html.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_long_context_is_cut_with_a_note():
    from mem0bench.rundir.records import CONTEXT_KEEP_CHARS, keep_context

    assert keep_context("short") == "short"
    kept = keep_context("x" * (CONTEXT_KEEP_CHARS + 500))
    assert kept.startswith("x" * CONTEXT_KEEP_CHARS) and kept.endswith("[... 500 more characters not kept]")


def _twelve_runs(root: Path) -> Path:
    """Twelve runs of eight methods, each with its own settings (the union is ~20 hyperparameters)."""
    from tests.test_report import make_config, make_metrics, write_run

    methods = [
        ("mem0", {"top_k": 30, "per_speaker": True, "update": "per_fact", "summary_every": 5, "m": 10}),
        ("mem0g", {"top_k": 30, "threshold": 0.7, "reuse_threshold": 0.9, "relations_top_k": 20, "m": 10}),
        *[("rag", {"chunk_size": size, "k": k}) for size, k in ((256, 2), (512, 1), (1024, 2))],
        ("full_context", {}),
        ("mem0_oss", {"top_k": 30, "graph": False, "infer": True}),
        ("zep_graphiti", {"search_limit": 20, "reranker": "rrf", "episode_kind": "message"}),
        ("langmem", {"mode": "extract", "top_k": 10}),
        ("amem", {"k": 10, "evolution_threshold": 100}),
        ("chatgpt_memory_emulation", {"max_notes": 200}),
        ("mem0", {"top_k": 10, "per_speaker": False, "update": "batched", "summary_every": 10, "m": 6}),
    ]
    for i, (name, hyper) in enumerate(methods):
        folder = root / f"2026-12-01_21-{10 + i:02d}-33-123456_{name}"
        config = make_config({"_target_": f"x.{name}", "name": name, **hyper}, folder, i)
        write_run(folder, make_metrics(name, 0.45 + 0.03 * i), config)
        row = {"qid": "conv-26:q0", "conversation": "conv-26", "category": "temporal", "question": "When?",
               "gold": "May", "prediction": f"{name} says May", "judge": ["CORRECT"], "evidence": []}  # fmt: skip
        (folder / "predictions.jsonl").write_text(json.dumps(row) + "\n")
    return root


@pytest.mark.chromium
def test_a_twelve_run_report_fits_the_page(tmp_path):
    """Scores before settings, the run selector inside the page, short names in the selector."""
    from mem0bench.cli.report import report_main

    out = tmp_path / "report"
    assert report_main([str(_twelve_runs(tmp_path / "runs")), "--out", str(out)]) == 0
    with Browser(_browser(), tmp_path / "profile") as browser:
        browser.open((out / "report.html").resolve().as_uri())
        width = browser.evaluate("document.documentElement.clientWidth")
        assert browser.evaluate("document.documentElement.scrollWidth") <= width  # no sideways page scroll
        assert browser.evaluate("document.getElementById('f-run').getBoundingClientRect().right") <= width
        options = browser.evaluate("[...document.querySelectorAll('#f-run option')].map(o => o.textContent)")
        assert options[1:] == ["mem0 #1", "mem0g", "rag #1", "rag #2", "rag #3", "full_context", "mem0_oss",
                               "zep_graphiti", "langmem", "amem", "chatgpt_memory_emulation", "mem0 #2"]  # fmt: skip
        headers = browser.evaluate(
            "[...document.querySelectorAll('section.table')].map(s => s.querySelector('h3').textContent.split(':')[0]"
            " + ': ' + [...s.querySelectorAll('th')].slice(0, 3).map(th => th.textContent).join(','))"
        )
        assert headers[:3] == ["Table 1: run,method,multi_hop F1", "Table 2: run,method,context tokens (mean)",
                               "Settings: run,method,m"]  # fmt: skip
        # The first score is on the first screen without scrolling sideways.
        first_score = browser.evaluate(
            "document.querySelector('section.table tbody td:nth-child(3)').getBoundingClientRect().right"
        )
        assert first_score <= width
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.screenshot(ARTIFACTS / "report_html_12_runs.png")
