"""memu: memU's LOCOMO harness (its memory agent and response agent) on memu-py 0.1.7, in its own venv (made
by `setup-system memu`, from the pinned requirements), as a service the adapter starts, reached over the HTTP
system protocol. End to end through the real CLI, the real venv and the real service against the stand-in,
which answers memU's prompts (in our words) in their formats (dated event paragraphs; JSON checks and
queries) from words of the request, nothing of LOCOMO."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, files_containing, read_jsonl, run_cli
from devtools.standin.server import StandinServer, Text, _phrase

_WORDS = re.compile(r"[A-Za-z][A-Za-z']+")


def _between(text: str, start: str, *ends: str) -> str:
    part = text.split(start, 1)[1] if start in text else text
    for end in ends:
        part = part.split(end, 1)[0]
    return part


def _handler(endpoint: str, body: dict[str, Any]) -> Any:
    """memU's prompts (ours, `locomo_prompts`), each known by its opening words, answered in the format its
    scripts read."""
    if endpoint != "chat":
        return None
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
    rng = random.Random(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())
    if prompt.startswith(("Task: write down the new events in", "Task: write down the events in")):
        date = _between(prompt, "Session date:", "\n\n").strip()
        words = _WORDS.findall(_between(prompt, "Conversation:", "Existing events:", "Earlier attempt:"))
        events = [
            f"Mentioned at {date}: {_phrase(rng, words or ['nothing'], 4, 9)}"
            for _ in range(rng.randint(2, 4))
        ]
        return Text("\n\n".join(events))
    if prompt.startswith(("Your job: find out whether the extracted", "Your job: decide whether the info")):
        words = _WORDS.findall(_between(prompt, "Conversation:", "Extracted events:", "Set the")) or ["more"]
        return Text(json.dumps({"sufficient": rng.random() < 0.5, "missing_info": _phrase(rng, words, 2, 5),
                                "confidence": 0.5}))  # fmt: skip
    if prompt.startswith("Your job: write a new search query"):
        words = _WORDS.findall(_between(prompt, "Still missing:", "\n")) or ["more"]
        return Text(
            json.dumps({"new_query": _phrase(rng, words, 2, 4), "keywords": words[:3], "reasoning": "x"})
        )
    return None


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A cache folder holding the venv, made once through the CLI (the user's one command)."""
    folder = tmp_path_factory.mktemp("memu-cache")
    made = run_cli(["setup-system", "memu", "--quiet"], cli_env("", folder), timeout=900)
    assert made.returncode == 0, made.stderr[-3000:]
    assert "memu-py 0.1.7" in made.stdout
    return folder


def test_without_the_venv_one_line_names_the_command(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        args = ["run", "+exp=memu", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                f"hydra.run.dir={tmp_path / 'run'}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "empty"))
    assert result.returncode != 0
    assert "python -m mem0bench setup-system memu" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_conv26_end_to_end(cache, tmp_path, locomo_path):
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(_handler)
        run_dir = tmp_path / "run"
        args = ["run", "+exp=memu", f"dataset.path={locomo_path}", "dataset.conversations=[conv-26]",
                "eval.max_questions=6", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr

        (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
        assert ingest["failures"] == 0
        assert ingest["details"]["sessions"] == ingest["details"]["sessions_added"] == 19
        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert len(rows) == 6
        for row in rows:
            # memU's answer context: the events found, numbered, each after its speaker, dated by its text
            assert row["context"].startswith("RELEVANT EVENTS:\n\n1. "), row["context"][:200]
            assert re.search(r"\n\d+\. (Caroline|Melanie): Mentioned at \d", row["context"])
            assert row["context_items"] > 0
        llm = json.loads((run_dir / "metrics.json").read_text())["tokens"]["llm"]
        sessions = 19
        # Per session and speaker: an extraction and a check, at most 3 of each (the self-check loop).
        assert 2 * 2 * sessions <= llm["memu_ingest"]["calls"] <= 2 * 6 * sessions
        assert llm["memu_ingest_embedding"]["calls"] > 0  # each event line, once
        # Per question: 1-3 rounds, each a query embedding and a sufficiency check, a new query between.
        assert 6 <= llm["memu_search_embedding"]["calls"] <= 3 * 6
        assert 6 <= llm["memu_search"]["calls"] <= 5 * 6
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["system_versions"]["memu-py"] == "0.1.7"
        assert files_containing(run_dir, TEST_KEY) == []

        paid = server.count("chat") + server.count("embeddings")
        again = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == paid  # resumed: nothing asked again


@pytest.mark.slow
def test_check_system_holds(cache):
    # The protocol's checklist on the built-in conversation, through the real venv and service.
    checked = run_cli(
        ["check-system", "mem0bench.systems.external.memu.MemU"], cli_env("", cache), timeout=900
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "9 of 9 checks hold" in checked.stdout


def test_config_keys_are_classified():
    # How the service is reached is result-neutral; what memU extracts and how it searches is not.
    from mem0bench.pipeline.config_change import Reach, is_neutral, reach_of

    for key in ("timeout_s", "max_retries", "max_concurrency", "workers"):
        assert is_neutral(f"method.{key}")
    for key in ("max_iterations", "max_rounds", "round_top_k", "captions", "prompts_dir"):
        assert not is_neutral(f"method.{key}") and reach_of(f"method.{key}") == Reach.INGEST
    # memU's prompt files edited in place (the same folder): found by their sha256, in run.json
    assert reach_of("prompt_files.method.prompts_dir.analyze_session_for_events.sha256") == Reach.INGEST


def test_our_prompts_fill_the_services_fields():
    # Our wording of memU's prompts: each holds exactly the fields the service fills (as memU's scripts did)
    # and asks for the reply its parsing reads.
    from mem0bench.systems.external.memu import locomo_prompts as prompts

    assert set(prompts.OURS) == set(prompts.FILES) == set(prompts.FIELDS)
    for key, text in prompts.OURS.items():
        assert prompts.fields_of(text) == prompts.FIELDS[key], key
        filled = text.format(**{field: f"<{field}>" for field in prompts.FIELDS[key]})
        assert "{" not in filled and all(f"<{f}>" in filled for f in prompts.FIELDS[key]), key
        assert text == text.strip()  # as memU's loader read its files
    assert 'prefix "Mentioned at <session_date>: "' in prompts.EVENTS.format(
        character_name="A", session_date="<session_date>", conversation="", existing_events=""
    )
    for key in ("CHECK_EVENTS", "CHECK_CONTENT"):
        assert all(f'"{k}"' in prompts.OURS[key] for k in ("sufficient", "missing_info", "confidence"))
    assert all(f'"{k}"' in prompts.NEW_QUERY for k in ("new_query", "keywords", "reasoning"))


def test_the_answer_context_is_memus():
    from mem0bench.systems.external.memu.system import render_events

    assert render_events([]) == ""
    assert render_events([("Ann", "Mentioned at 1 May: x"), ("Bo", "y")]) == (
        "RELEVANT EVENTS:\n\n1. Ann: Mentioned at 1 May: x\n\n2. Bo: y"
    )


def test_cost_plan_counts_memus_loops(locomo_mini):
    from mem0bench.data.loader import load_dataset
    from mem0bench.systems.external.memu.costs import ROUNDS_PER_QUESTION, memu_cost_plan

    dataset = load_dataset(locomo_mini)
    plan = memu_cost_plan({"max_iterations": 3, "max_rounds": 3, "round_top_k": [25, 15, 15]}, dataset, 4)
    speaker_sessions = 2 * sum(1 for c in dataset.conversations for s in c.sessions if s.turns)
    lines = {line.what: line for line in plan.lines}
    assert lines["event extractions"].calls == speaker_sessions
    assert lines["completeness checks"].calls == 2 * speaker_sessions
    assert lines["sufficiency checks"].calls == 4 * ROUNDS_PER_QUESTION
    assert lines["new queries"].calls == 4 * (ROUNDS_PER_QUESTION - 1)
    assert not plan.embeds_queries  # the service embeds each round's query itself
    one = memu_cost_plan({"max_iterations": 1, "max_rounds": 1, "round_top_k": [25]}, dataset, 4)
    one_lines = {line.what: line for line in one.lines}
    assert one_lines["event refinements"].calls == 0 and one_lines["new queries"].calls == 0


def test_memus_answer_prompt_in_its_order():
    from mem0bench.data.context import RetrievedContext
    from mem0bench.prompts.answer import build_answer_messages

    context = RetrievedContext(
        kind="notes", text="RELEVANT EVENTS:\n\n1. Ann: Mentioned at 1 May: x", tokens=1
    )
    (message,) = build_answer_messages("When did Ann go?", context, prompt="memu")
    text = message["content"]
    assert message["role"] == "user"
    assert text.index("Question: When did Ann go?") < text.index("1. Ann: Mentioned at 1 May: x")
    assert "no more than 20 words" in text and "real time of\n   the event" in text
    assert text.endswith("Answer:")


# ---- the service's steps, in this process (its module imports only the kit and the prompts at load) ----


@pytest.fixture
def service(monkeypatch):
    import importlib
    import sys

    from mem0bench.systems.external.own_env.process import KIT_DIR

    here = Path(__file__).resolve().parents[1] / "mem0bench/systems/external/memu"
    monkeypatch.syspath_prepend(str(KIT_DIR))
    monkeypatch.syspath_prepend(str(here))
    sys.modules.pop("service", None)
    module = importlib.import_module("service")
    yield module
    sys.modules.pop("service", None)


class _Scripted:
    """memU's LLM: replies in order, each prompt kept."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = list(replies), []

    def __call__(self, prompt: str, max_tokens: int, temperature: float) -> str:
        self.prompts.append((prompt, max_tokens, temperature))
        return self.replies.pop(0)


class _Words:
    """An embedder of word counts (texts sharing words point the same way)."""

    def embed(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        return [float(sum(1 for w in words if len(w) % 7 == i)) for i in range(7)] if words else []


def _memory(service, tmp_path, replies, **settings):
    memory = service.Conversation.__new__(service.Conversation)
    memory.settings = {"max_iterations": 3, "max_rounds": 3, "captions": True, **settings}
    memory.folder, memory.lock, memory.vectors = tmp_path, __import__("threading").Lock(), {}
    memory.round_top_k = [25, 15, 15]
    memory.embedder, memory.chat = _Words(), _Scripted(replies)
    memory.prompts = service.prompt_texts(memory.settings)
    return memory


def test_extraction_checks_and_refines_what_was_missing(service, tmp_path):
    memory = _memory(service, tmp_path, [
        "Mentioned at 8 May: Ann ran.",
        json.dumps({"sufficient": False, "missing_info": ["the race", "her dog"]}),
        "Mentioned at 8 May: Ann ran a race.\n\nMentioned at 8 May: Ann has a dog.",
        "The events are sufficient: true",  # not JSON: their fallback reads it as complete
    ])  # fmt: skip
    events = memory._extract("Ann", "Ann: I ran a race with my dog.\n", "8 May")
    assert events.endswith("Ann has a dog.")
    (extract, _, temp), check, (refine, _, refine_temp), _ = memory.chat.prompts
    assert extract.startswith("Task: write down the new events in Ann's life") and temp == 0.3
    assert "Existing events:\nNone" in extract and check[1:] == (1000, 0.1)
    assert "What it left out:\n1. the race\n2. her dog" in refine and refine_temp == 0.3
    assert memory.chat.replies == []  # stopped at the check that said complete


def test_rounds_search_again_until_sufficient(service, tmp_path):
    memory = _memory(service, tmp_path, [
        json.dumps({"sufficient": False, "missing_info": "the dog"}),
        json.dumps({"new_query": "dog name", "keywords": ["dog"]}),
        json.dumps({"sufficient": True}),
    ])  # fmt: skip
    (tmp_path / "speakers.json").write_text(json.dumps(["Ann", "Bo"]))
    (tmp_path / "events_0_0001.txt").write_text(
        "\n\n".join(f"Mentioned at 8 May: Ann ran race {i}." for i in range(30)) + "\n\nAnn's dog is Rex."
    )
    (tmp_path / "events_1_0001.txt").write_text("Mentioned at 8 May: Bo cooked.")
    items = memory._answer_rounds("Which race did Ann run?")
    check, query, second = (p for p, _, _ in memory.chat.prompts)
    assert check.count("Event - ") == 25  # the first round's 25
    assert "Still missing: the dog" in query
    assert second.count("Event - ") == 25 + 15  # the second round's 15 added (before deduplication)
    texts = [i["text"] for i in items]
    assert len(texts) == len(set(texts)) and "Ann's dog is Rex." in texts  # found by the new query
    assert {i["speaker"] for i in items} <= {"Ann", "Bo"}


def test_keyword_scores_are_memus(service):
    records = [{"id": "a", "text": "Ann ran a race"}, {"id": "b", "text": "Bo cooked dinner"}]
    # their BM25's idf, log((N - df + 0.5) / (df + 0.5)), is 0 for a word in one of two events
    assert service._bm25_scores("race", records) == {"a": 0.0, "b": 0.0}
    third = [*records, {"id": "c", "text": "Cy slept"}]
    assert service._bm25_scores("race", third) == {"a": 1.0, "b": 0.0, "c": 0.0}
    strings = service._string_scores("race", records)
    assert strings["a"] > strings["b"] and strings["a"] == pytest.approx(0.4 + 0.3 + 0.2 * 8 / 18 + 0.1)


# ---- method.prompts_dir: memU's own prompt files instead of ours ----------------------------------------------

# Stand-ins for memU's files (the test's own text), each with the fields the service fills, padded as a file
# may be (their loader stripped them).
_FILES = {
    "analyze_session_for_events.txt": "\n FILE-EVENTS {character_name}|{session_date}|{conversation}|{existing_events} \n",
    "check_events_completeness.txt": "FILE-CHECK {character_name}|{conversation}|{extracted_events}\n",
    "refine_events_extraction.txt": (
        "FILE-REFINE {character_name}|{session_date}|{conversation}|{previous_extraction}|{missing_info}"
    ),
    "check_content_sufficiency.txt": "FILE-ENOUGH {question}|{current_content}",
    "generate_new_query.txt": "FILE-QUERY {original_question}|{missing_info}|{current_content}",
}


def _prompt_files(folder: Path, **changed: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in {**_FILES, **changed}.items():
        if text is not None:
            (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_prompts_dir_files_are_what_the_service_sends(service, tmp_path):
    folder = _prompt_files(tmp_path / "prompts")
    (tmp_path / "memory").mkdir()
    memory = _memory(service, tmp_path / "memory", [
        "Mentioned at 8 May: Ann ran.",
        json.dumps({"sufficient": False, "missing_info": "the race"}),
        "Mentioned at 8 May: Ann ran a race.",
        json.dumps({"sufficient": True}),
    ], prompts_dir=str(folder))  # fmt: skip
    memory._extract("Ann", "Ann: I ran a race.\n", "8 May")
    sent = [p for p, _, _ in memory.chat.prompts]
    assert sent == [
        "FILE-EVENTS Ann|8 May|Ann: I ran a race.\n|None",
        "FILE-CHECK Ann|Ann: I ran a race.\n|Mentioned at 8 May: Ann ran.",
        "FILE-REFINE Ann|8 May|Ann: I ran a race.\n|Mentioned at 8 May: Ann ran.|the race",
        "FILE-CHECK Ann|Ann: I ran a race.\n|Mentioned at 8 May: Ann ran a race.",
    ]
    search = _memory(service, tmp_path / "memory", [
        json.dumps({"sufficient": False, "missing_info": "the dog"}),
        json.dumps({"new_query": "dog"}),
        json.dumps({"sufficient": True}),
    ], prompts_dir=str(folder))  # fmt: skip
    (tmp_path / "memory" / "speakers.json").write_text(json.dumps(["Ann", "Bo"]))
    (tmp_path / "memory" / "events_0_0001.txt").write_text("Mentioned at 8 May: Ann ran a race.")
    search._answer_rounds("Which race?")
    enough, query, _ = (p for p, _, _ in search.chat.prompts)
    assert enough == "FILE-ENOUGH Which race?|Event - Ann: Mentioned at 8 May: Ann ran a race."
    assert query == "FILE-QUERY Which race?|the dog|Event - Ann: Mentioned at 8 May: Ann ran a race."


@pytest.fixture
def adapter(monkeypatch, tmp_path):
    """MemU's constructor without a venv (its interpreter and versions stood in for)."""
    from mem0bench.memory.base import SystemContext
    from mem0bench.systems.external.memu.system import MemU
    from mem0bench.systems.external.own_env.venv import OwnVenv

    monkeypatch.setattr(OwnVenv, "python", lambda self: Path("/nonexistent/python"))
    monkeypatch.setattr(OwnVenv, "installed_versions", lambda self: {"memu-py": "0.1.7"})
    return lambda **kw: MemU(context=SystemContext(client=None, state_dir=tmp_path / "state"), **kw)  # type: ignore[arg-type]


def test_prompts_dir_is_fingerprinted_by_content(adapter, tmp_path):
    ours = adapter()
    assert ours.prompt_files == () and ours.service_settings(8)["prompts_dir"] is None
    one, two = _prompt_files(tmp_path / "one"), _prompt_files(tmp_path / "two")
    first, same = adapter(prompts_dir=str(one)), adapter(prompts_dir=str(two))
    assert first.memory_settings() == same.memory_settings() != ours.memory_settings()
    assert first.service_settings(8)["prompts_dir"] == str(one.resolve())
    files = {f.setting: f for f in first.prompt_files}  # recorded in run.json, compared on a rerun
    assert len(files) == 5 and files["method.prompts_dir.generate_new_query"].path.startswith(str(one))
    (two / "generate_new_query.txt").write_text(
        "FILE-QUERY2 {original_question}|{missing_info}|{current_content}"
    )
    edited = adapter(prompts_dir=str(two))
    assert edited.memory_settings() != first.memory_settings()  # the sessions are extracted again


def test_prompts_dir_a_missing_or_different_file_fails_in_one_line(adapter, tmp_path):
    from mem0bench.common.errors import ConfigurationError

    gone = _prompt_files(tmp_path / "gone", **{"check_events_completeness.txt": None})
    with pytest.raises(ConfigurationError) as missing:
        adapter(prompts_dir=str(gone))
    text = str(missing.value)
    assert "\n" not in text and str(gone) in text and "check_events_completeness.txt" in text
    other = _prompt_files(tmp_path / "other", **{"generate_new_query.txt": "{question} {missing_info}"})
    with pytest.raises(ConfigurationError) as different:
        adapter(prompts_dir=str(other))
    text = str(different.value)
    assert "\n" not in text and str(other) in text and "generate_new_query.txt" in text
    assert "{original_question}" in text  # what the service fills, which the file lacks
    stray = _prompt_files(
        tmp_path / "stray", **{"check_content_sufficiency.txt": "{question} {current_content} }"}
    )
    with pytest.raises(ConfigurationError, match="check_content_sufficiency.txt"):
        adapter(prompts_dir=str(stray))


def test_prompts_dir_error_comes_before_the_venv_check(tmp_path, locomo_mini):
    # Checked in the adapter's constructor, first: without the venv too, the prompts' line is the one shown.
    with StandinServer(api_key=TEST_KEY) as server:
        args = ["run", "+exp=memu", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                f"method.prompts_dir={tmp_path / 'nowhere'}", f"hydra.run.dir={tmp_path / 'run'}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "empty"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "analyze_session_for_events.txt" in result.stderr and "setup-system" not in result.stderr
    assert server.count("chat") + server.count("embeddings") == 0
