"""The bounds of every table: `+exp=oracle` (exactly the evidence turns, with their session dates) and
`+exp=no_memory` (no context), on the real LOCOMO file and end to end against the stand-in."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.data import load_dataset
from mem0bench.prompts.answer import build_answer_messages
from mem0bench.systems.baselines.no_memory import NoMemory
from mem0bench.systems.baselines.oracle import Oracle, parse_evidence


def test_evidence_ids_are_read_leniently_and_their_faults_counted():
    assert parse_evidence(["D1:3", "D2:10"]).ids == ("D1:3", "D2:10")
    assert parse_evidence(["D1:3", "D2:10"]).repaired == 0
    semicolon = parse_evidence(["D8:6; D9:17"])
    assert (semicolon.ids, semicolon.repaired) == (("D8:6", "D9:17"), 1)
    assert parse_evidence(["D:11:26"]).ids == ("D11:26",)
    assert parse_evidence(["D9:1 D4:4 D4:6"]).ids == ("D9:1", "D4:4", "D4:6")
    zero = parse_evidence(["D30:05"])
    assert (zero.ids, zero.repaired) == (("D30:5",), 1)
    lost = parse_evidence(["D", "D2:1", "D2:1"])
    assert (lost.ids, lost.unusable, lost.repaired) == (("D2:1",), 1, 0)


@pytest.fixture(scope="module")
def locomo(locomo_path):
    return load_dataset(str(locomo_path))


def test_oracle_context_is_exactly_the_evidence_turns_with_their_dates(locomo, locomo_path):
    raw = {s["sample_id"]: s for s in json.loads(locomo_path.read_text())}
    oracle = Oracle(context=None)  # type: ignore[arg-type]  # no client needed: it calls nothing
    checked = 0
    for conversation in locomo.conversations:
        sample = raw[conversation.sample_id]["conversation"]
        turns = {}  # dia_id -> the line the file itself gives (session date, speaker, text)
        for key, value in sample.items():
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
                for turn in value:
                    turns[turn["dia_id"]] = (sample[f"{key}_date_time"], turn["speaker"])
        for question in conversation.questions:
            if not all(re.fullmatch(r"D[1-9]\d*:[1-9]\d*", e) for e in question.evidence):
                continue  # the malformed ones: checked by the counts below
            context = asyncio.run(oracle.retrieve(conversation, question))
            present = [e for e in dict.fromkeys(question.evidence) if e in turns]
            assert context.kind == "evidence" and context.items == len(present)
            assert sorted(context.source_dia_ids) == sorted(present)
            text = {t.dia_id: t.text for t in conversation.turns}  # captions folded in by the loader
            expected = [f"({turns[d][0]}) {turns[d][1]}: {text[d]}" for d in context.source_dia_ids]
            assert context.text == "\n".join(expected)
            checked += 1
    assert checked > 1900


def test_oracle_counts_the_malformed_and_dangling_evidence_of_locomo(locomo):
    oracle = Oracle(context=None)  # type: ignore[arg-type]
    totals: dict[str, int] = {}
    for conversation in locomo.conversations:
        report = asyncio.run(oracle.ingest(conversation))
        for key, value in report.details.items():
            totals[key] = totals.get(key, 0) + value
    # Six malformed strings that still name turns ("D8:6; D9:17", "D:11:26", three space-separated lists,
    # "D30:05"), one bare "D", two ids past their session's end (conv-42 D10:19, conv-47 D4:36).
    assert totals == {
        "evidence_ids": 2815, "evidence_repaired": 6, "evidence_unusable": 1, "evidence_dangling": 2,
    }  # fmt: skip
    conv47 = next(c for c in locomo.conversations if c.sample_id == "conv-47")
    q38 = next(q for q in conv47.questions if q.qid == "conv-47:q38")
    context = asyncio.run(oracle.retrieve(conv47, q38))
    assert context.source_dia_ids == ("D18:1", "D18:7")  # D4:36 does not exist: left out, counted


def test_no_memory_gives_no_context_and_the_prompt_says_so(locomo):
    conversation = locomo.conversations[0]
    context = asyncio.run(NoMemory(context=None).retrieve(conversation, conversation.questions[0]))  # type: ignore[arg-type]
    assert (context.kind, context.text, context.tokens) == ("none", "", 0)
    prompt = "\n".join(m["content"] for m in build_answer_messages("When?", context))
    assert conversation.speaker_a not in prompt and "Nothing is available" in prompt


@pytest.mark.slow
@pytest.mark.parametrize("exp", ["oracle", "no_memory"])
def test_bound_experiments_run_end_to_end(exp, tmp_path, locomo_mini):
    run_dir = tmp_path / "run"
    args = [
        "run", f"+exp={exp}", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
        "eval.max_questions=6", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY) as server:
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    answers = read_jsonl(run_dir / "answers.jsonl")
    assert len(answers) == 6
    if exp == "no_memory":
        assert all(a["context_tokens"] == 0 for a in answers)
        assert "run directory:" in result.stdout + result.stderr  # the summary, where the warning goes
        assert "empty retrieved context" not in result.stdout + result.stderr  # empty on purpose
    else:
        for a in answers:
            assert set(a["context_dia_ids"]) <= set(a["evidence"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["method"] == exp
    if exp == "oracle":  # mini-1 has "D3 :4" (read as D3:4) and D2:9, a turn that does not exist
        assert metrics["evidence_ids"] == {"ids": 18, "repaired": 1, "unusable": 0, "dangling": 1}
