"""OpenAI's reasoning models (o1/o3/o4-mini, gpt-5 and later): requests adapted, and the adaptation recorded."""

from __future__ import annotations

import pytest
import yaml

from devtools.e2e import FAST, TEST_KEY, cli_env, read_jsonl, run_cli
from devtools.standin.server import StandinServer
from mem0bench.llm.payloads import chat_payload, is_reasoning_model
from mem0bench.llm.settings import LLMSettings

REASONING = ["o1", "o1-mini", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.1",
             "gpt-5-2025-08-07", "gpt-6", "openai/o3-mini"]  # fmt: skip
CHAT = ["gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-nano", "gpt-3.5-turbo", "gpt-5-chat-latest",
        "llama-3.1-8b-instruct", "omni-moderation-latest", "qwen2.5:7b"]  # fmt: skip
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("model", REASONING)
def test_reasoning_models_get_max_completion_tokens_and_no_temperature(model: str) -> None:
    assert is_reasoning_model(model)
    body = chat_payload(LLMSettings(model=model, max_tokens=300, seed=1), MESSAGES, None, 0.0, None)
    assert "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 300 and body["seed"] == 1


@pytest.mark.parametrize("model", CHAT)
def test_other_models_keep_their_request(model: str) -> None:
    assert not is_reasoning_model(model)
    body = chat_payload(LLMSettings(model=model, max_tokens=300), MESSAGES, None, None, None)
    assert body["temperature"] == 0.0 and body["max_tokens"] == 300 and "max_completion_tokens" not in body


@pytest.mark.slow
def test_a_run_with_reasoning_models_is_accepted_and_says_so(tmp_path) -> None:
    models = ["gpt-5-mini", "o4-mini"]
    with StandinServer(api_key=TEST_KEY, extra_models=models, reasoning_models=models) as server:
        run_dir = tmp_path / "run"
        args = ["run", "+exp=rag", "llm.model=gpt-5-mini", "judge.model=o4-mini", "llm.max_tokens=200",
                "dataset.path=tests/data/locomo_mini.json", "dataset.conversations=mini-1",
                "eval.max_questions=2", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"))
        chats = [body for endpoint, body in server.requests if endpoint == "chat"]
        rejected = server.count("chat", 400)
    assert result.returncode == 0, result.stderr[-3000:]
    assert rejected == 0
    assert {b["model"] for b in chats} == set(models)
    assert all("temperature" not in b and b["max_completion_tokens"] == 200 for b in chats)
    assert all(r["prediction"] for r in read_jsonl(run_dir / "predictions.jsonl"))
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert set(saved["request_adaptations"]) == set(models)
    assert "max_completion_tokens" in saved["request_adaptations"]["gpt-5-mini"]
