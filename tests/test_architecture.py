"""The package's import graph: no cycles, and no import from a lower layer to a higher one.

The graph is read from the source with `ast` (imports under `if TYPE_CHECKING:` and inside functions
count too: a type-only cycle is still a cycle in the design). A module may import its own package's
modules and anything in a lower layer; packages in the same layer may not import each other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("mem0bench", "devtools", "benchmarks", "scripts")
CHECKOUT_ONLY = frozenset({"devtools", "benchmarks", "scripts", "tests"})

# Lowest first. The first component under mem0bench (a subpackage or a top-level module) names the unit;
# `systems` holds every memory system (our methods, our baselines, other teams' libraries), all built on
# memory's protocol and stores; `rundir` (the run directory's format: files, rows, reading them back) sits
# below everything that writes runs (`pipeline`) or reads them (`report`). Above the package, the
# checkout-only code: `devtools` (the stand-in server and the helpers tests, benchmarks and scripts share),
# then `benchmarks` and `scripts`; they may import mem0bench, and mem0bench never imports them.
# Above the pipeline, the applications that read (and, for import, write) run directories, each behind
# its own command: `status`, `importing` (other systems' published answers), `comparison` (two runs,
# paired: below `report`, whose paired tables use it) and `conformance` (check-system: it exercises the
# systems from above, so no system imports it); `judge_check` (the judge's error rates) reads published
# files through `importing`, so it sits one layer higher.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"common", "paths"}),
    frozenset({"tokens"}),
    frozenset({"data", "llm", "metrics"}),
    frozenset({"prompts", "suites"}),
    frozenset({"memory"}),
    frozenset({"systems"}),
    frozenset({"rundir"}),
    frozenset({"pipeline"}),
    frozenset({"status", "importing", "comparison", "conformance", "merging"}),
    frozenset({"judge_check"}),
    frozenset({"report"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
    frozenset({"devtools"}),
    frozenset({"benchmarks"}),
    frozenset({"scripts"}),
)


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The package modules `module` imports (a `from package import name` counts `package.name` when
    that is a module, else `package`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names]
            names = [target] if not any(s in known for s in submodules) else []
            names += [s for s in submodules if s in known]
        else:
            continue
        for name in names:
            # `import a.b.c` binds the deepest known module of the dotted name.
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = _module_files()
    known = set(files)
    return {module: _imported(module, path, known) for module, path in files.items()}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[0] if parts[0] != "mem0bench" else (parts[1] if len(parts) > 1 else "mem0bench")


def _layer(unit: str) -> int | None:
    return next((i for i, units in enumerate(LAYERS) if unit in units), None)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan), as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        unit = _unit(module)
        for target in sorted(targets):
            other = _unit(target)
            if other == unit or other == "mem0bench":
                continue
            mine, theirs = _layer(unit), _layer(other)
            if mine is None or theirs is None:
                continue  # reported by test_every_unit_has_a_layer
            if theirs >= mine:
                problems.append(f"{module} (layer {mine}) imports {target} (layer {theirs})")
    return problems


def _units(modules: Iterable[str]) -> set[str]:
    return {_unit(m) for m in modules}


def test_every_unit_has_a_layer() -> None:
    unplaced = sorted(u for u in _units(import_graph()) if u != "mem0bench" and _layer(u) is None)
    assert not unplaced, f"place these in LAYERS in {Path(__file__).name}: {unplaced}"


def test_no_import_cycles() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    problems = upward_imports(import_graph())
    assert not problems, "upward imports:\n" + "\n".join(problems)


def test_the_checks_see_cycles_and_upward_imports() -> None:
    """The checkers themselves: a planted cycle and a planted upward import are reported."""
    graph = {
        "mem0bench.pipeline.a": {"mem0bench.pipeline.b"},
        "mem0bench.pipeline.b": {"mem0bench.pipeline.a"},
        "mem0bench.prompts.p": {"mem0bench.memory.base"},
        "mem0bench.memory.base": {"mem0bench.data.model"},
        "mem0bench.data.model": set(),
    }
    assert find_cycles(graph) == [["mem0bench.pipeline.a", "mem0bench.pipeline.b"]]
    assert upward_imports(graph) == ["mem0bench.prompts.p (layer 3) imports mem0bench.memory.base (layer 4)"]


def test_the_graph_reads_type_checking_and_relative_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mem0bench.pipeline.runner import X\n"
        "from .records import Y\nimport mem0bench.llm.client\n",
        encoding="utf-8",
    )
    known = {"mem0bench.pipeline.runner", "mem0bench.pipeline.records", "mem0bench.llm.client"}
    assert _imported("mem0bench.pipeline.summary", source, known) == known


def test_our_own_systems_do_not_lean_on_other_teams_libraries() -> None:
    """Inside `systems`: the paper's methods and our baselines never import the external adapters (an
    adapter may reuse our pieces, e.g. mem0_oss uses Mem0's per-speaker streams, not the other way)."""
    ours = ("mem0bench.systems.methods", "mem0bench.systems.baselines")
    problems = [
        f"{module} imports {target}"
        for module, targets in sorted(import_graph().items())
        if module.startswith(ours)
        for target in sorted(targets)
        if target.startswith("mem0bench.systems.external")
    ]
    assert not problems, "\n".join(problems)


def test_the_product_never_imports_checkout_only_code() -> None:
    """mem0bench is what the wheel ships: no import of devtools, benchmarks, scripts or tests."""
    graph = import_graph()
    problems = []
    for module, path in sorted(_module_files().items()):
        if not module.startswith("mem0bench"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            problems += [f"{module} imports {n}" for n in names if n.split(".")[0] in CHECKOUT_ONLY]
    assert graph and not problems, "\n".join(problems)


def test_llm_takes_plain_settings_not_the_hydra_config() -> None:
    """The Hydra config is parsed once, into `pipeline.spec.ExperimentSpec`; the LLM client's package
    sees plain settings and never imports omegaconf or hydra (not even lazily)."""
    offenders = []
    for path in sorted((ROOT / "mem0bench" / "llm").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("omegaconf", "hydra")]
    assert not offenders, offenders
