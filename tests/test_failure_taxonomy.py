"""One failure taxonomy: every kind in `FailureKind`, each with its properties in one table, and every
reader (the retry rule, the rerun advice, rows read back) going by that table."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from mem0bench.llm.types import (
    CALL_KINDS,
    FAILURE_KINDS,
    TRANSIENT_KINDS,
    CallFailureKind,
    FailureKind,
    as_failure_kind,
    kind_traits,
)
from mem0bench.memory.base import StepFailure
from mem0bench.pipeline.advice import rerun_advice
from mem0bench.pipeline.failures import SYSTEM_ERROR
from mem0bench.rundir.records import AnswerRecord, FailureRecord, IngestRecord
from mem0bench.systems.external.failure_kinds import LIBRARY_ERROR

PACKAGE = Path(__file__).resolve().parent.parent / "mem0bench"


def test_the_table_holds_every_kind_and_nothing_else() -> None:
    assert list(FAILURE_KINDS) == list(get_args(FailureKind))
    assert set(get_args(CallFailureKind)) == CALL_KINDS < set(FAILURE_KINDS)
    assert {LIBRARY_ERROR, SYSTEM_ERROR, "context_window", "unknown"} == set(FAILURE_KINDS) - CALL_KINDS


def test_properties_of_the_kinds() -> None:
    assert {"rate_limit", "server_error", "timeout", "connection"} == TRANSIENT_KINDS
    cached = {kind for kind, traits in FAILURE_KINDS.items() if traits.from_cache}
    assert {"malformed", "empty"} == cached
    assert not TRANSIENT_KINDS & cached
    for kind, traits in FAILURE_KINDS.items():
        # A kind a rerun cannot put right says what to change instead.
        assert traits.transient or traits.remedy, kind
    assert "llm.max_tokens" in kind_traits("bad_request").remedy
    assert "llm.model" in kind_traits("malformed").remedy


def test_an_unknown_kind_read_back_is_unknown() -> None:
    """Rows written by another version (a kind this one does not know, or none) still read."""
    assert as_failure_kind("quota_exceeded") == "unknown" and as_failure_kind(None) == "unknown"
    assert as_failure_kind(3) == "unknown" and as_failure_kind("timeout") == "timeout"
    assert kind_traits("quota_exceeded") == FAILURE_KINDS["unknown"]
    assert (
        FailureRecord.from_dict({"stage": "answer", "kind": "quota_exceeded", "message": "x"}).kind
        == "unknown"
    )
    assert FailureRecord.from_dict({"stage": "answer"}).kind == "unknown"
    row = {"system": "s", "sample_id": "c", "stage": "update", "kind": "quota_exceeded", "message": "m"}
    assert StepFailure.from_dict(row).kind == "unknown"
    ingest = IngestRecord.from_dict(
        {"sample_id": "c", "failures": 3, "failure_kinds": {"timeout": 1, "odd": 2}}
    )
    assert ingest.failure_kinds == {"timeout": 1, "unknown": 2}
    assert _answer("answer:quota_exceeded: no").failure_kind == "unknown"
    assert _answer("answer:timeout: slow").failure_kind == "timeout"


def _answer(failure: str) -> AnswerRecord:
    fields = ("conversation", "question", "gold", "category", "category_id", "prediction")
    row = {name: None for name in fields} | {"context_tokens": 0, "search_latency_s": 0.0}
    return AnswerRecord.from_dict({**row, "total_latency_s": 0.0, "qid": "q", "failure": failure})


def test_known_kinds_keep_their_strings_in_rows() -> None:
    row = FailureRecord("ingest", "library_error", "boom", conversation="conv-1").to_dict()
    assert row["kind"] == "library_error"
    assert FailureRecord.from_dict(row) == FailureRecord(
        "ingest", "library_error", "boom", conversation="conv-1"
    )


def _failures(*kinds: str) -> list[FailureRecord]:
    return [FailureRecord("answer", as_failure_kind(k), "m") for k in kinds]


def test_the_advice_goes_by_the_table() -> None:
    text = rerun_advice(_failures("timeout", "malformed", "bad_request", "system_error"), retried=False)
    assert "retry the 1 transient ones (timeout 1)" in text
    assert "(malformed 1) come back the same from the cache: rerun with run.retry_failed=true" in text
    assert f"(bad_request 1) fail the same way on every attempt: {kind_traits('bad_request').remedy}" in text
    assert "the system's own code raised on 1 question(s) (system_error 1)" in text
    retried = rerun_advice(_failures("empty"), retried=True)
    assert f"failed again when asked afresh: {kind_traits('empty').remedy}" in retried
    # Kinds outside the client's: a library's error and a kind this version does not know.
    other = rerun_advice(_failures("library_error", "quota_exceeded"), retried=False)
    assert kind_traits("library_error").remedy in other and kind_traits("unknown").remedy in other
    assert "transient" not in other


_PENDING: frozenset[str] = frozenset()
"""Files allowed to list kind names while being rewritten elsewhere (none now)."""


def test_no_second_list_of_kinds() -> None:
    """No module but llm/types.py spells out a set of kinds (a frozenset or tuple of two kind names or
    more): every other reader asks the table."""
    kinds = set(FAILURE_KINDS)
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "llm" / "types.py" or str(path.relative_to(PACKAGE)) in _PENDING:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                named = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in kinds]
                if len(named) >= 2 and len(named) == len(node.elts):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, offenders
