"""What a new user meets on the first day: the README's test command selects every test it runs and skips
none, the realdata tests' advice fixes their failure, and an install hint works where it is given."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from mem0bench.common.errors import ConfigurationError
from mem0bench.common.install import checkout_root, install_hint
from tests.conftest import REPO_DIR, locomo_candidates

TESTS = REPO_DIR / "tests"
# The markers deselected by default (they need what [all] leaves out) and the command that runs them.
OPT_IN = {"llamacpp", "chromium"}
OPT_IN_COMMAND = 'python -m pytest -m "llamacpp or chromium"'


def _pytest_options() -> dict:
    return tomllib.loads((REPO_DIR / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
        "ini_options"
    ]


def test_the_default_run_deselects_exactly_the_opt_in_markers():
    args = shlex.split(_pytest_options()["addopts"])
    expression = args[args.index("-m") + 1]
    assert set(re.findall(r"not (\w+)", expression)) == OPT_IN
    assert expression == " and ".join(f"not {m}" for m in sorted(OPT_IN, reverse=True))


def test_every_opt_in_marker_marks_tests_so_neither_ci_command_collects_nothing():
    # pytest exits 5 when a selection is empty: .ci/run's second command selects these markers.
    used = {m: [] for m in OPT_IN}
    for path in TESTS.glob("test_*.py"):
        text = path.read_text(encoding="utf-8")
        for marker in OPT_IN:
            if f"pytest.mark.{marker}" in text:
                used[marker].append(path.name)
    assert all(used.values()), used


def test_ci_and_the_readme_run_both_commands():
    ci = (REPO_DIR / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines() if line.strip().startswith("python -m pytest")]
    assert lines == ["python -m pytest", OPT_IN_COMMAND], lines
    # The llama.cpp server must be installed before the command that runs its tests.
    assert ci.index("'.[llamacpp]'") < ci.index(OPT_IN_COMMAND)
    readme = (REPO_DIR / "README.md").read_text(encoding="utf-8")
    assert "pip install -e '.[all]' && python -m pytest" in readme
    assert OPT_IN_COMMAND in readme


def test_no_test_skips():
    # A missing dependency or file fails the test with one line saying what to install or where to put it.
    skipping = re.compile(r"pytest\.(skip\(|importorskip\(|mark\.skip|mark\.skipif)")
    found = [
        f"{path.name}:{n}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != Path(__file__).name
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if skipping.search(line)
    ]
    assert not found, found


def test_the_realdata_advice_puts_the_file_where_the_tests_look(monkeypatch, tmp_path):
    """`python -m mem0bench data download`, the advice the realdata tests give, writes to its default
    folder; the tests look there."""
    from mem0bench.cli import data

    written: list[Path] = []

    def fake_download(dest: Path) -> Path:
        written.append(dest / "locomo10.json")
        return written[-1]

    monkeypatch.setattr(data, "download_locomo", fake_download)
    assert data.data_main(["download"]) == 0
    assert written and written[0] in locomo_candidates()


def test_the_realdata_tests_follow_the_per_user_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("MEM0BENCH_DATA_DIR", str(tmp_path))
    assert tmp_path / "locomo10.json" in locomo_candidates()


def _fake_package(root: Path, pyproject: str | None) -> Path:
    package = root / "mem0bench"
    package.mkdir(parents=True)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return package


def test_an_installed_package_names_itself(tmp_path):
    site = _fake_package(tmp_path / "site-packages", None)
    assert install_hint("local", site) == "pip install 'mem0bench[local]'"
    # Installed inside some other project's folder: still not `.`, which would install that project.
    other = _fake_package(tmp_path / "other", '[project]\nname = "something-else"\n')
    assert install_hint("local", other) == "pip install 'mem0bench[local]'"


def test_a_checkout_names_the_editable_install_in_it_and_its_path_elsewhere(tmp_path, monkeypatch):
    checkout = _fake_package(tmp_path / "clone", '[project]\nname = "mem0bench"\nversion = "0"\n')
    monkeypatch.chdir(tmp_path / "clone")
    assert install_hint("local", checkout) == "pip install -e '.[local]'"
    monkeypatch.chdir(tmp_path)
    assert install_hint("graph", checkout) == f"pip install -e '{tmp_path / 'clone'}[graph]'"


def test_this_checkout_is_recognised():
    assert checkout_root() == REPO_DIR


def test_the_local_embedders_error_carries_the_hint(monkeypatch):
    from mem0bench.llm import embedders

    monkeypatch.setattr(embedders.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigurationError) as caught:
        embedders.MiniLMEmbeddingBackend().check_available()
    assert str(caught.value).endswith(install_hint("local"))


def test_a_cli_started_by_a_test_takes_ctrl_c_when_the_suite_ignores_it(monkeypatch):
    """`nohup python -m pytest &` starts the suite with SIGINT ignored; the Ctrl-C tests still reach the run."""
    import signal
    import subprocess
    import sys

    from devtools import reliability

    started: list[subprocess.Popen[str]] = []
    real_popen = subprocess.Popen

    def popen(cmd, **kwargs):
        # The same process start_cli makes, reporting the SIGINT handler its Python installed.
        probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
        started.append(real_popen([sys.executable, "-c", probe], **kwargs))
        return started[-1]

    monkeypatch.setattr(reliability.subprocess, "Popen", popen)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = reliability.start_cli(["--help"], {})
    finally:
        signal.signal(signal.SIGINT, previous)
    out, err = proc.communicate(timeout=60)
    assert out.strip() == "True", (out, err)


@pytest.mark.parametrize(
    ("suite", "file"), [("longmemeval_s", "longmemeval_s_mini.json"), ("locomo", "locomo_mini.json")]
)
def test_a_file_with_other_counts_is_one_log_line(suite, file, tmp_path, caplog):
    """A LongMemEval file of another size differs in all seven categories: one line says so, not seven."""
    from mem0bench.suites import DatasetRequest, get_suite

    request = DatasetRequest(path=str(TESTS / "data" / file), data_dir=tmp_path, cache_dir=tmp_path / "hf")
    with caplog.at_level("INFO", logger="mem0bench.suites"):
        get_suite(suite).load(request)
    noted = [r for r in caplog.records if "release of" in r.getMessage()]
    assert len(noted) == 1, [r.getMessage() for r in noted]
    assert noted[0].levelname == "INFO" and "(a subset or another file)" in noted[0].getMessage()


def test_the_systems_guide_counts_the_routes_and_names_every_field_a_system_reads():
    """docs/your_system.md: as many routes as the service protocol has, and every field of the data model
    a system is given, so the guide is all a newcomer needs to read."""
    import dataclasses

    import yaml

    from mem0bench.data.model import Conversation, Question, Session, Turn

    guide = (REPO_DIR / "docs" / "your_system.md").read_text(encoding="utf-8")
    spec = yaml.safe_load((REPO_DIR / "docs" / "http_system.openapi.yaml").read_text(encoding="utf-8"))
    verbs = {"get", "put", "post", "delete", "patch", "head", "options"}
    routes = sum(1 for item in spec["paths"].values() for verb in item if verb in verbs)
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    assert f"{words[routes]} HTTP routes" in guide
    for model in (Conversation, Session, Turn, Question):
        missing = [f.name for f in dataclasses.fields(model) if f"`{f.name}`" not in guide]
        assert not missing, (model.__name__, missing)
