"""A broad question about the user ("What do you know about me?") recalls the user's statements into the agent's
prompt; an unrelated question still recalls nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

import sgmem
from langchain_sgmem import SGMemMiddleware
from tests.unit.test_roles import FAMILY

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration


@pytest.fixture
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as m:
        m.add(FAMILY, scope="alice", thread="earlier")
        yield m


def ask(mem: sgmem.Memory, model: RecordingChatModel, question: str) -> str:
    agent = create_agent(
        model, tools=[], middleware=[SGMemMiddleware(mem, scope="alice")], checkpointer=InMemorySaver()
    )
    agent.invoke({"messages": [{"role": "user", "content": question}]}, {"configurable": {"thread_id": "now"}})
    return model.system_text()


def test_what_do_you_know_about_me_recalls_the_users_facts(mem: sgmem.Memory, model: RecordingChatModel) -> None:
    system = ask(mem, model, "What do you know about me?")
    assert "Clara" in system and "Portugal" in system and "data engineer" in system
    assert "lovely place" not in system  # the user's words, not the assistant's


def test_an_unrelated_question_recalls_nothing(mem: sgmem.Memory, model: RecordingChatModel) -> None:
    assert ask(mem, model, "What is the capital of Peru?") == ""
