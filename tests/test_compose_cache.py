"""Hydra's composed config, cached per input (mem0bench/cli/compose_cache.py): a hit is the same config a
fresh composition gives, and nothing that composing reads outside the key, or that is secret, is kept."""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from omegaconf import OmegaConf

from devtools.e2e import FAST, TEST_KEY, cli_env, run_cli
from mem0bench.__main__ import main
from mem0bench.cli import compose_cache
from mem0bench.cli.compose_cache import _ConfigUnpickler, _read, composition_key
from mem0bench.paths import CONFIG_DIR

EXPERIMENTS = sorted(
    p.relative_to(CONFIG_DIR / "exp").with_suffix("").as_posix() for p in (CONFIG_DIR / "exp").rglob("*.yaml")
)
SEARCH_PATH = [("hydra", "pkg://hydra.conf"), ("main", str(CONFIG_DIR)), ("schema", "structured://")]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "compose"
    monkeypatch.setenv("MEM0BENCH_COMPOSE_CACHE", str(folder))
    return folder


@pytest.fixture
def compositions(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The override lists Hydra really composed (the cache's misses), in order."""
    seen: list[list[str]] = []
    original = ConfigLoaderImpl.load_configuration

    def counting(self: Any, config_name: Any, overrides: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append(list(overrides))
        return original(self, config_name, overrides, *args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counting)
    return seen


def _printed_config(*overrides: str) -> str:
    """What `run OVERRIDES --cfg all` prints: the whole composed config, Hydra's part included, unresolved."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", *overrides, "--cfg", "all"]) == 0
    return out.getvalue()


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_a_hit_is_the_config_a_fresh_composition_gives(
    exp: str, cache: Path, compositions: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = (f"+exp={exp}", "llm.max_concurrency=3")
    first = _printed_config(*args)
    assert len(compositions) == 1 and len(list(cache.glob("*.pickle"))) == 1
    second = _printed_config(*args)
    assert len(compositions) == 1  # answered from the cache
    assert second == first
    monkeypatch.setenv("MEM0BENCH_COMPOSE_CACHE", "off")
    assert _printed_config(*args) == first and len(compositions) == 2


def test_an_entry_keeps_struct_mode_unresolved_interpolations_and_no_resolved_value(
    cache: Path, compositions: list[list[str]]
) -> None:
    _printed_config("+exp=mem0")
    (entry,) = cache.glob("*.pickle")
    cfg = _read(entry)
    assert OmegaConf.is_struct(cfg) and not OmegaConf.is_readonly(cfg.hydra)
    # The run folder's timestamp is resolved by each run, not frozen into the entry.
    assert OmegaConf.to_container(cfg.hydra.run, resolve=False)["dir"].startswith("results/runs/${now:")
    assert OmegaConf.get_cache(cfg) == {}
    assert cfg.hydra.runtime.cwd == os.getcwd()


def test_the_run_that_wrote_an_entry_keeps_what_it_resolved(cache: Path) -> None:
    cfg = OmegaConf.create({"when": "${now:%Y}"})
    year = cfg.when
    compose_cache._entry_bytes(cfg)
    assert OmegaConf.get_cache(cfg) == {"now": {("%Y",): year}}


def test_any_other_command_line_is_composed_afresh(cache: Path, compositions: list[list[str]]) -> None:
    for args in (
        ["+exp=mem0"],
        ["+exp=mem0", "method.top_k=5"],
        ["+exp=mem0", "method.top_k=6"],
        ["+exp=rag"],
    ):
        _printed_config(*args)
    assert len(compositions) == 4 and len(list(cache.glob("*.pickle"))) == 4


def test_a_changed_or_added_config_file_is_another_key(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, configs)
    path = [("hydra", "pkg://hydra.conf"), ("main", str(configs)), ("schema", "structured://")]

    def key() -> str | None:
        return composition_key(path, "run", ["+exp=mem0"], "RUN", True, True, config_dir=configs)

    before = key()
    assert before is not None and key() == before
    recipe = configs / "exp" / "mem0.yaml"
    recipe.write_text(recipe.read_text() + "\n# a comment is a change too\n")
    changed = key()
    assert changed not in (None, before)
    (configs / "exp" / "mine.yaml").write_text("# @package _global_\n")
    assert key() not in (None, before, changed)


@pytest.mark.parametrize(
    ("search_path", "overrides"),
    [
        (SEARCH_PATH[:2] + [("command-line", "file:///tmp/mine")] + SEARCH_PATH[2:], ["+exp=mem0"]),
        (SEARCH_PATH, ["+exp=mem0", "+embedder.api_key=x"]),
        (SEARCH_PATH, ["+exp=mem0", "++method.extra.OPENAI_API_KEY=x"]),
    ],
)
def test_no_key_when_composing_reads_what_the_key_lacks_or_a_secret(
    search_path: list[tuple[str, str]], overrides: list[str]
) -> None:
    assert composition_key(search_path, "run", overrides, "RUN", True, True) is None


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.iterdir()) if cache.exists() else []


def test_a_secret_on_the_command_line_is_never_written(cache: Path) -> None:
    _printed_config("+exp=mem0", f"+embedder.api_key={TEST_KEY}")
    assert _entries(cache) == []


@pytest.mark.parametrize(
    "override",
    ["+hydra.job.env_set.MEM0BENCH_X=1", "hydra.job.env_copy=[HOME]", "hydra.searchpath=[pkg://mem0bench]"],
)
def test_environment_values_and_a_search_path_of_ones_own_are_not_kept(override: str, cache: Path) -> None:
    _printed_config("+exp=mem0", override)
    assert _entries(cache) == []


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0BENCH_COMPOSE_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _printed_config("+exp=mem0")
    assert list(tmp_path.iterdir()) == []


def test_a_torn_entry_is_composed_again_and_replaced(cache: Path, compositions: list[list[str]]) -> None:
    expected = _printed_config("+exp=rag")
    (entry,) = cache.glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])
    assert _printed_config("+exp=rag") == expected and len(compositions) == 2
    assert _read(entry) is not None  # replaced by a whole one
    assert _printed_config("+exp=rag") == expected and len(compositions) == 2


class _Boom:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, ("echo should-never-run",))


@pytest.mark.parametrize("payload", [_Boom(), print, OmegaConf.create])
def test_an_entry_can_build_only_config_classes(payload: object, tmp_path: Path) -> None:
    path = tmp_path / "foreign.pickle"
    path.write_bytes(pickle.dumps(payload))
    assert _read(path) is None
    with pytest.raises(pickle.UnpicklingError, match="not a config class"):
        _ConfigUnpickler(io.BytesIO(path.read_bytes())).load()


def test_old_entries_are_pruned(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose_cache, "MAX_ENTRIES", 2)
    for k in (3, 4, 5):
        _printed_config("+exp=mem0", f"method.top_k={k}")
    assert len(list(cache.glob("*.pickle"))) == 2


def test_hydra_still_has_the_loader_the_cache_wraps() -> None:
    # A Hydra release that renames or reorders these would make the wrapper pass the wrong arguments.
    params = list(inspect.signature(ConfigLoaderImpl.load_configuration).parameters)
    assert params == [
        "self",
        "config_name",
        "overrides",
        "run_mode",
        "from_shell",
        "validate_sweep_overrides",
    ]


@contextlib.contextmanager
def _standin() -> Iterator[Any]:
    from devtools.standin.server import StandinServer

    with StandinServer(api_key=TEST_KEY) as server:
        yield server


def test_a_run_from_a_hit_is_the_run_from_a_fresh_composition(tmp_path: Path, locomo_mini: Path) -> None:
    compose_dir = tmp_path / "compose"
    args = ["run", "+exp=mem0", f"dataset.path={locomo_mini}", "dataset.conversations=[mini-1]",
            "eval.max_questions=2", "judge.runs=1", *FAST]  # fmt: skip
    configs, inodes = [], []
    with _standin() as server:
        for folder in ("miss", "hit"):
            env = {
                **cli_env(server.base_url, tmp_path / "cache"),
                "MEM0BENCH_COMPOSE_CACHE": str(compose_dir),
            }
            run_dir = tmp_path / "runs"
            out = run_cli([*args, f"hydra.run.dir={run_dir}"], env)
            assert out.returncode == 0, out.stderr[-2000:]
            (entry,) = compose_dir.glob("*.pickle")
            inodes.append(entry.stat().st_ino)  # a miss writes a new file in its place
            configs.append(yaml.safe_load((run_dir / "config.yaml").read_text()))
            shutil.move(run_dir, tmp_path / folder)
    assert inodes[0] == inodes[1], "the second run composed again"
    assert configs[0] == configs[1]
