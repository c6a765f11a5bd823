"""`judge=longmemeval`: LongMemEval's authors' grading (their model, one run at temperature 0, a yes/no reply of
at most 10 tokens, their per-type instructions in our words), checked on the request the stand-in receives and
on a whole run. The stand-in knows nothing of our prompts: the test scripts its yes/no replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer, Text
from mem0bench.common.errors import ConfigurationError
from mem0bench.pipeline.judge import JudgeSettings
from mem0bench.pipeline.spec import check_suite
from mem0bench.prompts.lme_judge import INSTRUCTIONS, build_lme_judge_messages, said_yes

DATA = Path(__file__).parent / "data"
MODEL = "gpt-4o-2024-08-06"


def test_a_reply_is_correct_when_it_says_yes_as_the_authors_read_it() -> None:
    assert said_yes("yes")
    assert said_yes("Yes.")
    assert said_yes("YES, the response is correct")
    assert not said_yes("no")
    assert not said_yes("No.")
    assert not said_yes("The response is correct")  # neither yes nor no: not yes, so incorrect (theirs too)
    assert not said_yes("")
    assert said_yes("eyes")  # a substring, exactly as `'yes' in reply.lower()`


def test_each_question_type_gets_its_own_instruction() -> None:
    def text(category: str) -> str:
        [message] = build_lme_judge_messages("Q?", "REF", "RESP", category=category)
        assert message["role"] == "user"
        return str(message["content"])

    fact = text("single_session_user")
    assert text("single_session_assistant") == fact and text("multi_session") == fact
    assert "even if the response also says other things" in fact  # the answer among other content passes
    assert "one off from the correct number" in text("temporal_reasoning")
    assert "one off" not in fact
    assert "earlier states alongside the latest one" in text("knowledge_update")
    assert "Rubric: REF" in text("single_session_preference")
    assert "need not cover every point" in text("single_session_preference")
    abstention = text("abstention")
    assert "cannot be answered" in abstention and "Why it cannot be answered: REF" in abstention
    assert all(t.rstrip().endswith("yes or no only.") for t in map(text, INSTRUCTIONS))  # no reason asked
    assert "Question: Q?" in fact and "Correct answer: REF" in fact and "Model response: RESP" in fact
    with pytest.raises(ValueError, match="category 'multi_hop' is not one"):
        text("multi_hop")


def test_the_profile_settings_go_together_and_only_on_longmemeval() -> None:
    JudgeSettings(model=MODEL, runs=1, prompt="longmemeval", mode="yes_no")
    with pytest.raises(ValueError, match="judge.prompt=longmemeval and judge.mode=yes_no go together"):
        JudgeSettings(model=MODEL, prompt="longmemeval", mode="tool")
    with pytest.raises(ValueError, match="go together"):
        JudgeSettings(model=MODEL, prompt="lenient", mode="yes_no")
    judge = JudgeSettings(model=MODEL, runs=1, prompt="longmemeval", mode="yes_no")
    assert judge.probes() == []  # plain text: no structured-output probe
    assert judge.reply_tokens_max == 10 and JudgeSettings(model=MODEL).reply_tokens_max is None  # dry run too
    assert judge.signature != JudgeSettings(model=MODEL, runs=1).signature  # labels never mixed


def test_the_profile_is_refused_on_locomo() -> None:
    from mem0bench.pipeline.spec import ScopeSpec

    fields = {f: None for f in ScopeSpec.__dataclass_fields__}
    scope = ScopeSpec(**{**fields, "suite": "locomo"})  # type: ignore[arg-type]
    with pytest.raises(
        ConfigurationError, match="judge.prompt=longmemeval is LongMemEval's authors' grading"
    ):
        check_suite(scope, "default", "longmemeval")
    check_suite(ScopeSpec(**{**fields, "suite": "longmemeval_s"}), "default", "longmemeval")  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_longmemeval_run_with_the_authors_judge(tmp_path: Path) -> None:
    judged: list[dict[str, Any]] = []

    def judge(endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint != "chat" or body.get("model") != MODEL:
            return None  # the answer model's calls: the stand-in's default
        judged.append(body)
        content = str(body["messages"][0]["content"])
        # yes for the fact question (and a reply that says more than yes), a bare no for the others
        return Text("Yes, it is." if "Business Administration" in content else "no")

    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=paper/longmemeval", "method=full_context", f"dataset.path={DATA / 'longmemeval_mini.json'}",
        "embedder=minilm", f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    with StandinServer(api_key=TEST_KEY, extra_models=[MODEL]) as server:
        server.set_handler(judge)
        env = cli_env(server.base_url, tmp_path / "cache")
        result = run_cli(args, env)
        assert result.returncode == 0, result.stderr[-3000:]
        first = list(judged)
        # `judge RUN_DIR` with a second run of the same judge: one more call per question, no probe
        again = run_cli(["judge", str(run_dir), "judge.runs=2", *FAST[:3]], env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(judged) == 2 * len(first) and all(b["max_tokens"] == 10 for b in judged)
    assert [len(r["judge"]) for r in read_jsonl(run_dir / "predictions.jsonl")] == [2, 2, 2]
    judged = first
    rows = {r["qid"]: r for r in read_jsonl(run_dir / "predictions.jsonl")}
    assert len(judged) == len(rows) == 3  # one judge run per question
    for body in judged:
        assert body["temperature"] == 0 and body["max_tokens"] == 10
        assert "tools" not in body and "response_format" not in body
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
    by_question = {
        next(q for q in rows if rows[q]["question"] in str(b["messages"][0]["content"])): str(
            b["messages"][0]["content"]
        )
        for b in judged
    }
    # The abstention question (a temporal-reasoning one) gets the abstention prompt, not its type's.
    assert by_question["gpt4_2f8be40d_abs:q0"].startswith(INSTRUCTIONS["abstention"][0])
    assert "one off" not in by_question["gpt4_2f8be40d_abs:q0"]
    assert by_question["6a1eabeb:q0"].startswith(INSTRUCTIONS["knowledge_update"][0])
    assert by_question["e47becba:q0"].startswith(INSTRUCTIONS["single_session_user"][0])
    assert {q: r["judge"] for q, r in rows.items()} == {  # the same scripted reply on both runs
        "e47becba:q0": ["CORRECT", "CORRECT"],
        "gpt4_2f8be40d_abs:q0": ["WRONG", "WRONG"],
        "6a1eabeb:q0": ["WRONG", "WRONG"],
    }
    overall = json.loads((run_dir / "metrics.json").read_text())["overall"]
    assert overall["lme_overall"] == pytest.approx(1 / 3) and overall["lme_abstention"] == 0.0
    assert "model: gpt-4o-2024-08-06" in (run_dir / "config.yaml").read_text()


def test_the_paper_profile_pins_the_authors_judge_and_flags_a_change() -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mem0bench.cli.run import CONFIG_DIR
    from mem0bench.pipeline.profile import check_profile
    from mem0bench.pipeline.spec import ExperimentSpec

    def profile(*overrides: str) -> tuple[ExperimentSpec, tuple[str, ...]]:
        args = ["+exp=paper/longmemeval", "method=full_context", *overrides]
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            with_hydra = compose(config_name="run", overrides=args, return_hydra_config=True)
            plain = OmegaConf.to_container(compose(config_name="run", overrides=args), resolve=True)
        choices = {k: str(v) for k, v in with_hydra.hydra.runtime.choices.items() if v is not None}
        spec = ExperimentSpec.from_mapping(plain)  # type: ignore[arg-type]
        check = check_profile(spec, choices)
        assert check is not None
        return spec, check.departures

    spec, departures = profile()
    assert departures == ()
    assert (spec.judge.model, spec.judge.runs, spec.judge.prompt, spec.judge.mode) == (
        MODEL, 1, "longmemeval", "yes_no"
    )  # fmt: skip
    assert spec.scope.suite == "longmemeval_s" and spec.run.missing_answers == "skipped"
    assert profile("judge.runs=3")[1] == ("judge.runs=3 (profile: 1)",)


@pytest.mark.slow
def test_a_run_judged_by_our_rubric_judge_gets_the_authors_judge_beside_it(tmp_path: Path) -> None:
    def judge(endpoint: str, body: dict[str, Any]) -> Any:
        return Text("No.") if endpoint == "chat" and body.get("model") == MODEL else None

    run_dir = tmp_path / "run"
    args = [
        "run", "+exp=full_context", "dataset=longmemeval_s", f"dataset.path={DATA / 'longmemeval_mini.json'}",
        "embedder=minilm", "judge.runs=2", f"hydra.run.dir={run_dir}", *FAST,
    ]  # fmt: skip
    authors = ["judge.model=" + MODEL, "judge.runs=1", "judge.prompt=longmemeval", "judge.mode=yes_no"]
    with StandinServer(api_key=TEST_KEY, extra_models=[MODEL]) as server:
        server.set_handler(judge)
        env = cli_env(server.base_url, tmp_path / "cache")
        assert run_cli(args, env).returncode == 0
        own = (run_dir / "metrics.json").read_bytes()
        again = run_cli(["judge", str(run_dir), *authors, *FAST[:3]], env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (run_dir / "metrics.json").read_bytes() == own  # the run's own judge's figures stay
    [folder] = (run_dir / "judges").iterdir()
    rows = read_jsonl(folder / "predictions.jsonl")
    assert [r["judge"] for r in rows] == [["WRONG"]] * 3  # one run each, every reply "No."
    assert json.loads((folder / "metrics.json").read_text())["overall"]["lme_overall"] == 0.0
