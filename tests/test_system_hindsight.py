"""hindsight: Hindsight 1.1.0 (hindsight-api-slim) in its own venv (made by `setup-system hindsight`, from the
pinned requirements), as a service the adapter starts with Hindsight's bundled PostgreSQL, reached over the
HTTP system protocol. End to end through the real CLI, venv, database and service against the stand-in,
which answers Hindsight's structured-output requests from the request's own JSON schema (strings made of
the request's words: nothing of LOCOMO)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, files_containing, read_jsonl, run_cli
from devtools.standin.server import StandinServer


class _Schemas:
    """The stand-in's handler: it leaves every answer to the stand-in's own json_schema generator and
    notes how Hindsight asked (a structured request, strict as `strict_schema` says)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.formats: list[tuple[str, bool]] = []

    def __call__(self, endpoint: str, body: dict[str, Any]) -> Any:
        if endpoint == "chat":
            fmt = body.get("response_format") or {}
            kind = fmt.get("type", "none") if isinstance(fmt, dict) else "none"
            strict = bool(isinstance(fmt, dict) and (fmt.get("json_schema") or {}).get("strict"))
            with self.lock:
                self.formats.append((kind, strict))
        return None


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A cache folder holding the venv, made once through the CLI (the user's one command)."""
    folder = tmp_path_factory.mktemp("hindsight-cache")
    made = run_cli(["setup-system", "hindsight", "--quiet"], cli_env("", folder), timeout=1500)
    assert made.returncode == 0, made.stderr[-3000:]
    assert "hindsight-api-slim 1.1.0" in made.stdout
    return folder


def test_without_the_venv_one_line_names_the_command(tmp_path, locomo_mini):
    with StandinServer(api_key=TEST_KEY) as server:
        args = ["run", "+exp=hindsight", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
                f"hydra.run.dir={tmp_path / 'run'}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "empty"))
    assert result.returncode != 0
    assert "python -m mem0bench setup-system hindsight" in result.stderr and "Traceback" not in result.stderr


def _postgres_processes(folder: Path) -> list[str]:
    """The PostgreSQL servers serving `folder`'s data (another test, or a suite beside this one, may run
    its own)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if command[0].endswith(b"/bin/postgres") and str(folder / "data").encode() in b" ".join(command):
                found.append(pid)
    return found


def _database_folder(run_dir: Path) -> Path:
    """The run's database folder: in the run's state folder, or (a root harness) in the shared one."""
    found = [p.parent.parent for p in run_dir.rglob("PG_VERSION") if p.parent.name == "data"]
    base = Path(tempfile.gettempdir()) / "mem0bench-hindsight-db"
    for folder in base.iterdir() if base.is_dir() else []:
        owner = folder / "owner"
        if owner.is_file() and Path(owner.read_text().strip()).is_relative_to(run_dir.resolve()):
            found.append(folder)
    assert len(found) == 1, found
    return found[0]


def _pg0_record(folder: Path) -> Path:
    """Where pg0 records the instance it created (with pg0's public default password)."""
    name = "mem0bench-" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    home = folder / "home" if (folder / "home").is_dir() else folder.parent / "home"
    return home / ".pg0" / "instances" / name


def _assert_no_stored_secret(run_dir: Path, folder: Path) -> None:
    """The database needs no password, and none is kept: no password file, no pg0 record, a pg_hba.conf
    admitting the unix socket alone with `trust` (no TCP line), and no TCP listener configured."""
    for root in (run_dir, folder):
        assert [p for p in root.rglob("*") if p.name in ("password", "password.next")] == []
    assert not _pg0_record(folder).exists()
    lines = [line.split() for line in (folder / "data" / "pg_hba.conf").read_text().splitlines()]
    assert [line for line in lines if line and not line[0].startswith("#")] == [
        ["local", "all", "all", "trust"]
    ]
    logs = [p.read_text(errors="replace") for p in folder.rglob("*.log") if "installation" not in p.parts]
    assert any("listening on Unix socket" in log for log in logs)
    assert not any("listening on IPv" in log for log in logs)  # never on TCP, not even when pg0 created it


@pytest.mark.slow
def test_conv26_end_to_end(cache, tmp_path, locomo_path):
    schemas = _Schemas()
    with StandinServer(api_key=TEST_KEY) as server:
        server.set_handler(schemas)
        run_dir = tmp_path / "run"
        args = ["run", "+exp=hindsight", f"dataset.path={locomo_path}", "dataset.conversations=[conv-26]",
                "eval.max_questions=6", "judge.runs=1", f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, cache), timeout=2400)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr

        (ingest,) = read_jsonl(run_dir / "ingest.jsonl")
        assert (
            ingest["failures"] == 0
            and ingest["details"]["sessions"] == ingest["details"]["sessions_added"] == 19
        )
        rows = read_jsonl(run_dir / "predictions.jsonl")
        assert len(rows) == 6
        for row in rows:
            # The authors' answer context: the whole recall result as JSON, facts first (the run folder
            # keeps its first 16,000 characters).
            assert row["context"].startswith('{"results": [{"id": ') and row["context_items"] > 0
            assert '"document_id": "conv-26_session_' in row["context"]
            assert '"context": "Conversation between Caroline and Melanie (session_' in row["context"]
            assert row["context_dia_ids"] and row["context_tokens"] > 1000
        llm = json.loads((run_dir / "metrics.json").read_text())["tokens"]["llm"]
        # Hindsight's calls came through the bridge under the adapter's stages, each in its scope.
        assert llm["hindsight_ingest"]["calls"] >= 19
        assert llm["hindsight_ingest_embedding"]["calls"] > 0
        assert llm["hindsight_search_embedding"]["calls"] == 6
        assert "hindsight" not in llm  # no call went unscoped (it would count under the route's name)
        # Hindsight asked for strict JSON schemas (the harness's own answer and judge calls ask for none).
        structured = [strict for kind, strict in schemas.formats if kind == "json_schema"]
        assert len(structured) == llm["hindsight_ingest"]["calls"] and all(structured)
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["system_versions"]["hindsight-api-slim"] == "1.1.0"
        assert files_containing(run_dir, TEST_KEY) == []

        folder = _database_folder(run_dir)
        _assert_no_stored_secret(run_dir, folder)

        # A pg_hba.conf edited to admit TCP with a password: the rerun puts the socket-only one back.
        hba = folder / "data" / "pg_hba.conf"
        owner = hba.stat()
        hba.write_text("local all all password\nhost all all 127.0.0.1/32 password\n")
        os.chown(hba, owner.st_uid, owner.st_gid)
        paid = server.count("chat") + server.count("embeddings")
        again = run_cli(args, cli_env(server.base_url, cache), timeout=1800)
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.count("chat") + server.count("embeddings") == paid  # resumed: nothing asked again
        _assert_no_stored_secret(run_dir, folder)
    # The database stopped with the run.
    assert _postgres_processes(folder) == []


@pytest.mark.slow
def test_check_system_holds(cache):
    checked = run_cli(
        ["check-system", "mem0bench.systems.external.hindsight.Hindsight"], cli_env("", cache), timeout=1500
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "9 of 9 checks hold" in checked.stdout


def test_config_keys_are_classified():
    # How the service is reached is result-neutral; what Hindsight stores and recalls re-ingests.
    from mem0bench.pipeline.config_change import Reach, is_neutral, reach_of

    for key in ("timeout_s", "max_retries", "max_concurrency", "workers"):
        assert is_neutral(f"method.{key}")
    for key in ("budget", "max_tokens", "include_entities", "max_entity_tokens", "include_chunks",
                "max_chunk_tokens", "reranking", "strict_schema"):  # fmt: skip
        assert not is_neutral(f"method.{key}") and reach_of(f"method.{key}") == Reach.INGEST


def test_bad_settings_are_one_line_errors():
    from mem0bench.systems.external.hindsight.system import Hindsight

    with pytest.raises(ValueError, match="reranking must be one of"):
        Hindsight(reranking="cross_encoder", context=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget must be one of"):
        Hindsight(budget="huge", context=None)  # type: ignore[arg-type]


def test_cost_plan_counts_one_retain_per_session(locomo_mini):
    from mem0bench.data.loader import load_dataset
    from mem0bench.systems.external.hindsight.costs import EXTRACT_PROMPT_TOKENS, hindsight_cost_plan

    dataset = load_dataset(locomo_mini)
    plan = hindsight_cost_plan({"max_tokens": 4096}, dataset, 4)
    sessions = sum(1 for c in dataset.conversations for s in c.sessions if s.turns)
    lines = {line.what: line for line in plan.lines}
    assert lines["fact extraction"].calls >= sessions
    assert lines["fact extraction"].prompt > sessions * EXTRACT_PROMPT_TOKENS
    assert lines["query embeddings"].calls == 4
    # Facts as JSON (their text is what max_tokens bounds), entities and chunks.
    assert 4096 + 8192 + 2048 < plan.context_tokens < 3 * 4096 + 8192 + 2048


def test_check_systems_stand_in_follows_local_refs():
    # Hindsight's structured outputs are pydantic models: their facts are `$ref`s into `$defs`, which the
    # check-system stand-in must follow (a string in place of a fact object is a malformed fact).
    from mem0bench.conformance.standin import simplest

    schema = {
        "type": "object", "required": ["facts"],
        "properties": {"facts": {"type": "array", "items": {"$ref": "#/$defs/Fact"}}},
        "$defs": {"Fact": {"type": "object", "required": ["what", "kind"],
                           "properties": {"what": {"type": "string"}, "kind": {"enum": ["world", "experience"]}}}},
    }  # fmt: skip
    assert simplest(schema, ["Caroline", "painted"]) == {
        "facts": [{"what": "Caroline painted", "kind": "world"}]
    }
