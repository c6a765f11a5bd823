"""Identifiers from a dataset file that become paths (sample ids, speaker names, question ids) are checked
once, at load, by every loader: one line naming file, sample and field, and nothing created or removed
outside the run's folder (issue 32: a sample id '../../../escaped' wrote above the run; an absolute one let
mem0_oss empty a folder elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from devtools.standin.server import StandinServer
from mem0bench.data import load_dataset
from mem0bench.data.errors import MAX_ID_CHARS, DatasetError, check_path_id
from mem0bench.suites import DatasetRequest, get_suite
from mem0bench.systems.external.mem0_oss.state import reset_folder
from tests.dataset_files import LME_S, LOCOMO_MINI, PLUS, edited, load_suite, one_line

BAD_IDS = [
    "../../../escaped",
    "a/b",
    "a\\b",
    "/tmp/elsewhere",
    "..",
    ".",
    "",
    "   ",
    "nul\x00here",
    "new\nline",
    "esc\x1b[31m",
    "bidi\u202eoverride",
    "C:evil",
    "lone\ud800surrogate",
    "x" * (MAX_ID_CHARS + 1),
]
GOOD_IDS = ["conv-26", "gpt4_2f8be40d_abs", "plus-3", "José Ñúñez", "a.b", "..a", "name with spaces"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_the_checker_refuses_names_that_are_not_one_plain_folder(bad: str) -> None:
    with pytest.raises(DatasetError) as info:
        check_path_id(bad, file="f.json", sample=3, field="sample_id")
    assert str(info.value).startswith("f.json: sample #3: sample_id: ") and "\n" not in str(info.value)


@pytest.mark.parametrize("good", GOOD_IDS)
def test_the_checker_keeps_plain_names(good: str) -> None:
    assert check_path_id(good, file="f.json", sample=0, field="sample_id") == good


@pytest.mark.parametrize("bad", BAD_IDS)
def test_locomo_sample_id(tmp_path: Path, bad: str) -> None:
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s.update(sample_id=bad))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert one_line(info.value, path).startswith(f"{path}: sample #0: sample_id: ")


@pytest.mark.parametrize("key", ["speaker_a", "speaker_b"])
@pytest.mark.parametrize("bad", ["../up", "/abs", "..", "tab\there"])
def test_locomo_speaker_names(tmp_path: Path, key: str, bad: str) -> None:
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s["conversation"].update({key: bad}))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert one_line(info.value, path).startswith(f"{path}: sample mini-1: conversation.{key}: ")


def test_locomo_plain_ids_still_load(tmp_path: Path) -> None:
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s.update(sample_id="José 1"))
    assert load_dataset(path).conversations[0].sample_id == "José 1"
    assert load_dataset(LOCOMO_MINI).conversations[0].sample_id == "mini-1"


@pytest.mark.parametrize("bad", ["../../escaped", "/tmp/elsewhere", "..", "ctl\x07"])
def test_longmemeval_question_id(tmp_path: Path, bad: str) -> None:
    path = edited(LME_S, tmp_path / "lme.json", 2, lambda q: q.update(question_id=bad))
    with pytest.raises(DatasetError) as info:
        load_suite("longmemeval_s", path, tmp_path)
    assert one_line(info.value, path).startswith(f"{path}: sample #2: question_id: ")


def test_ids_differing_only_in_case_are_duplicates(tmp_path: Path) -> None:
    # One folder on a case-insensitive file system (macOS, Windows): two conversations' memories would mix.
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 1, lambda s: s.update(sample_id="MINI-1"))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert one_line(info.value, path) == (
        f"{path}: sample MINI-1: sample_id: sample_id differs only in case from sample #0's"
    )
    first_id = json.loads(LME_S.read_text())[0]["question_id"]
    path = edited(LME_S, tmp_path / "lme.json", 3, lambda q: q.update(question_id=first_id.upper()))
    with pytest.raises(DatasetError) as info:
        load_suite("longmemeval_s", path, tmp_path)
    assert one_line(info.value, path).endswith(
        ": question_id: duplicate question_id (differing only in case)"
    )


def test_locomo_plus_hosts_are_checked(tmp_path: Path) -> None:
    # Locomo-Plus names its conversations after the host's sample id ('<host>+plus0' in grouped mode).
    host = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s.update(sample_id="../host"))
    request = DatasetRequest(path=str(PLUS), data_dir=tmp_path, host_path=str(host), mode="grouped")
    with pytest.raises(DatasetError) as info:
        get_suite("locomo_plus").load(request)
    assert one_line(info.value, host).startswith(f"{host}: sample #0: sample_id: ")


# ---- mem0_oss clears only inside the run's state folder (defence in depth) ---------------------------------


def test_mem0_oss_reset_refuses_a_folder_outside_the_state_folder(tmp_path: Path) -> None:
    state = tmp_path / "run" / "state"
    state.mkdir(parents=True)
    outside = tmp_path / "elsewhere" / "maya"
    outside.mkdir(parents=True)
    (outside / "precious.txt").write_text("keep")
    (state / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    for folder in (outside, state / ".." / ".." / "elsewhere" / "maya", state / "link" / "maya", state):
        with pytest.raises(ValueError, match="not inside the run's state folder"):
            reset_folder(folder, state)
    assert (outside / "precious.txt").read_text() == "keep"
    inside = state / "conv-1" / "maya"
    inside.mkdir(parents=True)
    (inside / "stale").write_text("x")
    reset_folder(inside, state)
    assert inside.is_dir() and not any(inside.iterdir())


# ---- a real run: nothing created, nothing removed outside the run folder -----------------------------------


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


@pytest.mark.parametrize(
    ("exp", "sample_id"), [("mem0", "../../../escaped"), ("mem0_oss", "ABSOLUTE"), ("rag", "..")]
)
def test_a_climbing_sample_id_stops_the_run_inone_line(tmp_path: Path, exp: str, sample_id: str) -> None:
    victim = tmp_path / "victim"
    for slug in ("maya", "tomas"):  # mem0_oss's speaker folders, as an absolute sample id would name them
        (victim / slug).mkdir(parents=True)
        (victim / slug / "precious.txt").write_text("keep")
    sample_id = str(victim) if sample_id == "ABSOLUTE" else sample_id
    path = edited(LOCOMO_MINI, tmp_path / "locomo.json", 0, lambda s: s.update(sample_id=sample_id))
    run_dir = tmp_path / "a" / "b" / "c" / "run"
    before = _tree(tmp_path)
    with StandinServer(api_key=TEST_KEY) as server:
        args = ["run", f"+exp={exp}", f"dataset.path={path}", "eval.max_questions=2", "judge.runs=1",
                f"hydra.run.dir={run_dir}", *FAST]  # fmt: skip
        result = run_cli(args, cli_env(server.base_url, tmp_path / "cache"), timeout=240)
    after = _tree(tmp_path)
    assert {p: after.get(p) for p in before} == before  # nothing removed or changed
    made = {p for p in set(after) - set(before) if not (tmp_path / p).is_relative_to(run_dir)}
    made = {p for p in made if not p.startswith("cache")}  # the harness's own cache (MEM0BENCH_CACHE_DIR)
    assert made <= {"a", "a/b", "a/b/c"}, sorted(made)  # at most the folders above the run's own
    assert not list(tmp_path.rglob("escaped"))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: sample #0: sample_id: "), lines
