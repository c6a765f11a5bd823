"""`import` of published answers (small files under tests/fixtures/published) and `compare` of runs,
on the real LOCOMO file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mem0bench.cli.compare import compare_main
from mem0bench.cli.import_answers import import_main
from mem0bench.cli.report import report_main
from mem0bench.data.model import Conversation, Dataset, Question
from mem0bench.importing.imported import FieldMap, Record, match_records
from mem0bench.rundir.schema import SCHEMA_VERSION, read_metrics, read_predictions
from mem0bench.suites.locomo import SINGLE_HOP

FIXTURES = Path(__file__).parent / "fixtures" / "published"
# The six LOCOMO questions the fixture files answer.
SIX = {"conv-26:q0", "conv-26:q1", "conv-26:q3", "conv-26:q4", "conv-30:q0", "conv-30:q2"}


def _import(locomo: Path, file: Path, out: Path, *extra: str) -> int:
    return import_main(
        [str(file), "--out", str(out), "--dataset", str(locomo), "--bootstrap-replicates", "200", *extra]
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory, locomo_path):
    """Run A: the object-shaped fixture with Zep's field names; run B: the JSONL fixture with --fields."""
    root = tmp_path_factory.mktemp("imported")
    assert _import(locomo_path, FIXTURES / "by_conversation.json", root / "a", "--system", "sys-a") == 0
    fields = "question=q,prediction=resp,judge=ok,conversation=conv"
    assert (
        _import(locomo_path, FIXTURES / "records.jsonl", root / "b", "--system", "sys-b", "--fields", fields)
        == 0
    )
    return root


def test_import_counts_every_record_and_reports_each_problem(tmp_path, locomo_path, capsys):
    assert _import(locomo_path, FIXTURES / "by_conversation.json", tmp_path / "a", "--system", "sys-a") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert sum(line.startswith("unmatched: ") for line in lines) == 2
    assert any(
        line.startswith("duplicate: conv-26[4]: conv-26:q0 already imported from conv-26[0]")
        for line in lines
    )
    assert any(line.startswith("gold differs: conv-26[2]: conv-26:q3") for line in lines)
    assert any(line.startswith("category differs: conv-26[5]: conv-26:q4") for line in lines)
    assert any(line.startswith("bad judge: conv-26[5]") for line in lines)
    manifest = json.loads((tmp_path / "a" / "run.json").read_text())
    counts = manifest["imported"]
    assert {k: counts[k] for k in ("records", "matched", "unmatched", "duplicate", "ambiguous")} == {
        "records": 9, "matched": 6, "unmatched": 2, "duplicate": 1, "ambiguous": 0,
    }  # fmt: skip
    assert (counts["gold_differs"], counts["category_differs"], counts["bad_judge"]) == (1, 1, 1)


def test_imported_run_is_scored_our_way_with_its_judge_named(runs):
    rows = {r.qid: r for r in read_predictions(runs / "a" / "predictions.jsonl")}
    assert set(rows) == SIX
    assert rows["conv-26:q3"].gold == "Adoption agencies"  # LOCOMO's gold, not the file's
    assert rows["conv-26:q3"].score("f1") == pytest.approx(1.0)
    assert rows["conv-26:q0"].answer_words == 4 and rows["conv-26:q0"].judge == ("CORRECT",)
    assert rows["conv-26:q4"].judge == (None,)  # 'maybe' is not a label
    metrics = read_metrics(runs / "a" / "metrics.json")
    assert metrics.schema_version == SCHEMA_VERSION
    assert metrics.overall.judge["mean"] == pytest.approx(3 / 5) and metrics.overall.judge["runs"] == 1
    assert metrics.extra["judge_name"] == "sys-a (imported)"
    assert metrics.overall.value("f1") == pytest.approx(sum(r.score("f1") for r in rows.values()) / 6)
    lo, hi = metrics.overall.ci95["f1"]
    assert lo <= metrics.overall.value("f1") <= hi and metrics.overall.stderr["judge"] > 0
    assert metrics.categories["temporal"].judge["mean"] == pytest.approx(2 / 3)
    jsonl = read_metrics(runs / "b" / "metrics.json")
    assert jsonl.overall.judge["mean"] == pytest.approx(5 / 6)
    # The file does not say what was retrieved: no evidence recall, not a 0.0 that reads as "nothing".
    assert all(r.evidence_recall is None for r in rows.values()) and metrics.extra["evidence_recall"] is None


def test_matching_pairs_interchangeable_duplicates_in_order(tmp_path, locomo_path, capsys):
    """conv-48 asks 'What are the names of Jolene's snakes?' twice with one gold: records fill both."""
    assert _import(locomo_path, FIXTURES / "conv48_duplicates.json", tmp_path / "d") == 0
    assert "duplicate: record 3: conv-48:q16 already imported from record 1" in capsys.readouterr().out
    rows = read_predictions(tmp_path / "d" / "predictions.jsonl")
    assert [(r.qid, r.judge) for r in rows] == [("conv-48:q16", ("CORRECT",)), ("conv-48:q89", ("WRONG",))]


def test_a_question_with_two_golds_is_ambiguous():
    def question(i: int, answer: str) -> Question:
        return Question(f"c:q{i}", "c", i, "Where?", answer, SINGLE_HOP)

    qs = (question(0, "Paris"), question(1, "Rome"))
    dataset = Dataset("x", "0", (Conversation("c", "A", "B", (), qs),))
    records = [Record("r1", "c", {"question": "where?", "answer": "Paris"})]
    result = match_records(records, dataset, FieldMap(), {"c": qs})
    assert result.counts["ambiguous"] == 1 and not result.answers
    assert result.problems == ["ambiguous: r1: 'where?' matches c:q0, c:q1 (golds differ)"]
    with_gold = [Record("r1", "c", {"question": "where?", "answer": "x", "golden_answer": "Rome"})]
    assert match_records(with_gold, dataset, FieldMap(), {"c": qs}).answers[0].question.qid == "c:q1"


def test_bad_import_input_is_one_line(tmp_path, locomo_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversation": "conv-26", "text": "no question field"}]')
    assert _import(locomo_path, bad, tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "record 1: no question field" in err and "Traceback" not in err


def test_a_run_compared_with_itself_is_zero(runs, tmp_path, capsys):
    assert compare_main([str(runs / "a"), str(runs / "a"), "--out", str(tmp_path), "--bootstrap", "300"]) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    assert result["n_paired"] == 6
    for name in ("f1", "bleu1"):
        assert result["overall"][name]["delta"] == 0.0 and result["overall"][name]["ci95"] == [0.0, 0.0]
    # Five of the six questions have a judge label: too few for an interval (see the next test).
    assert result["overall"]["judge"]["delta"] == 0.0 and result["overall"]["judge"]["ci95"] is None
    assert result["overall"]["judge"]["p_mcnemar"] == 1.0
    assert (tmp_path / "compare.md").read_text().startswith("**compare: B - A, 6 paired questions**")


def test_compare_by_hand(runs, tmp_path):
    """A's labels T F T - T F, B's T T T T T F on the same six questions: one discordant pair (B only),
    so McNemar's p is 1; J differs on the five questions both judged by +1/5."""
    assert compare_main([str(runs / "a"), str(runs / "b"), "--out", str(tmp_path), "--bootstrap", "300"]) == 0
    result = json.loads((tmp_path / "compare.json").read_text())
    judge = result["overall"]["judge"]
    assert judge["delta"] == pytest.approx(1 / 5) and judge["discordant"] == {"a_only": 0, "b_only": 1}
    assert judge["p_mcnemar"] == 1.0
    # Five questions judged in both: below the six a significant result needs, so no interval, no MDD.
    assert (
        judge["n"] == 5 and judge["too_small"] and judge["ci95"] is None and result["mdd"]["overall"] is None
    )
    f1 = result["overall"]["f1"]  # F1 has all six pairs
    assert f1["n"] == 6 and not f1["too_small"]
    lo, hi = f1["ci95"]
    assert lo <= f1["delta"] <= hi
    assert result["categories"]["temporal"]["n"] == 3 and set(result["mdd"]) >= {"temporal", "overall"}
    assert any("different judges" in note for note in result["notes"])
    assert any(note.startswith("the sample is too small") and "overall" in note for note in result["notes"])


def test_compare_on_two_questions_says_the_sample_is_too_small(tmp_path, locomo_path, capsys):
    """Two questions: the bootstrap collapses ([-100, -100]) and its zero spread gave "MDD 0.00"."""
    records = [json.loads(line) for line in (FIXTURES / "records.jsonl").read_text().splitlines()[:2]]
    fields = "question=q,prediction=resp,judge=ok,conversation=conv"
    for name, label in (("a", "CORRECT"), ("b", "WRONG")):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("".join(json.dumps({**r, "ok": label}) + "\n" for r in records))
        assert _import(locomo_path, data, tmp_path / name, "--fields", fields) == 0
    capsys.readouterr()
    out = tmp_path / "cmp"
    assert (
        compare_main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out), "--bootstrap", "200"]) == 0
    )
    text = capsys.readouterr().out
    overall = next(line for line in text.splitlines() if line.startswith("| overall |"))
    assert "| -100.00 | too few |" in overall and "0.00 |" not in overall.split("too few")[1][:20]
    assert "[-100" not in text and "note: the sample is too small" in text
    result = json.loads((out / "compare.json").read_text())
    assert result["overall"]["judge"]["ci95"] is None and result["mdd"]["overall"] is None


def test_compare_refuses_different_answer_keys(runs, tmp_path, locomo_path, capsys):
    fields = "question=q,prediction=resp,judge=ok,conversation=conv"
    keyed = tmp_path / "keyed"
    assert (
        _import(
            locomo_path,
            FIXTURES / "records.jsonl",
            keyed,
            "--fields",
            fields,
            "--answer-key",
            str(FIXTURES / "answer_key.json"),
        )
        == 0
    )
    capsys.readouterr()
    assert compare_main([str(runs / "a"), str(keyed), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "different answer keys" in err and "conv-26:q3" in err


def test_compare_different_question_sets_only_with_intersect(runs, tmp_path, locomo_path, capsys):
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join((FIXTURES / "records.jsonl").read_text().splitlines(keepends=True)[:4]))
    fields = "question=q,prediction=resp,judge=ok,conversation=conv"
    assert _import(locomo_path, subset, tmp_path / "s", "--fields", fields) == 0
    capsys.readouterr()
    assert compare_main([str(runs / "a"), str(tmp_path / "s"), "--out", str(tmp_path / "c")]) == 2
    assert "2 only in A, 0 only in B, 4 in both" in capsys.readouterr().err
    assert (
        compare_main([str(runs / "a"), str(tmp_path / "s"), "--out", str(tmp_path / "c"), "--intersect"]) == 0
    )
    result = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert (result["n_paired"], result["only_a"], result["only_b"]) == (4, 2, 0)
    assert "4 shared questions compared" in capsys.readouterr().out


def test_results_of_another_schema_version_fail_in_one_line(runs, tmp_path, capsys):
    old = tmp_path / "old"
    old.mkdir()
    metrics = json.loads((runs / "a" / "metrics.json").read_text())
    (old / "metrics.json").write_text(json.dumps({**metrics, "schema_version": 1}))
    (old / "predictions.jsonl").write_text((runs / "a" / "predictions.jsonl").read_text())
    assert report_main([str(old), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results schema version 1" in err
    del metrics["overall"]["ci95"]
    (old / "metrics.json").write_text(json.dumps(metrics))
    assert compare_main([str(old), str(runs / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "overall: missing field 'ci95'" in err
    rows = (runs / "a" / "predictions.jsonl").read_text().replace('"answer_words"', '"words"')
    (old / "metrics.json").write_text((runs / "a" / "metrics.json").read_text())
    (old / "predictions.jsonl").write_text(rows)
    assert compare_main([str(old), str(runs / "a")]) == 2
    assert "line 1: missing field 'answer_words'" in capsys.readouterr().err


def test_report_names_the_imported_judge(runs, tmp_path, capsys):
    assert report_main([str(runs / "a"), str(runs / "b"), "--out", str(tmp_path)]) == 0
    table = (tmp_path / "table1.md").read_text()
    assert "sys-a (imported)" in table and "overall J 95% CI" in table


@pytest.mark.slow
def test_standin_run_judge_of_an_import_and_compare(tmp_path, locomo_path, capsys):
    """A real run's metrics.json carries the intervals; `judge` on an imported run puts our judge in the
    usual blocks and keeps the file's judge apart; `compare` pairs the import with the run."""
    from devtools.e2e import FAST, cli_env, run_cli
    from devtools.standin.server import StandinServer

    imported = tmp_path / "imported"
    assert _import(locomo_path, FIXTURES / "by_conversation.json", imported, "--system", "sys-a") == 0
    with StandinServer() as server:
        env = cli_env(server.base_url, tmp_path / "cache")
        run = run_cli(
            ["run", "+exp=rag", f"dataset.path={locomo_path}", "dataset.conversations=[conv-26,conv-30]",
             "eval.max_questions=6", "judge.runs=2", "eval.bootstrap=500", f"hydra.run.dir={tmp_path / 'rag'}",
             *FAST],
            env,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        judged = run_cli(["judge", str(imported), "judge.runs=2", *FAST], env)
        assert judged.returncode == 0, judged.stderr[-3000:]
    metrics = read_metrics(tmp_path / "rag" / "metrics.json")
    assert metrics.extra["bootstrap"]["replicates"] == 500
    for block in (metrics.overall, *metrics.categories.values()):
        for name in ("f1", "bleu1", "locomo_f1", "judge"):
            lo, hi = block.ci95[name]
            assert lo <= hi and block.stderr[name] >= 0
    assert set(metrics.extra["judge_by_length"]) == {"<=6", "7-20", ">20"}
    rows = read_predictions(tmp_path / "rag" / "predictions.jsonl")
    assert all(r.answer_words == len(r.prediction.split()) for r in rows)

    rejudged = read_metrics(imported / "metrics.json")
    assert rejudged.extra["judge_name"] == "gpt-4o-mini (lenient)" and rejudged.overall.judge["runs"] == 2
    assert rejudged.extra["imported_judge"]["name"] == "sys-a (imported)"
    assert rejudged.extra["imported_judge"]["overall"]["mean"] == pytest.approx(3 / 5)

    assert compare_main([str(imported), str(tmp_path / "rag"), "--out", str(tmp_path / "c")]) == 2
    assert (
        compare_main([str(imported), str(tmp_path / "rag"), "--out", str(tmp_path / "c"), "--intersect"]) == 0
    )
    result = json.loads((tmp_path / "c" / "compare.json").read_text())
    assert result["n_paired"] == len({r.qid for r in rows} & SIX) == 6  # all six among the first six
    assert (result["only_a"], result["only_b"]) == (0, 6)


def test_report_adds_a_paired_column_against_a_baseline(runs, tmp_path):
    assert (
        report_main([str(runs / "a"), str(runs / "b"), "--out", str(tmp_path), "--baseline", str(runs / "a")])
        == 0
    )
    lines = (tmp_path / "table1.md").read_text().splitlines()
    assert "ΔJ vs a (95% CI, paired)" in lines[2]
    # Five questions judged in both runs: too few for an interval.
    assert lines[4].rstrip(" |").endswith("baseline") and "+20.00 [too few] (n=5)" in lines[5]


def test_bad_fields_option_is_one_line(tmp_path, locomo_path, capsys):
    assert _import(locomo_path, FIXTURES / "records.jsonl", tmp_path / "x", "--fields", "speaker=who") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--fields: 'speaker=who' is not ROLE=FIELD" in err
