"""SGMemMemory in legacy chains: recall relevant to the input within a budget, save each exchange."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
from langchain_core.messages import SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate

import sgmem
from langchain_sgmem import SGMemChatMessageHistory, SGMemMemory
from sgmem.text.tokens import count_tokens

from .conftest import RecordingChatModel

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langchain_classic.chains import ConversationChain, LLMChain

FACTS = [
    ("I adopted a grey cat named Miso last spring.", "Miso is a lovely name!"),
    ("I am training for the Berlin marathon in September.", "Good luck with the training!"),
    ("My sister Clara lives in Lisbon and teaches maths.", "Lisbon is beautiful."),
]


@pytest.fixture
def told(memory: sgmem.Memory) -> Iterator[sgmem.Memory]:
    mem = SGMemMemory(memory=memory, scope="alice", thread="chat-1")
    for said, reply in FACTS:
        mem.save_context({"input": said}, {"response": reply})
    yield memory


def test_save_context_stores_each_exchange(told: sgmem.Memory) -> None:
    msgs = SGMemChatMessageHistory(told, scope="alice", thread="chat-1").messages
    assert [(m.type, m.content) for m in msgs] == [
        (t, s) for pair in FACTS for t, s in zip(("human", "ai"), pair, strict=True)
    ]


def test_load_returns_what_is_relevant_under_memory_key(told: sgmem.Memory) -> None:
    mem = SGMemMemory(memory=told, scope="alice", thread="chat-2", memory_key="memories", budget_tokens=45)
    assert mem.memory_variables == ["memories"]
    out = mem.load_memory_variables({"question": "What is my cat called?"})
    assert set(out) == {"memories"}
    small = out["memories"]
    assert "Miso" in small and count_tokens(small) <= 45
    # the budget is honoured: a larger one lets more memories in (with no relevance cutoff to stop them)
    big = SGMemMemory(memory=told, scope="alice", memory_key="memories", min_score=0).load_memory_variables(
        {"q": "my cat?"}
    )
    assert len(big["memories"].splitlines()) > len(small.splitlines())


def test_return_messages_gives_one_system_message(told: sgmem.Memory) -> None:
    mem = SGMemMemory(memory=told, scope="alice", return_messages=True)
    (msg,) = mem.load_memory_variables({"input": "Where does my sister live?"})["history"]
    assert isinstance(msg, SystemMessage) and "Lisbon" in msg.content
    assert SGMemMemory(memory=told, scope="bob", return_messages=True).load_memory_variables({"input": "cat?"}) == {
        "history": []
    }
    assert SGMemMemory(memory=told, scope="bob").load_memory_variables({"input": "cat?"}) == {"history": ""}


def test_input_and_output_keys(told: sgmem.Memory) -> None:
    mem = SGMemMemory(memory=told, scope="alice", thread="t", input_key="q", output_key="a")
    assert "Miso" in mem.load_memory_variables({"q": "my cat's name?", "lang": "en"})["history"]
    mem.save_context({"q": "I like tea.", "lang": "en"}, {"a": "Noted.", "debug": "x"})
    assert [m.content for m in told.messages(scope="alice", thread="t")] == ["I like tea.", "Noted."]
    unsure = SGMemMemory(memory=told, scope="alice", thread="t2")
    with pytest.raises(sgmem.InvalidInputError, match="output_key"):
        unsure.save_context({"input": "hi"}, {"a": "1", "b": "2"})
    assert told.messages(scope="alice", thread="t2") == []


def test_clear_removes_only_its_thread(told: sgmem.Memory) -> None:
    SGMemMemory(memory=told, scope="alice", thread="other").save_context({"input": "I like tea."}, {"output": "ok"})
    SGMemMemory(memory=told, scope="alice", thread="chat-1").clear()
    assert told.threads(scope="alice") == ["other"]


def test_conversation_chain_recalls_across_threads(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    first = ConversationChain(llm=model, memory=SGMemMemory(memory=memory, scope="alice", thread="chat-1"))
    first.invoke({"input": "I adopted a grey cat named Miso."})
    second = ConversationChain(llm=model, memory=SGMemMemory(memory=memory, scope="alice", thread="chat-2"))
    model.reply = "Your cat is Miso."
    second.invoke({"input": "What is my cat called?"})
    assert "Miso" in model.calls[-1][-1].text  # the prompt the model received
    assert [m.content for m in memory.messages(scope="alice", thread="chat-2")] == [
        "What is my cat called?",
        "Your cat is Miso.",
    ]
    other = ConversationChain(llm=model, memory=SGMemMemory(memory=memory, scope="bob", thread="chat-1"))
    other.invoke({"input": "What is my cat called?"})
    assert "Miso" not in model.calls[-1][-1].text


def test_llm_chain_with_messages_and_custom_key(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    SGMemMemory(memory=memory, scope="alice").save_context({"input": "My sister Clara lives in Lisbon."}, {"out": "ok"})
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("memories"), ("human", "{question}")])
    mem = SGMemMemory(memory=memory, scope="alice", thread="c2", memory_key="memories", return_messages=True)
    LLMChain(llm=model, prompt=prompt, memory=mem).invoke({"question": "Where does Clara live?"})
    sent = model.calls[-1]
    assert sent[0].type == "system" and "Lisbon" in sent[0].text
    assert sent[1].content == "Where does Clara live?"


async def test_async_chain(memory: sgmem.Memory, model: RecordingChatModel) -> None:
    prompt = PromptTemplate.from_template("{history}\nHuman: {input}\nAI:")
    chain = LLMChain(llm=model, prompt=prompt, memory=SGMemMemory(memory=memory, scope="alice", thread="a"))
    await chain.ainvoke({"input": "I adopted a grey cat named Miso."})
    chain2 = LLMChain(llm=model, prompt=prompt, memory=SGMemMemory(memory=memory, scope="alice", thread="b"))
    await chain2.ainvoke({"input": "What is my cat called?"})
    assert "Miso" in model.calls[-1][-1].text
    mem = SGMemMemory(memory=memory, scope="alice", thread="b")
    assert "Miso" in (await mem.aload_memory_variables({"input": "cat name?"}))["history"]
    await mem.aclear()
    assert memory.threads(scope="alice") == ["a"]


def test_bad_construction_is_refused(memory: sgmem.Memory) -> None:
    with pytest.raises(ValueError, match="sgmem.Memory"):
        SGMemMemory(memory=None, scope="alice")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="budget_tokens"):
        SGMemMemory(memory=memory, scope="alice", budget_tokens=0)
    with pytest.raises(ValueError, match="scope"):
        SGMemMemory(memory=memory, scope="")
