"""The Protocol says everything the pipeline asks of a system: every optional member is declared in
`OptionalMembers`, has its default in SystemBase, is read through one function of memory/base.py, and is
listed in docs/your_system.md."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from mem0bench.data.loader import load_dataset
from mem0bench.data.model import Conversation
from mem0bench.memory import base
from mem0bench.memory.base import (
    MemorySystem,
    OptionalMembers,
    SavedStore,
    SystemBase,
    declared_bound,
    expects_empty_context,
    ingest_units_of,
    optional_member_problems,
    prompt_files_of,
    request_counter,
    saved_memories,
    uses_graph_server,
)
from mem0bench.memory.stream import message_pairs

ROOT = Path(__file__).resolve().parent.parent


def _members(protocol: type) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {
        n for n, v in vars(protocol).items() if callable(v) or isinstance(v, classmethod | staticmethod)
    }
    return {n for n in names if not n.startswith("_")}


OPTIONAL = _members(OptionalMembers)


@pytest.fixture
def locomo_conversation(locomo_mini: Path) -> Conversation:
    return load_dataset(locomo_mini).conversations[0]


def test_the_optional_members() -> None:
    assert {
        "prompt_files", "empty_context_expected", "bound", "transport",
        "ingest_units", "release", "uses_graph_server", "saved_memories",
    } == OPTIONAL  # fmt: skip
    assert not OPTIONAL & _members(MemorySystem)


def test_system_base_has_every_member_and_nothing_undeclared() -> None:
    public = {n for n in dir(SystemBase) if not n.startswith("_")}
    assert public >= OPTIONAL
    assert public <= OPTIONAL | _members(MemorySystem) | {"failures"}


class Bare:
    """A system outside SystemBase that defines none of the optional members."""


class Declares(SystemBase):
    prompt_files = ("p",)  # type: ignore[assignment]
    empty_context_expected = True
    bound = "floor"

    def __init__(self) -> None:
        super().__init__()
        self.transport = Hook()

    def ingest_units(self, conversation: Conversation) -> int:
        return 7

    @staticmethod
    def uses_graph_server(graph: Any) -> bool:
        return bool(graph.get("backend") == "falkordb")

    @classmethod
    def saved_memories(cls, state_dir: Path, sample_id: str) -> list[SavedStore] | None:
        return [SavedStore("Ann", "ann", True, ())] if sample_id == "c1" else []


class Hook:
    on_request = None


def test_defaults_when_left_out(locomo_conversation: Conversation) -> None:
    for system in (Bare(), SystemBase()):
        assert prompt_files_of(system) == ()
        assert expects_empty_context(system) is False and declared_bound(system) is None
        assert ingest_units_of(system, locomo_conversation) == len(message_pairs(locomo_conversation))
        assert uses_graph_server(type(system), {"backend": "falkordb"}) is False
        assert request_counter(system) is None
        assert saved_memories(type(system), Path("state"), "c1") is None


def test_declared_members_are_read(locomo_conversation: Conversation) -> None:
    system = Declares()
    assert prompt_files_of(system) == ("p",)
    assert expects_empty_context(system) is True and declared_bound(system) == "floor"
    assert ingest_units_of(system, locomo_conversation) == 7
    assert uses_graph_server(Declares, {"backend": "falkordb"}) and not uses_graph_server(Declares, {})
    assert request_counter(system) is system.transport
    assert saved_memories(Declares, Path("state"), "c1") == [SavedStore("Ann", "ann", True, ())]
    assert saved_memories(Declares, Path("state"), "c2") == []


def test_a_wrong_value_reads_as_the_default() -> None:
    odd = Bare()
    odd.bound = "middle"  # type: ignore[attr-defined]
    odd.empty_context_expected = "yes"  # type: ignore[attr-defined]
    odd.transport = object()  # type: ignore[attr-defined]
    assert (
        declared_bound(odd) is None and expects_empty_context(odd) is False and request_counter(odd) is None
    )


def test_only_memory_base_looks_for_an_optional_member() -> None:
    found = []
    for path in (ROOT / "mem0bench").rglob("*.py"):
        if path == Path(base.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in OPTIONAL
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_docs_list_every_optional_member() -> None:
    text = (ROOT / "docs" / "your_system.md").read_text(encoding="utf-8")
    section = text[text.index("### Optional members") :]
    assert all(f"| `{name}" in section for name in OPTIONAL)


def test_wrong_optional_members_are_named() -> None:
    """check-system's protocol check prints these (a wrong value is otherwise read as the default)."""
    assert optional_member_problems(Bare()) == [] and optional_member_problems(Declares()) == []
    odd = Bare()
    odd.bound = "celing"  # type: ignore[attr-defined]
    odd.empty_context_expected = 1  # type: ignore[attr-defined]
    odd.prompt_files = ["p"]  # type: ignore[attr-defined]
    odd.ingest_units = 3  # type: ignore[attr-defined]
    odd.transport = object()  # type: ignore[attr-defined]
    problems = optional_member_problems(odd)
    assert len(problems) == 5 and "'celing'" in problems[0]
    assert {p.split("`")[1] for p in problems} == {
        "bound", "empty_context_expected", "prompt_files", "ingest_units", "transport"
    }  # fmt: skip
