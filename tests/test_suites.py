"""The suite seam on golden mini files in each suite's exact format: LongMemEval's haystacks, evidence and
abstention; Locomo-Plus's stitching (speakers, cue times, placement, host choice, grouped copies); the graded
judge's PARTIAL; scores that do not apply; the registry."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data.errors import DatasetError
from mem0bench.data.model import Category
from mem0bench.llm.replies import SchemaChecker, parse_structured
from mem0bench.llm.types import StructuredReply, StructuredSpec, Usage
from mem0bench.pipeline import aggregate
from mem0bench.pipeline.judge import JudgeSettings, judge_once
from mem0bench.prompts.judge import GRADED_JUDGE_SPEC
from mem0bench.rundir.records import AnswerRecord, Judgement
from mem0bench.suites import SUITES, get_suite, suite_of
from mem0bench.suites.base import check_counts
from mem0bench.suites.locomo import ADVERSARIAL, MULTI_HOP, OPEN_DOMAIN, SINGLE_HOP, TEMPORAL
from mem0bench.suites.locomo_plus import COGNITIVE, format_locomo_date, gap_days, host_choice
from mem0bench.suites.longmemeval import (
    ABSTENTION,
    KNOWLEDGE_UPDATE,
    SINGLE_SESSION_PREFERENCE,
    SINGLE_SESSION_USER,
    TEMPORAL_REASONING,
)
from tests.dataset_files import DATA, LOCOMO_MINI, PLUS, edited, load_suite

LME = DATA / "longmemeval_mini.json"


# ---- the registry --------------------------------------------------------------------------------------


def test_every_dataset_config_names_a_registered_suite() -> None:
    configs = Path(__file__).resolve().parents[1] / "configs" / "dataset"
    names = {p.stem for p in configs.glob("*.yaml")}
    assert (
        names
        == set(SUITES)
        == {"locomo", "locomo_plus", "longmemeval_s", "longmemeval_m", "longmemeval_oracle", "beam"}
    )
    for path in configs.glob("*.yaml"):
        suite_line = [line for line in path.read_text().splitlines() if line.startswith("suite:")]
        # LOCOMO's config is unchanged (the suite defaults to locomo); every other one names itself.
        assert suite_line == ([] if path.stem == "locomo" else [f"suite: {path.stem}"])


def test_categories_name_their_suite() -> None:
    assert suite_of(1).name == "locomo" and suite_of(5).name == "locomo"
    assert suite_of(6).name == "locomo_plus"
    assert suite_of(int(ABSTENTION)).name.startswith("longmemeval")
    locomo = get_suite("locomo")
    assert locomo.scored == (MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP) and locomo.optional == (
        ADVERSARIAL,
    )
    with pytest.raises(ValueError, match="unknown suite 'nosuch'.*locomo_plus"):
        get_suite("nosuch")


# ---- LongMemEval ---------------------------------------------------------------------------------------


def test_longmemeval_haystacks_become_one_conversation_per_question(tmp_path: Path) -> None:
    ds = load_suite("longmemeval_s", LME, tmp_path)
    assert ds.suite == "longmemeval_s"
    assert [c.sample_id for c in ds.conversations] == ["e47becba", "gpt4_2f8be40d_abs", "6a1eabeb"]
    first = ds.conversations[0]
    assert first.speakers == ("User", "Assistant")
    assert [s.date_text for s in first.sessions] == [
        "2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:10", "2023/05/25 (Thu) 18:03",
    ]  # fmt: skip
    assert first.sessions[1].date_time == datetime(2023, 5, 21, 9, 10)
    assert [(t.dia_id, t.speaker) for t in first.sessions[1].turns] == [
        ("D2:1", "User"), ("D2:2", "Assistant"), ("D2:3", "User"), ("D2:4", "Assistant"),
    ]  # fmt: skip
    (q,) = first.questions
    assert q.qid == "e47becba:q0" and q.category is SINGLE_SESSION_USER
    assert q.evidence == ("D2:1",)  # the has_answer turn
    assert q.evidence_sessions == (2,)  # answer_280352e9 is the second session
    assert q.asked_on == "2023/05/30 (Tue) 23:40"


def test_longmemeval_abstention_and_unsorted_sessions(tmp_path: Path) -> None:
    ds = load_suite("longmemeval_oracle", LME, tmp_path)
    abstention = ds.conversations[1].questions[0]
    assert abstention.category is ABSTENTION  # question_type temporal-reasoning, id ends in _abs
    update = ds.conversations[2]
    # The file lists the July session first; the haystack is ingested in time order, renumbered.
    assert [s.date_text for s in update.sessions] == ["2023/03/14 (Tue) 07:15", "2023/07/20 (Thu) 19:00"]
    assert update.sessions[0].turns[0].text.startswith("I have two cats")
    q = update.questions[0]
    assert q.category is KNOWLEDGE_UPDATE and q.answer == "3"  # a number answer becomes text
    assert q.evidence == ("D1:1", "D2:1") and q.evidence_sessions == (1, 2)


def test_longmemeval_selection_and_counts(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ds = load_suite("longmemeval_s", LME, tmp_path, conversations=["6a1eabeb"])
    assert [c.sample_id for c in ds.conversations] == ["6a1eabeb"]
    with pytest.raises(DatasetError, match="unknown question id"):
        load_suite("longmemeval_s", LME, tmp_path, conversations=["nope"])
    with caplog.at_level("INFO", logger="mem0bench.suites"):
        load_suite("longmemeval_s", LME, tmp_path)
    # A whole file of another size is noted against the released counts, per category (in the log only:
    # a warning is for a file of the release's size whose counts differ).
    assert "1 single_session_user questions where the release of LongMemEval_S has 70" in caplog.text
    assert "1 abstention questions where the release of LongMemEval_S has 30" in caplog.text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda q: q.update(haystack_dates=["20 May 2023", *q["haystack_dates"][1:]]),
            "haystack_dates[0]: cannot parse",
        ),
        (lambda q: q.update(question_type="single-hop"), "question_type: unknown question_type 'single-hop'"),
        (
            lambda q: q["haystack_sessions"][1][0].update(role="system"),
            "haystack_sessions[1][0].role: expected 'user' or 'assistant'",
        ),
        (lambda q: q.update(haystack_dates=q["haystack_dates"][:2]), "differ in length (3, 2, 3)"),
    ],
)
def test_longmemeval_bad_input_is_one_line(tmp_path: Path, change: Any, message: str) -> None:
    bad = edited(LME, tmp_path / "lme.json", 0, change)
    with pytest.raises(DatasetError) as err:
        load_suite("longmemeval_s", bad, tmp_path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{bad}: sample e47becba: ") and message in text


# ---- Locomo-Plus ---------------------------------------------------------------------------------------


def _host_file(tmp_path: Path, keep: str = "mini-1") -> Path:
    """locomo_mini.json with one conversation: every item lands on it, so times can be checked exactly."""
    host = tmp_path / "host.json"
    host.write_text(json.dumps([s for s in json.loads(LOCOMO_MINI.read_text()) if s["sample_id"] == keep]))
    return host


def test_time_gaps_follow_the_reference_rule() -> None:
    assert gap_days("one week later") == 7
    assert gap_days("two months later") == 60
    assert gap_days("about six weeks later") == 42
    assert gap_days("a year later") == 365
    assert gap_days("several months later") == 0  # the reference's reading of what it cannot count
    assert format_locomo_date(datetime(2023, 7, 9, 19, 30)) == "7:30 pm on 9 July, 2023"
    assert format_locomo_date(datetime(2023, 7, 9, 0, 5)) == "12:05 am on 9 July, 2023"


def test_faithful_stitching_times_speakers_and_placement(tmp_path: Path) -> None:
    ds = load_suite("locomo_plus", PLUS, tmp_path, host_path=str(_host_file(tmp_path)))
    assert ds.suite == "locomo_plus" and [c.sample_id for c in ds.conversations] == [
        f"plus-{i}" for i in range(5)
    ]
    # mini-1's sessions with turns: 8 May, 20 May, 2 July 2023 7:30 pm -> the trigger comes on 9 July.
    by_id = {c.sample_id: c for c in ds.conversations}

    def layout(sample_id: str) -> list[tuple[int, str]]:
        return [(s.index, s.date_text) for s in by_id[sample_id].sessions]

    host = [(1, "1:56 pm on 8 May, 2023"), (2, "10:12 am on 20 May, 2023"), (3, "7:30 pm on 2 July, 2023")]
    # one week later: the cue is on 2 July, at the same time as session 3, and comes after it.
    assert layout("plus-0") == [*host, (4, "7:30 pm on 2 July, 2023")]
    # two months later (60 days): 10 May, between sessions 1 and 2.
    assert layout("plus-1") == [host[0], (4, "7:30 pm on 10 May, 2023"), *host[1:]]
    # several months later reads as 0 days: the cue is on the trigger's own date, after every session.
    assert layout("plus-2") == [*host, (4, "7:30 pm on 9 July, 2023")]
    # about six weeks later: 28 May.
    assert layout("plus-3") == [*host[:2], (4, "7:30 pm on 28 May, 2023"), host[2]]

    q = by_id["plus-0"].questions[0]
    assert q.category is COGNITIVE and q.qid == "plus-0:q0"
    assert (
        q.question == "Maya: I had a double espresso at four today, and now it's midnight."
    )  # A -> speaker_a
    assert q.answer == (
        "Maya: I stopped drinking coffee after noon because I kept lying awake.\n"
        "Tomas: Good call, your sleep matters more."
    )  # B -> speaker_b
    assert q.evidence == ("D4:1", "D4:2") and q.asked_on == "7:30 pm on 9 July, 2023"
    cue = by_id["plus-0"].sessions[3]
    assert [(t.speaker, t.dia_id) for t in cue.turns] == [("Maya", "D4:1"), ("Tomas", "D4:2")]
    # A cue written with a literal backslash-n still gives two turns (the reference glued them together).
    assert [t.speaker for t in by_id["plus-3"].sessions[2].turns] == ["Maya", "Tomas"]


def test_grouped_mode_puts_colliding_cues_in_separate_copies(tmp_path: Path) -> None:
    ds = load_suite("locomo_plus", PLUS, tmp_path, host_path=str(_host_file(tmp_path)), mode="grouped")
    # Items 0 and 4 are both "one week later": same cue time, so two copies of mini-1.
    assert [c.sample_id for c in ds.conversations] == ["mini-1+plus0", "mini-1+plus1"]
    first, second = ds.conversations
    assert [q.question.split(":")[0] for q in first.questions] == ["Maya"] * 4
    assert len(first.questions) == 4 and len(second.questions) == 1
    assert "grandmother" in second.questions[0].answer
    # Four cue sessions in the first copy, indexes after the host's, placed by time.
    assert [(s.index, s.date_text) for s in first.sessions] == [
        (1, "1:56 pm on 8 May, 2023"), (5, "7:30 pm on 10 May, 2023"), (2, "10:12 am on 20 May, 2023"),
        (7, "7:30 pm on 28 May, 2023"), (3, "7:30 pm on 2 July, 2023"), (4, "7:30 pm on 2 July, 2023"),
        (6, "7:30 pm on 9 July, 2023"),
    ]  # fmt: skip
    assert [q.evidence[0].split(":")[0] for q in first.questions] == ["D4", "D5", "D6", "D7"]


def test_host_choice_is_seeded(tmp_path: Path) -> None:
    def hosts(seed: int) -> list[str]:
        ds = load_suite("locomo_plus", PLUS, tmp_path, host_path=str(LOCOMO_MINI), seed=seed)
        return [c.speaker_a for c in ds.conversations]

    assert hosts(0) == hosts(0)
    assert [host_choice(i, 3, 0) for i in range(5)] == [host_choice(i, 3, 0) for i in range(5)]
    assert any(hosts(seed) != hosts(0) for seed in (1, 2, 3))
    # Selecting conversations never moves the others' hosts.
    some = load_suite("locomo_plus", PLUS, tmp_path, host_path=str(LOCOMO_MINI), conversations=["plus-3"])
    assert some.conversations[0].speaker_a == hosts(0)[3]


def test_locomo_plus_bad_item_is_one_line(tmp_path: Path) -> None:
    bad = edited(PLUS, tmp_path / "plus.json", 2, lambda q: q.update(trigger_query="no speaker prefix here"))
    with pytest.raises(DatasetError) as err:
        load_suite("locomo_plus", bad, tmp_path, host_path=str(LOCOMO_MINI))
    assert str(err.value) == f"{bad}: sample #2: trigger_query: no 'A:' or 'B:' line"
    with pytest.raises(DatasetError, match="dataset.mode must be one of faithful, grouped"):
        load_suite("locomo_plus", PLUS, tmp_path, host_path=str(LOCOMO_MINI), mode="stitched")


# ---- grading and scores --------------------------------------------------------------------------------


def _tool_reply(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "choices": [{}],
        "tool_calls": [{"name": GRADED_JUDGE_SPEC.name, "arguments": json.dumps(arguments)}],
    }


def test_the_graded_schema_takes_partial_and_nothing_else() -> None:
    spec = GRADED_JUDGE_SPEC
    tool = StructuredSpec(spec.name, spec.description, spec.parameters, mode="tool")
    checker = SchemaChecker()
    data, kind, _, _ = parse_structured(
        _tool_reply({"reasoning": "vague link", "label": "PARTIAL"}), tool, checker
    )
    assert data == {"reasoning": "vague link", "label": "PARTIAL"} and kind == ""
    for label in ("partial", "MAYBE", "HALF"):
        data, kind, error, _ = parse_structured(_tool_reply({"reasoning": "", "label": label}), tool, checker)
        assert data is None and kind == "malformed" and "label" in error  # repaired, or a judge failure


class _Judge:
    """The client surface judge_once uses, replying with fixed data and recording the requests."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.specs: list[StructuredSpec] = []
        self.messages: list[Any] = []

    async def structured(self, messages: Any, spec: StructuredSpec, **kw: Any) -> StructuredReply:
        self.specs.append(spec)
        self.messages.append(messages)
        return StructuredReply(data=self.data, usage=Usage())


def _answer(category: Category, gold: str = "Maya: I gave up coffee.") -> AnswerRecord:
    return AnswerRecord(
        qid="plus-0:q0", conversation="plus-0", question="Maya: A double espresso tonight!", gold=gold,
        category=category.label, category_id=int(category), prediction="Didn't you give up coffee?",
        context_tokens=10, search_latency_s=0.1, total_latency_s=0.2,
    )  # fmt: skip


def test_the_cognitive_judge_is_graded_and_partial_counts_half() -> None:
    settings = JudgeSettings(model="judge-model", runs=1)
    client = _Judge({"reasoning": "loosely related", "label": "PARTIAL"})
    judgement = asyncio.run(judge_once(client, settings, _answer(COGNITIVE), 0))  # type: ignore[arg-type]
    assert judgement.label == "PARTIAL" and judgement.failure is None
    assert client.specs[0].name == GRADED_JUDGE_SPEC.name
    prompt = client.messages[0][0]["content"]
    assert "Cue (the earlier exchange): Maya: I gave up coffee." in prompt and "PARTIAL" in prompt

    # A label the model should not give (a server that bypassed the schema) is a failure, never WRONG.
    bad = asyncio.run(judge_once(_Judge({"reasoning": "", "label": "HALF"}), settings, _answer(COGNITIVE), 0))  # type: ignore[arg-type]
    assert bad.label is None and bad.failure is not None and bad.failure.startswith("malformed")

    labels = ["CORRECT", "PARTIAL", "WRONG", "PARTIAL"]
    answers = [
        AnswerRecord(**{**_answer(COGNITIVE).to_dict(), "qid": f"plus-{i}:q0", "usage": None})
        for i in range(4)
    ]
    judgements = [Judgement(f"plus-{i}:q0", 0, lab, settings.signature) for i, lab in enumerate(labels)]  # type: ignore[arg-type]
    rows = aggregate.prediction_rows(answers, aggregate.judge_labels(judgements, settings.signature, 1), 1)
    assert [r.judge for r in rows] == [(lab,) for lab in labels]
    metrics = aggregate.metrics(
        rows, method="rag", runs=1, memory_tokens={}, llm_usage={}, cost_usd=0.0, failures={}
    )
    block = metrics["categories"]["cognitive"]
    assert block["judge"]["mean"] == pytest.approx(0.5)  # (1 + 0.5 + 0 + 0.5) / 4, on the 0-1 scale
    assert block["judge"]["majority"] == pytest.approx(0.5)
    # No reference answer: the lexical scores are not applicable, said so, and never 0.
    assert block["f1"] is None and block["bleu1"] is None and block["locomo_f1"] is None
    assert block["not_applicable"] == ["f1", "bleu1", "locomo_f1"]
    assert all(r.score("f1") is None and r.score("bleu1") is None for r in rows)


def test_longmemeval_judge_uses_the_type_rubric_and_locomo_keeps_its_prompt() -> None:
    settings = JudgeSettings(model="judge-model", runs=1)
    client = _Judge({"reasoning": "ok", "label": "CORRECT"})
    asyncio.run(judge_once(client, settings, _answer(TEMPORAL_REASONING, "18 days"), 0))  # type: ignore[arg-type]
    prompt = client.messages[0][0]["content"]
    assert "off by one" in prompt and "Gold answer: 18 days" in prompt and "record_verdict" in prompt
    asyncio.run(judge_once(client, settings, _answer(SINGLE_SESSION_PREFERENCE, "uses the hike"), 0))  # type: ignore[arg-type]
    assert "Description of the desired reply: uses the hike" in client.messages[1][0]["content"]
    asyncio.run(judge_once(client, settings, _answer(TEMPORAL, "May 2023"), 0))  # type: ignore[arg-type]
    locomo = client.messages[2][0]["content"]
    assert locomo.startswith(
        "You are grading an answer to a question about a long conversation, against a gold"
    )
    assert "off by one" not in locomo


def test_session_recall_counts_sessions_with_a_retrieved_turn() -> None:
    assert aggregate.session_recall((1, 2), ("D1:3", "D5:1")) == 0.5
    assert aggregate.session_recall((2,), ()) == 0.0
    assert aggregate.session_recall((), ("D1:1",)) is None


def test_locomo_counts_are_checked_only_on_a_whole_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ds = load_suite("locomo", LOCOMO_MINI, tmp_path)
    with caplog.at_level("INFO", logger="mem0bench.suites"):
        lines = check_counts("locomo", ds, whole_file=True)
    assert len(lines) == 5 and "multi_hop questions where the release of LOCOMO has 282" in lines[0]
    assert {r.levelname for r in caplog.records} == {"INFO"}  # another size: a note, not a warning
    assert check_counts("locomo", ds, whole_file=False) == []
    caplog.clear()
    # The release's size with two questions moved between categories: another version, a warning.
    moved = {MULTI_HOP: 283, TEMPORAL: 320, OPEN_DOMAIN: 96, SINGLE_HOP: 841, ADVERSARIAL: 446}
    with caplog.at_level("INFO", logger="mem0bench.suites"):
        lines = check_counts("locomo", ds, whole_file=True, found=moved)
    assert len(lines) == 2 and {r.levelname for r in caplog.records} == {"WARNING"}


def test_the_real_locomo_file_matches_its_release_counts(locomo_path: Path, tmp_path: Path) -> None:
    ds = load_suite("locomo", locomo_path, tmp_path)
    assert check_counts("locomo", ds, whole_file=True) == []


# ---- data download --suite -----------------------------------------------------------------------------


def test_download_suite_shows_licences_and_checks_pinned_hashes(
    tmp_path: Path, locomo_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import shutil
    import urllib.request

    from mem0bench.cli.data import data_main

    folder = tmp_path / "d"
    folder.mkdir()
    shutil.copy(locomo_path, folder / "locomo10.json")  # LOCOMO there already: checked, not fetched
    assert data_main(["download", "--suite", "locomo", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "licence: CC BY-NC 4.0" in out and "(checked against the pinned sha256)" in out

    # Locomo-Plus: its licence line comes first; bytes that are not the pinned file are refused in one line.
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(b"[]"))
    assert data_main(["download", "--suite", "locomo_plus", "--dir", str(folder)]) == 2
    captured = capsys.readouterr()
    assert "licence: none stated: the repository has no LICENSE file" in captured.out
    assert captured.err.count("\n") == 1 and "expected af2fc6e5" in captured.err
    assert not (folder / "locomo_plus.json").exists()

    assert data_main(["download", "--suite", "nosuch", "--dir", str(folder)]) == 2
    assert capsys.readouterr().err.startswith("error: --suite: unknown suite 'nosuch'")
    assert data_main(["download", "--suite", "beam", "--dir", str(folder)]) == 2  # fetched by the user
    assert "downloads none of its files; clone github.com/mohammadtavakoli78/BEAM" in capsys.readouterr().err


def test_hub_download_is_checked_against_the_hubs_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    from types import SimpleNamespace

    import huggingface_hub

    from mem0bench.suites.files import fetch_source

    payload = LME.read_bytes()
    source = get_suite("longmemeval_oracle").sources[0]
    assert source.hub_repo == "xiaowu0162/longmemeval-cleaned" and source.sha256 is None
    hub_sha = {"value": hashlib.sha256(payload).hexdigest()}

    def download(*, repo_id: str, filename: str, repo_type: str, local_dir: Path) -> str:
        assert (repo_id, filename, repo_type) == (source.hub_repo, source.filename, "dataset")
        path = Path(local_dir) / filename
        path.write_bytes(payload)
        return str(path)

    class Api:
        def get_paths_info(self, repo: str, paths: list[str], repo_type: str) -> list[Any]:
            return [SimpleNamespace(lfs=SimpleNamespace(sha256=hub_sha["value"]))]

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    got = fetch_source(source, tmp_path)
    assert got == tmp_path / "longmemeval_oracle.json" and got.read_bytes() == payload
    hub_sha["value"] = "0" * 64
    with pytest.raises(DatasetError, match="the hub says 0000"):
        fetch_source(source, tmp_path)
    assert not got.exists()  # a file that is not the hub's is not kept


def test_report_tables_show_a_suites_own_categories_and_say_not_applicable() -> None:
    from types import SimpleNamespace

    from mem0bench.report.tables import categories_in, table1
    from mem0bench.rundir.schema import SCHEMA_VERSION, Metrics, score_names

    none = dict.fromkeys(score_names())
    cognitive = {"n": 5, "f1": None, "bleu1": None, "locomo_f1": None, "not_applicable": ["f1", "bleu1", "locomo_f1"],
                 "judge": {"mean": 0.5, "std": 0.0, "runs": 2}, "stderr": none, "ci95": none}  # fmt: skip
    metrics = {"schema_version": SCHEMA_VERSION, "method": "rag", "n_questions": 5,
               "categories": {"cognitive": cognitive}, "overall": cognitive}  # fmt: skip
    run = SimpleNamespace(
        name="plus", method="rag", config={}, manifest={}, metrics=Metrics.from_dict(metrics, "test")
    )
    assert categories_in([run]) == [("cognitive", "cognitive")]  # type: ignore[list-item]
    row = table1([run]).iloc[0]  # type: ignore[list-item]
    assert (
        row["cognitive F1"] == "n/a"
        and row["overall BLEU-1"] == "n/a"
        and row["cognitive J"] == "50.00 ± 0.00"
    )
