"""The judge stress test: hard known-WRONG answers made from each gold (golden cases for a date, a number,
a name, a list), their false-accept rates, and `judge-check --probe` with a scripted judge."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from devtools.e2e import FAST, cli_env, run_cli
from devtools.standin.server import StandinServer, ToolCall
from mem0bench.data.model import Category, Conversation, Question, Session, Turn
from mem0bench.judge_check.calibration import CalibrationItem, probe_rates, stress_rates
from mem0bench.judge_check.stress import FAMILIES, stress_answers
from mem0bench.suites.locomo import OPEN_DOMAIN, SINGLE_HOP, TEMPORAL

AUDIT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "external" / "locomo-audit"
TURNS = (
    "We flew to Paris in May, and Oscar came along.",
    "Did Oscar like it? I went hiking with Oscar later.",
    "Yes, Paris was lovely. Next time we try Lisbon.",
)


def _conversation(*golds: tuple[str, str, Category]) -> Conversation:
    turns = tuple(Turn(("Ann", "Bob")[i % 2], f"D1:{i + 1}", text) for i, text in enumerate(TURNS))
    session = Session(1, datetime(2023, 5, 8, 13, 56), "1:56 pm on 8 May, 2023", turns)
    questions = tuple(
        Question(f"c:q{i}", "c", i, question, gold, category)
        for i, (question, gold, category) in enumerate(golds)
    )
    return Conversation("c", "Ann", "Bob", (session,), questions)


def _made(conversation: Conversation, index: int) -> dict[str, str]:
    q = conversation.questions[index]
    pool = [o for o in conversation.questions if o.category == q.category]
    return {a.kind: a.prediction for a in stress_answers(q, conversation, pool)}


def test_a_date_gives_vague_specific_and_hedge_answers():
    conv = _conversation(
        ("When did Ann fly to Paris?", "7 May 2023", TEMPORAL),
        ("When did Bob go hiking?", "June 2023", TEMPORAL),
        ("When did Ann start painting?", "2022", TEMPORAL),
    )
    assert _made(conv, 0) == {
        "vague_season": "Sometime in the spring of 2023",
        "vague_year": "At some point in 2023",
        "vague_while": "A while ago",
        "date_days": "10 May 2023",
        "date_months": "7 July 2023",
        "hedge": "Either 2022, June 2023 or 7 May 2023",  # wrong options in a fixed hash order
    }
    month_only = _made(conv, 1)
    assert month_only["date_months"] == "August 2023" and "date_days" not in month_only
    assert month_only["vague_season"] == "Sometime in the summer of 2023"
    year_only = _made(conv, 2)
    assert year_only["date_year"] == "2021" and "vague_year" not in year_only  # that would be the gold


def test_a_relative_date_keeps_its_words_and_moves_its_date():
    conv = _conversation(("When did Bob run?", "The sunday before 30 December 2023", TEMPORAL))
    made = _made(conv, 0)
    assert made["date_days"] == "The sunday before 27 December 2023"  # +3 would leave short months
    assert made["date_months"] == "The sunday before 28 February 2024"
    assert "hedge" not in made  # no other answer to hedge with


def test_a_number_a_name_and_a_list():
    conv = _conversation(
        ("How many times did Ann fly?", "3 times", SINGLE_HOP),
        ("Where did Ann fly?", "Paris", SINGLE_HOP),
        ("Who went hiking with Bob?", "Ann", SINGLE_HOP),
        ("What does Bob like?", "hiking, swimming and pottery", SINGLE_HOP),
        ("How many cats does Ann have?", "two", SINGLE_HOP),
        ("Where will they go next time?", "Lisbon", OPEN_DOMAIN),
    )
    number = _made(conv, 0)
    assert (number["vague_number"], number["number_changed"]) == ("A handful", "5 times")
    place = _made(conv, 1)
    # Another place the dataset names (a "Where" gold found in the turns), not the most used capitalised
    # word (Oscar, a person); a speaker's name only for a speaker.
    assert (place["vague_kind"], place["name_swapped"]) == ("A place they mentioned", "Lisbon")
    person = _made(conv, 2)
    assert (person["vague_kind"], person["name_swapped"]) == ("A person they know", "Bob")
    listed = _made(conv, 3)
    assert listed["vague_list"] == "A few different things"
    assert listed["list_item_swapped"].startswith("hiking, swimming, ")
    assert listed["list_item_swapped"] != "hiking, swimming, pottery"
    assert _made(conv, 4)["number_changed"] == "four"
    for made in (number, place, person, listed):
        assert made["hedge"].startswith("Either ") and made["hedge"].endswith(
            f" or {conv.questions[(number, place, person, listed).index(made)].answer}"
        )


def test_no_stress_answer_equals_its_gold_and_every_kind_has_a_family():
    conv = _conversation(("When?", "2023", TEMPORAL), ("When else?", "May 2023", TEMPORAL))
    for i in range(2):
        for kind, prediction in _made(conv, i).items():
            assert kind in FAMILIES and prediction.casefold() != conv.questions[i].answer.casefold()


def test_stress_rates_by_hand():
    conv = _conversation(("When did Ann fly to Paris?", "7 May 2023", TEMPORAL))
    q = conv.questions[0]
    items = [CalibrationItem(q, a.kind, a.prediction) for a in stress_answers(q, conv, [q])]
    labels = {i.item_id: i.kind.startswith("vague") for i in items}  # accepts every vague answer
    labels[items[0].item_id] = None  # one judge failure
    rates = stress_rates(items, labels)
    vague = rates["families"]["vague"]["overall"]
    assert (vague["n"], vague["errors"], vague["failed"]) == (2, 2, 1)
    assert rates["families"]["specific"]["overall"]["rate"] == 0.0
    assert set(rates["families"]["vague"]["categories"]) == {"temporal"}
    assert rates["kinds"]["date_days"]["overall"]["n"] == 1


def test_probe_rates_by_hand():
    ours = {"a": True, "b": False, "c": None}
    theirs = {"a": (True, True, False), "b": (False, False, False), "c": (True, True, True)}
    block = probe_rates(ours, theirs, {"a": "temporal", "b": "temporal", "c": "single_hop"})
    overall = block["overall"]
    assert overall["ours_false_accept"]["rate"] == 0.5 and overall["ours_failed"] == 1
    assert overall["theirs_accept"] == pytest.approx(5 / 9)
    assert overall["theirs_majority_accept"]["errors"] == 2
    assert overall["agreement"]["agreement"] == 1.0
    assert block["categories"]["single_hop"]["ours_false_accept"]["n"] == 0


@pytest.mark.slow
def test_probe_with_a_scripted_judge(tmp_path, locomo_path):
    source = AUDIT / "ap_v2_vague_scored.json"
    if not source.is_file():
        pytest.fail(f"the published file {source} is needed by this realdata test", pytrace=False)
    records = json.loads(source.read_text())["detailed_results"]["locomo_exp_user_0"][:8]
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"accuracy": 0.5, "detailed_results": {"locomo_exp_user_0": records}}))

    # A judge that accepts any answer naming a season: it knows nothing of our prompt but its tool.
    def season_judge(endpoint: str, body: dict) -> object:
        if endpoint != "chat":
            return None
        text = json.dumps(body).casefold()
        label = "CORRECT" if "spring" in text or "summer" in text else "WRONG"
        return ToolCall({"reasoning": "scripted", "label": label}, name="record_verdict")

    expected = sum(
        ("spring" in r["generated_answer"].casefold()) or ("summer" in r["generated_answer"].casefold())
        for r in records
    )
    assert 0 < expected < len(records)
    with StandinServer() as server:
        server.set_handler(season_judge)
        env = cli_env(server.base_url, tmp_path / "cache")
        args = ["judge-check", f"dataset.path={locomo_path}", "--per-category", "1", "--probe", str(probe)]
        result = run_cli([*args, "--out", str(tmp_path / "out"), *FAST[:3]], env)
    assert result.returncode == 0, result.stderr[-3000:]
    check = json.loads((tmp_path / "out" / "judge_check.json").read_text())
    block = check["probe"]
    assert block["matched"] == 8
    ours = block["overall"]["ours_false_accept"]
    assert (ours["n"], ours["errors"]) == (8, expected)
    theirs = [v for r in records for v in r["llm_judgments"].values()]
    assert block["overall"]["theirs_accept"] == pytest.approx(sum(theirs) / len(theirs))
    assert check["stress"]["families"]["vague"]["overall"]["n"] > 0
    text = (tmp_path / "out" / "judge_check.md").read_text()
    assert "Probe:" in text and "Stress test:" in text


# ---- names from the dataset, on LOCOMO items the capitalisation heuristic got wrong ----------------------


def _locomo_items(locomo_path: Path, qid: str) -> dict[str, str]:
    from mem0bench.data.loader import load_dataset

    sample = qid.split(":")[0]
    conversation = load_dataset(locomo_path, conversations=[sample]).conversations[0]
    q = next(q for q in conversation.questions if q.qid == qid)
    pool = [o for o in conversation.questions if o.category == q.category]
    return {a.kind: a.prediction for a in stress_answers(q, conversation, pool)}


@pytest.mark.parametrize(
    "qid, gold, swapped, why",
    [
        # A name the heuristic never saw: "Luna and Oliver" starts its sentence, and "Luna" nowhere else.
        ("conv-26:q52", "Oliver, Luna, Bailey", "Ed Sheeran, Luna, Bailey", "sentence-initial"),
        # "shadow" is also an ordinary word there ("shadow box"), so the heuristic dropped the dog's name.
        ("conv-41:q147", "Shadow", "Max", "also a lower-case word"),
        # A nickname: the heuristic took "Jo" for a shortening of the speaker "Joanna" and dropped it.
        ("conv-42:q14", "Jo", "Max", "nickname"),
        # A dog's name was swapped for a country (England), a city for "Dash" (of "Door Dash").
        ("conv-41:q103", "Max", "Coco", "person for a place"),
        ("conv-30:q9", "Rome", "Paris", "place for a brand"),
        # A city was swapped for "German"; now another place the dataset names.
        ("conv-43:q20", "Seattle", "UK", "place for an adjective"),
    ],
)
def test_locomo_names_come_from_the_dataset(locomo_path, qid, gold, swapped, why):
    made = _locomo_items(locomo_path, qid)
    assert made["name_swapped"] == swapped, why


def test_a_name_with_no_other_of_its_kind_makes_only_the_vague_item(locomo_path):
    """conv-26's only place the dataset names is Sweden: the heuristic swapped it for Oliver, a dog."""
    made = _locomo_items(locomo_path, "conv-26:q11")  # Where did Caroline move from 4 years ago? Sweden
    assert made["vague_kind"] == "A place they mentioned" and "name_swapped" not in made


def test_no_locomo_swap_puts_in_or_takes_out_a_month_or_a_pronoun(locomo_path):
    """Over every name item of the real file: the name put in is a speaker, a name the dataset gives, or
    (only for a gold that names none of them) a capitalised word; never "I", "I'm" or a month."""
    from mem0bench.data.loader import load_dataset
    from mem0bench.judge_check.stress import MONTHS, proper_nouns

    banned = {m.casefold() for m in MONTHS} | {"i", "i'm", "i've", "i'll", "i'd"}
    swaps = 0
    for conversation in load_dataset(locomo_path).conversations:
        names = proper_nouns(conversation)
        for q in conversation.questions:
            pool = [o for o in conversation.questions if o.category == q.category]
            for item in stress_answers(q, conversation, pool, names):
                if item.kind != "name_swapped":
                    continue
                swaps += 1
                added = set(item.prediction.split()) - set(q.answer.split())
                assert not {w.strip(",.\"'").casefold() for w in added} & banned, (q.qid, item.prediction)
    assert swaps > 150  # the file gives a name item to about one question in eight
