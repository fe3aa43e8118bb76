"""SGMemChatMessageHistory: exact replay, threads apart, long-term recall, RunnableWithMessageHistory."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable
from langchain_core.runnables.history import RunnableWithMessageHistory

import sgmem
from langchain_sgmem import SGMemChatMessageHistory

from .conftest import RecordingChatModel

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL


def test_add_replay_and_clear_one_thread(memory: sgmem.Memory) -> None:
    h1 = SGMemChatMessageHistory(memory, scope="alice", thread="chat-1")
    h2 = SGMemChatMessageHistory(memory, scope="alice", thread="chat-2")
    h1.add_user_message("I adopted a cat named Miso.")
    h1.add_ai_message("Lovely name!")
    h2.add_messages([HumanMessage("I run marathons.")])
    assert [(m.type, m.content) for m in h1.messages] == [
        ("human", "I adopted a cat named Miso."),
        ("ai", "Lovely name!"),
    ]
    assert [m.content for m in h2.messages] == ["I run marathons."]
    h1.clear()
    assert h1.messages == []
    assert [m.content for m in h2.messages] == ["I run marathons."]  # other threads stay
    # the cleared thread's derived memory is gone too
    assert all(h.thread == "chat-2" for h in memory.search("cat named Miso", scope="alice"))


def test_history_feeds_long_term_memory(memory: sgmem.Memory) -> None:
    SGMemChatMessageHistory(memory, scope="alice", thread="chat-1").add_messages(
        [HumanMessage("I adopted a grey cat named Miso."), AIMessage("What a lovely name!")]
    )
    hits = memory.search("What is my cat called?", scope="alice", k=1)
    assert "Miso" in hits[0].text and hits[0].thread == "chat-1"
    assert memory.search("What is my cat called?", scope="bob") == []


def test_history_survives_reopening_the_store(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    msgs = [HumanMessage("hello", id="h1"), AIMessage("hi there", id="a1", response_metadata={"model": "m"})]
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        SGMemChatMessageHistory(mem, scope="alice", thread="t").add_messages(msgs)
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        assert SGMemChatMessageHistory(mem, scope="alice", thread="t").messages == msgs


async def test_async_methods(memory: sgmem.Memory) -> None:
    h = SGMemChatMessageHistory(memory, scope="alice", thread="t")
    await h.aadd_messages([HumanMessage("one"), AIMessage("two")])
    assert [m.content for m in await h.aget_messages()] == ["one", "two"]
    await h.aclear()
    assert await h.aget_messages() == []


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"scope": "", "thread": "t"}, "scope"),
        ({"scope": "alice", "thread": "  "}, "thread"),
        ({"scope": None, "thread": "t"}, "scope"),
    ],
)
def test_bad_names_are_refused(memory: sgmem.Memory, kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(sgmem.InvalidInputError, match=needle):
        SGMemChatMessageHistory(memory, **kwargs)  # type: ignore[arg-type]


def test_memory_must_be_a_sgmem_memory() -> None:
    with pytest.raises(sgmem.InvalidInputError, match="sgmem.Memory"):
        SGMemChatMessageHistory({}, scope="a", thread="t")  # type: ignore[arg-type]


def _chain(memory: sgmem.Memory, model: RecordingChatModel) -> Runnable:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are helpful."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # RunnableWithMessageHistory is deprecated upstream
        return RunnableWithMessageHistory(
            prompt | model,
            lambda session_id: SGMemChatMessageHistory(memory, scope="alice", thread=session_id),
            input_messages_key="input",
            history_messages_key="history",
        )


def test_runnable_with_message_history_round_trip(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    chain = _chain(memory, model)
    cfg = {"configurable": {"session_id": "chat-1"}}
    model.reply = "Nice to meet you, Alice."
    first = chain.invoke({"input": "Hi, I'm Alice."}, cfg)
    model.reply = "You are Alice."
    chain.invoke({"input": "What's my name?"}, cfg)
    # the second call saw the first exchange, replayed from sgmem
    assert [(m.type, m.content) for m in model.calls[1]] == [
        ("system", "You are helpful."),
        ("human", "Hi, I'm Alice."),
        ("ai", "Nice to meet you, Alice."),
        ("human", "What's my name?"),
    ]
    stored = SGMemChatMessageHistory(memory, scope="alice", thread="chat-1").messages
    assert [m.content for m in stored] == [
        "Hi, I'm Alice.",
        "Nice to meet you, Alice.",
        "What's my name?",
        "You are Alice.",
    ]
    assert stored[1] == first  # the model's reply, id and metadata included
    # another session starts empty
    chain.invoke({"input": "Hello?"}, {"configurable": {"session_id": "chat-2"}})
    assert [m.type for m in model.calls[2]] == ["system", "human"]


async def test_runnable_with_message_history_async(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    chain = _chain(memory, model)
    cfg = {"configurable": {"session_id": "chat-1"}}
    await chain.ainvoke({"input": "Hi, I'm Alice."}, cfg)
    await chain.ainvoke({"input": "What's my name?"}, cfg)
    assert [m.content for m in model.calls[1]][1:3] == ["Hi, I'm Alice.", "OK."]
    history = SGMemChatMessageHistory(memory, scope="alice", thread="chat-1")
    assert [m.type for m in await history.aget_messages()] == ["human", "ai", "human", "ai"]
