"""Records tests/data/reply_models.json: every structured-output schema we send (as its exact JSON text) and,
for every reply model, a seeded corpus of reply data with what parsing it gives.

Produced by `python -m devtools.reply_fixtures` at integ3 (d61d0e8), when the reply models were pydantic
models (commit 36b30d8 holds that version): the file pins pydantic's results, which our own reply models
reproduce. Re-running it records whatever `parse_reply` does now, so run it only to accept a change of
behaviour on purpose.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
from pathlib import Path
from typing import Any

import mem0bench
from mem0bench.llm.probes import _probe_spec
from mem0bench.llm.structured import parse_reply
from mem0bench.llm.types import ReplyShapeError, StructuredSpec
from mem0bench.prompts import extraction, graph, judge, saved_notes, update

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "reply_models.json"
PACKAGE = Path(mem0bench.__file__).resolve().parent
BATCH_COUNTS = (0, 1, 2, 3, 7)


def shipped_specs() -> dict[str, StructuredSpec]:
    """Every spec the package holds as a module constant, the probe's and the batched ones, by where."""
    specs: dict[str, StructuredSpec] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "StructuredSpec" not in text and "spec_from_model" not in text:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for name, value in vars(importlib.import_module(module)).items():
            if isinstance(value, StructuredSpec):
                specs[f"{module}.{name}"] = value
    specs["mem0bench.llm.probes._probe_spec(tool)"] = _probe_spec("tool")
    for ops in update.OPS:
        for n in BATCH_COUNTS:
            specs[f"mem0bench.prompts.update.batch_update_spec({n}, {ops})"] = update.batch_update_spec(
                n, ops
            )
    return specs


def reply_models() -> dict[str, Any]:
    """Every reply model, by name."""
    models: dict[str, Any] = {
        "Verdict": judge.Verdict,
        "GradedVerdict": judge.GradedVerdict,
        "ExtractedFacts": extraction.ExtractedFacts,
        "RichFacts": extraction.RichFacts,
        "Operation": update.Operation,
        "PaperOperation": update.PaperOperation,
        "Entities": graph.Entities,
        "Relations": graph.Relations,
        "Obsolete": graph.Obsolete,
        "Contradicted": graph.Contradicted,
        "QueryEntities": graph.QueryEntities,
        "SavedNotes": saved_notes.SavedNotes,
        "SessionMemories": saved_notes.SessionMemories,
    }
    for ops in update.OPS:
        for n in BATCH_COUNTS:
            models[f"batch({n}, {ops})"] = update.batch_operations_model(n, ops)
    return models


# ---- the corpus -------------------------------------------------------------------------------------------

# Scalars of every JSON kind, with the shapes the lenient hooks read (case and spaces, quoted or bracketed
# ids, numbers as text, empty values).
SCALARS: list[Any] = [
    None, True, False, 0, 1, 2, 3, 7, -1, 0.0, -0.0, 1.0, 2.0, 1.5, -2.5, 1e20, 10**30,
    "", " ", "x", "Ann", "  Oslo  ", "3", " 2 ", "1.0", "1.5", "+1", "-0", "1_0", "1e0", "'4'", '"5"', "[6]",
    "['7']", "add", " Add ", "ADD", "update", "REPLACE", "replace ", "delete", "NOOP", "noop", "MERGE",
    "CORRECT", "WRONG", "PARTIAL", "correct", " CORRECT", "Lives In", "lives_in", "null", "None",
]  # fmt: skip
FIELD_WORDS = [
    "facts", "notes", "memories", "entities", "relations", "obsolete", "contradicted", "operations", "event",
    "id", "text", "fact", "name", "type", "source", "relation", "destination", "reasoning", "label", "extra",
]  # fmt: skip
MODEL_FIELDS: dict[str, list[str]] = {
    "Verdict": ["reasoning", "label"],
    "GradedVerdict": ["reasoning", "label"],
    "ExtractedFacts": ["facts"],
    "RichFacts": ["facts"],
    "Operation": ["event", "id", "text"],
    "PaperOperation": ["event", "id", "text"],
    "Entities": ["entities"],
    "Relations": ["relations"],
    "Obsolete": ["obsolete"],
    "Contradicted": ["contradicted"],
    "QueryEntities": ["entities"],
    "SavedNotes": ["notes"],
    "SessionMemories": ["memories"],
    "batch": ["operations"],
}
ITEM_FIELDS = {
    "entities": ["name", "type"],
    "relations": ["source", "relation", "destination"],
    "operations": ["fact", "event", "id", "text"],
}


def _scalar(rng: random.Random) -> Any:
    return rng.choice(SCALARS)


def _value(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, mostly small."""
    roll = rng.random()
    if roll < 0.6 or depth >= 2:
        return _scalar(rng)
    if roll < 0.8:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(FIELD_WORDS): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _object(
    rng: random.Random, fields: list[str], item_fields: dict[str, list[str]], n: int
) -> dict[str, Any]:
    """An object with some of `fields` (any may be missing), sometimes an extra key."""
    out: dict[str, Any] = {}
    for name in fields:
        roll = rng.random()
        if roll < 0.12:
            continue  # missing
        if name in item_fields and roll < 0.75:
            out[name] = _items(rng, item_fields[name], n)
        elif name in item_fields:
            out[name] = _value(rng)
        elif roll < 0.7:
            out[name] = _plausible(rng, name, n)
        else:
            out[name] = _value(rng)
    if rng.random() < 0.2:
        out[rng.choice(FIELD_WORDS)] = _value(rng)
    return out


def _items(rng: random.Random, fields: list[str], n: int) -> list[Any]:
    count = n if rng.random() < 0.6 else rng.randrange(max(n + 3, 4))
    items: list[Any] = []
    for _ in range(count):
        if rng.random() < 0.85:
            items.append(_object(rng, fields, {}, n))
        else:
            items.append(_value(rng))
    return items


def _plausible(rng: random.Random, name: str, n: int) -> Any:
    """A value of the field's own kind, often the right one."""
    if name == "event":
        return rng.choice(["ADD", "UPDATE", "REPLACE", "DELETE", "NOOP", " add", "Noop ", "replace", "MERGE"])
    if name == "label":
        return rng.choice(["CORRECT", "WRONG", "PARTIAL", "correct", "Wrong", "MAYBE"])
    if name == "fact":
        return rng.choice([0, 1, max(n - 1, 0), n, -1, float(max(n - 1, 0)), 0.5, str(max(n - 1, 0)), True])
    if name == "id":
        return rng.choice(["0", "1", 2, " 3 ", "'4'", '"5"', "[6]", None, "", 1.0])
    if name in ("facts", "notes", "memories", "obsolete", "contradicted"):
        return [rng.choice(["Ann runs", "  two  spaces ", 3, 0, None, 1.5, "ann runs", "", "1", [1], {"a": 1}])
                for _ in range(rng.randrange(4))]  # fmt: skip
    if name == "entities":
        return [rng.choice(["Jon", {"name": "Oslo"}, {"name": 3}, 5, None, "", {"x": 1}])
                for _ in range(rng.randrange(4))]  # fmt: skip
    return rng.choice(["Ann", "the park", "", "  spaced  out ", "Lives In", "x" * 40])


def corpus(name: str, rng: random.Random, size: int = 300) -> list[Any]:
    """`size` reply data for the model `name`: mostly objects of its fields, some of any shape."""
    key = "batch" if name.startswith("batch") else name
    n = int(name[6:].split(",")[0]) if key == "batch" else 1
    fields = MODEL_FIELDS[key]
    # The query entities are strings, not objects: their items come from _plausible/_value instead.
    item_fields = {f: ITEM_FIELDS[f] for f in fields if f in ITEM_FIELDS and key != "QueryEntities"}
    out: list[Any] = [{}, None, [], "x", 3]
    while len(out) < size:
        roll = rng.random()
        if roll < 0.25:
            out.append(_valid(rng, key, n))
        elif roll < 0.92:
            out.append(_object(rng, fields, item_fields, n))
        else:
            out.append(_value(rng))
    return out


def _valid(rng: random.Random, key: str, n: int) -> Any:
    """A reply that fits (in one of the lenient forms), sometimes with an extra key."""
    if key == "batch":
        items = [{f: _plausible(rng, f, n) for f in ITEM_FIELDS["operations"]} for _ in range(n)]
        for i, item in enumerate(items):
            item["fact"] = rng.choice([i, float(i), str(i), f" {i} "])
            item["event"] = rng.choice(["ADD", " update", "Noop", "DELETE", "replace"])
        return {"operations": items}
    if key in ("Verdict", "GradedVerdict"):
        return {
            "reasoning": _plausible(rng, "reasoning", n),
            "label": rng.choice(["CORRECT", "WRONG", "PARTIAL"]),
        }
    return {f: _plausible(rng, f, n) for f in MODEL_FIELDS[key]} | (
        {"extra": 1} if rng.random() < 0.3 else {}
    )


def outcome(model: Any, data: Any) -> dict[str, Any]:
    """What parsing `data` as `model` gives: {"ok": the reply as data} or {"error": the message}."""
    try:
        return {"ok": dataclasses.asdict(parse_reply(model, data))}
    except ReplyShapeError as error:
        return {"error": str(error)}


def main() -> None:
    specs = {where: json.dumps(spec.parameters) for where, spec in shipped_specs().items()}
    cases: dict[str, list[dict[str, Any]]] = {}
    for i, (name, model) in enumerate(reply_models().items()):
        rng = random.Random(f"reply-corpus-{name}-{i}")
        size = 150 if name.startswith("batch") else 300
        cases[name] = [{"in": data, **outcome(model, data)} for data in corpus(name, rng, size)]
    # One case a line: a change shows as the lines of the cases it changed.
    lines = ['{"schemas": ' + json.dumps(specs, indent=1, ensure_ascii=False) + ",", '"replies": {']
    for j, (name, rows) in enumerate(cases.items()):
        body = ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
        lines.append(json.dumps(name) + ": [\n" + body + "\n]" + ("," if j < len(cases) - 1 else ""))
    lines.append("}}")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(specs)} schemas, {sum(len(c) for c in cases.values())} replies")


if __name__ == "__main__":
    main()
