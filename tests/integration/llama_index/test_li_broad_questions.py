"""A broad question about the user ("What do you know about me?") recalls the user's statements into
SGMemMemory's system message; an unrelated question still recalls nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sgmem
from llama_index_sgmem import SGMemMemory
from tests.unit.test_roles import FAMILY

pytestmark = pytest.mark.integration


@pytest.fixture
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as m:
        m.add(FAMILY, scope="alice", thread="earlier")
        yield m


def recalled(mem: sgmem.Memory, question: str) -> str:
    memory = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="now")
    return "\n".join(str(m.content) for m in memory.get(input=question) if m.role.value == "system")


def test_what_do_you_know_about_me_recalls_the_users_facts(mem: sgmem.Memory) -> None:
    system = recalled(mem, "What do you know about me?")
    assert "Clara" in system and "Portugal" in system and "data engineer" in system
    assert "lovely place" not in system


def test_summarise_my_family_recalls_the_family(mem: sgmem.Memory) -> None:
    system = recalled(mem, "Summarise what you remember about my family")
    assert "Clara" in system and "Portugal" in system and "data engineer" not in system


def test_an_unrelated_question_recalls_nothing(mem: sgmem.Memory) -> None:
    assert recalled(mem, "What is the capital of Peru?") == ""
