"""Every structured-output schema we ship, pinned by the sha256 of its JSON text.

The schema's JSON text (key order included) is in every request body and in every response-cache key: a
change of one byte re-buys every cached reply and makes a run incomparable with earlier ones. The digests
below were taken before the reply models moved back onto pydantic (from the dataclass copy, which
tests/data/reply_models.json had pinned to pydantic's own output); a deliberate change of a schema
updates its line here, in the same commit as the change."""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
from pathlib import Path

import pytest

import mem0bench
from mem0bench.llm.probes import _probe_spec
from mem0bench.llm.types import StructuredSpec
from mem0bench.prompts import update

PACKAGE = Path(mem0bench.__file__).resolve().parent
BATCH_COUNTS = (0, 1, 2, 3, 7)

SCHEMA_SHA256 = {
    "prompts.extraction.EXTRACTION_SPEC": "283ae8ace92a923ce7b3f4b7bde56ed071fd7213a5936abcf4a43d921a42311e",
    "prompts.extraction.RICH_EXTRACTION_SPEC": "8a1b68b7e15b81f5d42aedf10396e5ddb2d48af7cc118658d5b23302002099a0",
    "prompts.graph.ENTITIES_SPEC": "e4c64354fa60086c377487f78c280ef41b193b4eb89f85193729bf90711a7faf",
    "prompts.graph.RELATIONS_SPEC": "1d66e9a73b5d0e9ffd179242bc192c52a55e9812edcb2ad03e0491ef5271c9d9",
    "prompts.graph.OBSOLETE_SPEC": "dc61af12e6e963bd5bddac896dd3ec236230941457777f80edf2adb7d236362c",
    "prompts.graph.RECURRENCE_SPEC": "a00e978dd587ea349edb26143e4f199298f235bcdc896704bc32f4df38224913",
    "prompts.graph.QUERY_ENTITIES_SPEC": "fa9f26b4428b5fa4cce7c0feba498bdfe6311a9a523af7e4731fba9ed4b6e428",
    "prompts.judge.JUDGE_SPEC": "29b08c5b2ca99438fe11811a556724a70e57dcfd047da712d3f8f29be41c2e92",
    "prompts.judge.GRADED_JUDGE_SPEC": "abc1a7acbf48486918d95f61569413ef916851a45c0b30f7c048750dffb08857",
    "prompts.saved_notes.NOTES_SPEC": "e067d2e8dcdd1044f10eee707319387d63f2fa13e2acf411c92059f0837874de",
    "prompts.saved_notes.MEMORIES_SPEC": "409868eb519d2d218c04b97fc465853e76522260f4f16e0aeaba8f22cdb6be58",
    "prompts.update.UPDATE_SPEC": "9a1797f3589e348610608f51a92fa82e460348277bf714d8006fbda6d7534657",
    "prompts.update.PAPER_UPDATE_SPEC": "824c246aa09010fcdd22736cee660e361ac60a257d2c3a18227eb50be789ae2f",
    "systems.methods.mem0g.ingestion.ENTITIES_SPEC": "e4c64354fa60086c377487f78c280ef41b193b4eb89f85193729bf90711a7faf",
    "systems.methods.mem0g.ingestion.OBSOLETE_SPEC": "dc61af12e6e963bd5bddac896dd3ec236230941457777f80edf2adb7d236362c",
    "systems.methods.mem0g.ingestion.RECURRENCE_SPEC": "a00e978dd587ea349edb26143e4f199298f235bcdc896704bc32f4df38224913",
    "systems.methods.mem0g.ingestion.RELATIONS_SPEC": "1d66e9a73b5d0e9ffd179242bc192c52a55e9812edcb2ad03e0491ef5271c9d9",
    "llm.probes._probe_spec(tool)": "5c83a21bad7eff39d127733642812db410871e0fbee9fc784c0cceceb061f9f4",
    "prompts.update.batch_update_spec(0, replace)": "b1ec44932b493545854ac5431df63f40ec807455f64257a9b362dc4f3575067e",
    "prompts.update.batch_update_spec(1, replace)": "3d202b4fd2a8412a48e5e75ccda4317c518e1558b6063af99132ffbc43fe0984",
    "prompts.update.batch_update_spec(2, replace)": "17e34efe08f13a1a0e4742d01c73e78c62e43d5df198c531dab1fd2deb56ac5e",
    "prompts.update.batch_update_spec(3, replace)": "72fecd3d9d553d1c29f0499e342dab790234ec229bb877653c16c20b75589cb8",
    "prompts.update.batch_update_spec(7, replace)": "1b55218021277d75cd84ebbab4cebec11135e2e2b0f2d838232264feda2251d2",
    "prompts.update.batch_update_spec(0, paper)": "30e669f3784905533956dd5b0aa7ea044e432e04ff78a6c15645715d4c505c93",
    "prompts.update.batch_update_spec(1, paper)": "f11f27425c6c34d347e321a155aecec9d9ec1e90a8839b8414b0290779ced255",
    "prompts.update.batch_update_spec(2, paper)": "9e58e1bd63008d249f437c0838610eb53c5f5cb606b7f69bd57581b9f6d3e620",
    "prompts.update.batch_update_spec(3, paper)": "34b6522a58bdbf3856d8bb321fb5fb103adcc593b0256686c1ff3886776f39f3",
    "prompts.update.batch_update_spec(7, paper)": "8468c152839f59bcd5802bf2d6717e1d721bd8a1d86ba15842f99ca26575dd5b",
}

# The functions that build a spec. Every schema they can return is reached by shipped_specs(); a new one
# fails test_every_spec_factory_is_covered until it is listed here and reached there.
FACTORIES = {
    "mem0bench.llm.probes._probe_spec",
    "mem0bench.llm.structured.spec_from_model",  # every spec it makes is a module constant
    "mem0bench.prompts.extraction.extraction_spec",  # returns the module's constants
    "mem0bench.prompts.update.update_spec",  # returns the module's constants
    "mem0bench.prompts.update.batch_update_spec",  # built for several sizes below
}


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def shipped_specs() -> dict[str, StructuredSpec]:
    """Every spec the package holds as a module constant, the probe's and the batched ones, by where."""
    specs: dict[str, StructuredSpec] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "StructuredSpec" not in text and "spec_from_model" not in text:
            continue
        module = _module_of(path)
        for name, value in vars(importlib.import_module(module)).items():
            if isinstance(value, StructuredSpec):
                specs[f"{module.removeprefix('mem0bench.')}.{name}"] = value
    specs["llm.probes._probe_spec(tool)"] = _probe_spec("tool")
    for ops in update.OPS:
        for n in BATCH_COUNTS:
            specs[f"prompts.update.batch_update_spec({n}, {ops})"] = update.batch_update_spec(n, ops)
    return specs


SPECS = shipped_specs()


def test_every_shipped_spec_is_pinned() -> None:
    assert sorted(SPECS) == sorted(SCHEMA_SHA256)


@pytest.mark.parametrize("where", sorted(SCHEMA_SHA256))
def test_every_schema_we_send_is_byte_identical(where: str) -> None:
    text = json.dumps(SPECS[where].parameters)
    assert hashlib.sha256(text.encode()).hexdigest() == SCHEMA_SHA256[where], text


def test_every_spec_factory_is_covered() -> None:
    factories = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "-> StructuredSpec" not in (source := path.read_text(encoding="utf-8")):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and ast.unparse(node.returns or ast.Constant(None)) in (
                "StructuredSpec",
                "'StructuredSpec'",
            ):
                factories.add(f"{_module_of(path)}.{node.name}")
    assert factories == FACTORIES
