"""judge-check on Locomo-Plus and LongMemEval: items from the cue, abstention's own known-wrong kind, the
graded scale (a PARTIAL is half an error), per-type grading reaching the judge, and what does not apply
said in the output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, cli_env, run_cli
from devtools.standin.server import StandinServer, ToolCall
from mem0bench.judge_check.calibration import build_calibration_set, error_rates
from mem0bench.judge_check.suite_calibration import ABSTAINS, GENERIC_REPLY
from mem0bench.suites import DatasetRequest, get_suite
from mem0bench.suites.longmemeval import ABSTENTION, SINGLE_SESSION_USER
from tests.test_import_compare import FIXTURES
from tests.test_suites_e2e import DATA, SUITE_ARGS


def _load(suite: str, mode: str = "grouped") -> Any:
    request = DatasetRequest(
        path=str(DATA / ("longmemeval_mini.json" if suite.startswith("longmemeval") else "locomo_plus_mini.json")),
        data_dir=DATA, host_path=str(DATA / "locomo_mini.json"), mode=mode,
    )  # fmt: skip
    return get_suite(suite).load(request)


@pytest.mark.parametrize("mode", ["grouped", "faithful"])
def test_locomo_plus_items_come_from_the_cues(mode: str) -> None:
    dataset = _load("locomo_plus", mode)
    items = build_calibration_set(dataset, 5, stress=True)
    assert items == build_calibration_set(dataset, 5, stress=True)
    kinds = {i.kind for i in items}
    assert kinds == {"cue_recalled", "other_cue", "dont_know", "generic_reply", "wrong_memory"}
    cues = {q.answer for q in dataset.questions}
    for item in items:
        cue = item.question.answer
        first = cue.split("\n")[0].split(": ", 1)[1]
        if item.kind == "cue_recalled":
            assert item.expected and first in item.prediction
        elif item.kind == "other_cue":  # another item's cue, even when each copy holds one (faithful)
            assert not item.expected and item.prediction in cues and item.prediction != cue
        elif item.kind == "wrong_memory":  # the frame of cue_recalled, another cue's words
            assert not item.expected and first not in item.prediction and item.prediction.startswith("That")
        else:
            assert not item.expected and item.prediction in (ABSTAINS, GENERIC_REPLY)
    assert not any(k.startswith(("gold", "vague_", "date_")) or k == "hedge" for k in kinds)


def test_longmemeval_abstention_gets_a_confident_answer_as_its_wrong_item() -> None:
    dataset = _load("longmemeval_s")
    items = build_calibration_set(dataset, 3, stress=True)
    abstention = {i.kind: i for i in items if i.question.category is ABSTENTION}
    assert set(abstention) == {"gold", "abstains", "confident_answer"}
    assert abstention["abstains"].expected and abstention["abstains"].prediction == ABSTAINS
    # Another question's short gold, stated as the answer: the knowledge-update question's 3.
    assert not abstention["confident_answer"].expected and abstention["confident_answer"].prediction == "3."
    fact = {i.kind for i in items if i.question.category is SINGLE_SESSION_USER}
    assert {"gold", "gold_in_sentence", "dont_know"} <= fact and fact & {"vague_kind", "name_swapped"}


def test_a_partial_is_half_an_error_on_a_graded_suite() -> None:
    items = build_calibration_set(_load("locomo_plus"), 5, stress=False)
    labels = {i.item_id: 0.5 for i in items}  # the judge says PARTIAL to everything
    rates = error_rates(items, labels)["overall"]
    wrong = sum(not i.expected for i in items)
    assert (
        rates["false_accept"]["errors"] == pytest.approx(wrong / 2) and rates["false_accept"]["rate"] == 0.5
    )
    assert rates["false_reject"]["rate"] == 0.5 and rates["partial"] == len(items)


def _partial_judge(seen: list[str]) -> Any:
    def handler(endpoint: str, body: dict[str, Any]) -> object:
        if endpoint != "chat":
            return None
        seen.append(json.dumps(body))
        tool = (body.get("tools") or [{}])[0].get("function", {}).get("name")
        label = "PARTIAL" if tool == "record_graded_verdict" else "CORRECT"
        return ToolCall({"reasoning": "scripted", "label": label}, name=tool)

    return handler


@pytest.mark.slow
@pytest.mark.parametrize("suite", ["locomo_plus", "longmemeval_s"])
def test_judge_check_command_on_each_suite(suite: str, tmp_path: Path) -> None:
    seen: list[str] = []
    out = tmp_path / "out"
    with StandinServer() as server:
        server.set_handler(_partial_judge(seen))
        env = cli_env(server.base_url, tmp_path / "cache")
        args = [
            "judge-check",
            f"dataset={suite}",
            *SUITE_ARGS[suite],
            "--per-category",
            "3",
            "--out",
            str(out),
        ]
        if suite == "locomo_plus":  # the framework's own judged output as a probe, matched by trigger
            args += ["--probe", str(FIXTURES / "locomo_plus_judged.json")]
        result = run_cli([*args, *FAST[:3]], env)
    assert result.returncode == 0, result.stderr[-3000:]
    check = json.loads((out / "judge_check.json").read_text())
    text = (out / "judge_check.md").read_text()
    assert check["suite"] == suite and f"on {suite} (its own grading)" in text
    probed = check["probe"]["matched"] if suite == "locomo_plus" else 0
    assert len(seen) == check["items"] + check["stress"]["items"] + probed  # one call each, judge.runs=1
    assert "Not applicable on" in text and check["not_applicable"]
    if suite == "locomo_plus":
        assert set(check["categories"]) == {"cognitive"}
        # Every item judged PARTIAL: half an error each way, on the 0-1 scale.
        assert check["overall"]["false_accept"]["rate"] == 0.5 and check["overall"]["partial"] > 0
        assert "a PARTIAL counts 0.5" in text and "Cue (the earlier exchange)" in seen[0]
        assert "hedge" in text  # said not to apply, with why
        assert probed == 4 and check["probe"]["overall"]["theirs_judgments"] == 3  # 'maybe' is no label
    else:
        assert set(check["categories"]) == {"single_session_user", "knowledge_update", "abstention"}
        # Binary: every item judged CORRECT, so every known-wrong one is a false accept.
        assert check["overall"]["false_accept"]["rate"] == 1.0 and "partial" not in check["overall"]
        assert check["kinds"]["confident_answer"]["n"] == 1 and check["kinds"]["abstains"]["rate"] == 0.0
        # The per-type rubric reached the judge: abstention's reference is named as its explanation.
        assert any("Why it cannot be answered" in body for body in seen)
        row = next(line for line in text.splitlines() if line.startswith("| **vague** |"))
        assert "n/a" in row  # the stress columns of abstention and preference say so, not '-'
