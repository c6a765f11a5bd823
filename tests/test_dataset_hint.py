"""Without a dataset and without network, each command names the option it takes for a local copy."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from mem0bench.cli.data import data_main
from mem0bench.cli.import_answers import import_main

FIXTURES = Path(__file__).parent / "fixtures" / "published"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty data folder and a download that cannot reach the network."""

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("no network in this test")

    monkeypatch.setenv("MEM0BENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("mem0bench.data.download.urllib.request.urlopen", refuse)


def test_import_without_a_dataset_suggests_its_own_flag_and_the_flag_works(
    tmp_path, offline, capsys, locomo_mini
):
    out = tmp_path / "imported"
    assert import_main([str(FIXTURES / "by_conversation.json"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "download failed" in err
    assert "pass --dataset FILE pointing at a copy of locomo10.json" in err
    assert "dataset.path=" not in err and "--path" not in err
    # The flag the message names is the one `import` takes.
    import_main([str(FIXTURES / "by_conversation.json"), "--out", str(out), "--dataset", str(locomo_mini)])
    assert "unrecognized arguments" not in capsys.readouterr().err


def test_data_stats_suggests_path(offline, capsys):
    assert data_main(["stats"]) == 2
    err = capsys.readouterr().err
    assert "pass --path FILE pointing at a copy" in err and "dataset.path=" not in err
