"""BEAM end to end: one 100K conversation of the released files (shared data) through rag and mem0 on the
stand-in, with the rubric judge's calls counted (one per rubric item, plus event ordering's alignment)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.beam_replies import JUDGE_HEAD, SAME_HEAD, beam_replies
from devtools.standin.server import StandinServer
from mem0bench.prompts.beam import ANSWER_SYSTEM
from mem0bench.suites.beam import ABILITIES, ANSWER_MAX_TOKENS
from tests.test_beam import beam_folder

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

CONVERSATION = "100K-1"


def _judge_handler(seen: dict[str, int]) -> Any:
    """The stand-in's BEAM replies (devtools/standin/beam_replies.py), each rubric item and alignment call
    counted."""

    def handler(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint == "chat":
            text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
            seen["items"] += text.lstrip().startswith(JUDGE_HEAD)
            seen["same"] += text.startswith(SAME_HEAD)
            if text.startswith(ANSWER_SYSTEM):  # the suite's own answer prompt, with its max_tokens
                seen["answers"] += 1
                seen["answer_max_tokens"] = body.get("max_tokens", 0)
        return beam_replies(endpoint, body)

    return handler


@pytest.mark.parametrize("exp", ["rag", "mem0"])
def test_a_100k_conversation_runs_through_rag_and_mem0(exp: str, tmp_path: Path) -> None:
    beam = beam_folder()
    run_dir = tmp_path / "run"
    args = [
        "run", f"+exp={exp}", "dataset=beam", f"dataset.path={beam}", "dataset.scale=100K",
        f"dataset.conversations=[{CONVERSATION}]", "judge.runs=1", "eval.latency=inline",
        f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    seen = {"items": 0, "same": 0, "answers": 0, "answer_max_tokens": 0}
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(_judge_handler(seen))
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"), timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert len(rows) == 20 and {r["conversation"] for r in rows} == {CONVERSATION}
    assert all(not r.get("failure") for r in rows), [r.get("failure") for r in rows]
    assert seen["answers"] == 20 and seen["answer_max_tokens"] == ANSWER_MAX_TOKENS
    # One judge call per rubric item of every question (the gold is the rubric), nothing more or less.
    items = sum(len(json.loads(r["gold"])) for r in rows)
    assert seen["items"] == items
    judgements = read_jsonl(run_dir / "judgements.jsonl")
    assert len(judgements) == 20 and all(j["failure"] is None for j in judgements)
    # Event ordering's alignment asked about (line, item) pairs; every NO leaves each line itself.
    ordering = [
        j
        for j in judgements
        if j["qid"] in {r["qid"] for r in rows if r["category"] == "beam_event_ordering"}
    ]
    assert len(ordering) == 2 and all("tau_norm" in j["detail"] for j in ordering)
    # (each reply line asked against the items until one matches: every NO asks all of them)
    lines = [len(r["prediction"].split("\n")) for r in rows if r["category"] == "beam_event_ordering"]
    assert seen["same"] == sum(
        n * len(json.loads(r["gold"]))
        for n, r in zip(lines, [r for r in rows if r["category"] == "beam_event_ordering"], strict=True)
    )
    # The rows carry the exact rubric scores; the suite's figures are computed from them.
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert set(metrics["categories"]) == {c.name for c in ABILITIES.values()}
    scores = {r["qid"]: r["judge_scores"][0] for r in rows}
    overall = metrics["overall"]
    assert overall["beam_per_question"] == pytest.approx(sum(scores.values()) / 20)
    # One conversation: the authors' figure is the mean of the ten abilities' means (two questions each).
    by_ability: dict[str, list[float]] = {}
    for r in rows:
        by_ability.setdefault(r["category"], []).append(scores[r["qid"]])
    expected = sum(sum(v) / len(v) for v in by_ability.values()) / len(by_ability)
    assert overall["beam_authors"] == pytest.approx(expected)
    assert overall["beam_authors_ci95_low"] is None  # one conversation: no interval over conversations
    if exp == "rag":  # evidence message ids reach evidence recall
        assert metrics["evidence_recall"] is not None
        # `judge RUN_DIR` adds a second run of the rubric judge (the switches from the run's config.yaml)
        with StandinServer(api_key=TEST_KEY) as server:
            server.set_handler(_judge_handler(seen))
            again = run_cli(
                ["judge", str(run_dir), "judge.runs=2", *FAST], cli_env(server.base_url, tmp_path / "cache")
            )
        assert again.returncode == 0, again.stderr[-3000:]
        assert seen["items"] == 2 * items
        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert all(len(r["judge_scores"]) == 2 and None not in r["judge_scores"] for r in rows)
