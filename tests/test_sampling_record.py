"""The sampling parameters each stage's chat requests set: recorded by the client, merged over processes."""

from __future__ import annotations

from mem0bench.llm.ledger import UsageLedger
from mem0bench.llm.sampling import Sampling, merge_sampling


def test_a_request_s_sampling_parameters_are_read_as_it_set_them() -> None:
    assert Sampling.of_request({"temperature": 0, "top_p": 0.9, "max_tokens": 50}) == Sampling(0.0, 0.9, 50)
    assert Sampling.of_request({"max_completion_tokens": 20}) == Sampling(None, None, 20)
    assert Sampling.of_request({"temperature": True, "top_p": "1"}) == Sampling(None, None, None)


def test_the_ledger_lists_each_stage_s_combinations_once_and_processes_merge() -> None:
    ledger = UsageLedger()
    for _ in range(3):
        ledger.record_sampling("answer", Sampling(0.0, None, 64))
    ledger.record_sampling("amem_ingest", Sampling(1.0, None, None))
    ledger.record_sampling("amem_ingest", Sampling(None, None, None))
    snapshot = ledger.snapshot()["sampling"]
    assert snapshot == {
        "amem_ingest": [
            {"temperature": None, "top_p": None, "max_tokens": None},
            {"temperature": 1.0, "top_p": None, "max_tokens": None},
        ],
        "answer": [{"temperature": 0.0, "top_p": None, "max_tokens": 64}],
    }
    earlier = {
        "answer": [{"temperature": 0.0, "top_p": None, "max_tokens": 64}],
        "ingest": [{"temperature": 0.2}],
    }
    merged = merge_sampling([earlier, None, snapshot])
    assert merged["answer"] == snapshot["answer"] and merged["ingest"][0]["temperature"] == 0.2
    assert set(merged) == {"amem_ingest", "answer", "ingest"}
