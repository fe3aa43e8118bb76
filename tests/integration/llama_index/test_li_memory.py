"""SGMemMemory on its own: the recent window, recall as a system message, writes, async, bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, LLMMetadata, MessageRole, TextBlock
from llama_index.core.llms import MockLLM
from llama_index.core.memory import ChatMemoryBuffer

import sgmem
from llama_index_sgmem import SGMemMemory
from sgmem.text import count_tokens
from tests.unit.helpers import LoopGate

from .helpers import FACT, QUESTION, SECRET, assistant, user

pytestmark = [pytest.mark.integration, pytest.mark.both_backends]  # both: SQLite and PostgreSQL

CHAT = [
    user("Hi, I just moved to Lisbon."),
    assistant("Welcome! How do you like it so far?"),
    user("The food is great, especially the pastries."),
    assistant("Pastel de nata is a classic."),
    user("I also started learning Portuguese."),
    assistant("Boa sorte! That will help a lot."),
]


def _memory(mem: sgmem.Memory, **kwargs: object) -> SGMemMemory:
    return SGMemMemory.from_defaults(memory=mem, **{"scope": "alice", "thread": "t1", **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize("token_limit", [1, 12, 25, 40, 1000])
def test_window_matches_chat_memory_buffer(memory: sgmem.Memory, token_limit: int) -> None:
    ours = _memory(memory, token_limit=token_limit, context_tokens=0)
    ours.put_messages(list(CHAT))
    buffer = ChatMemoryBuffer.from_defaults(chat_history=list(CHAT), token_limit=token_limit)
    assert ours.get() == buffer.get()
    if token_limit >= 5:
        assert ours.get(initial_token_count=5) == buffer.get(initial_token_count=5)
    else:  # both refuse a prefix larger than the whole limit
        with pytest.raises(ValueError):
            buffer.get(initial_token_count=5)
        with pytest.raises(ValueError):
            ours.get(initial_token_count=5)


def test_initial_token_count_above_the_limit_is_a_clear_error(memory: sgmem.Memory) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="initial_token_count"):
        _memory(memory, token_limit=10).get(initial_token_count=11)


def test_recall_from_an_earlier_thread_comes_first_as_a_system_message(memory: sgmem.Memory) -> None:
    _memory(memory, thread="monday").put_messages([user(FACT), assistant("Noted!")])
    tuesday = _memory(memory, thread="tuesday")
    tuesday.put(user(QUESTION))
    got = tuesday.get()  # no input: the thread's latest user message is the query
    assert got[0].role == MessageRole.SYSTEM and FACT in got[0].content
    assert got[1:] == [user(QUESTION)]
    assert QUESTION not in got[0].content  # already in the window: not repeated
    with_input = tuesday.get(input="Which food does my cat love?")
    assert FACT in with_input[0].content


def test_no_query_and_nothing_relevant_add_no_system_message(memory: sgmem.Memory) -> None:
    _memory(memory, thread="monday").put(user(FACT))
    empty = _memory(memory, thread="tuesday")
    assert empty.get() == []
    assert empty.get(input="   ") == []
    other_scope = _memory(memory, scope="bob", thread="tuesday")
    other_scope.put(user(QUESTION))
    assert other_scope.get(input=QUESTION) == [user(QUESTION)]


def test_messages_that_fell_out_of_the_window_are_recalled(memory: sgmem.Memory) -> None:
    long_thread = _memory(memory, token_limit=30)
    long_thread.put_messages([user(FACT), assistant("Noted!"), *CHAT])
    got = long_thread.get(input=QUESTION)
    assert got[0].role == MessageRole.SYSTEM and FACT in got[0].content
    assert all(FACT not in (m.content or "") for m in got[1:])
    in_window = _memory(memory, thread="short", token_limit=1000)
    in_window.put_messages([user("My dog is called Rex."), assistant("Cute!")])
    assert all(
        "Rex" not in (m.content or "") for m in in_window.get(input="What is my dog called?") if m.role == "system"
    )


def test_context_budget_and_template_are_honoured(memory: sgmem.Memory) -> None:
    _memory(memory, thread="monday").put_messages([user(FACT), *CHAT])
    mem = _memory(memory, thread="tuesday", context_tokens=40, context_template="<memories>\n{context}\n</memories>")
    system = mem.get(input=QUESTION)[0].content or ""
    assert system.startswith("<memories>\n") and system.endswith("\n</memories>")
    assert 0 < count_tokens(system.removeprefix("<memories>\n").removesuffix("\n</memories>")) <= 40
    assert _memory(memory, thread="tuesday", context_tokens=0).get(input=QUESTION) == []


def test_set_replaces_reset_clears_and_get_all_returns_everything(memory: sgmem.Memory) -> None:
    mem = _memory(memory, token_limit=5, context_tokens=0)
    other = _memory(memory, thread="t2")
    other.put(user("another thread"))
    mem.put_messages(list(CHAT))
    assert mem.get_all() == CHAT
    mem.set(CHAT[:2])
    assert mem.get_all() == CHAT[:2]
    old = mem.thread
    mem.reset()  # a chat engine's reset: a new thread, nothing forgotten
    assert mem.get_all() == [] and mem.get() == [] and mem.thread != old
    assert memory.messages(scope="alice", thread=old)  # still in long-term memory
    assert other.get_all() == [user("another thread")]
    mem.put(user("new"))
    mem.forget()  # explicit deletion
    assert mem.get_all() == [] and memory.messages(scope="alice", thread=mem.thread) == []
    deleting = _memory(memory, thread="t3", reset_deletes=True)
    deleting.put(user("gone"))
    deleting.reset()
    assert deleting.thread == "t3" and memory.messages(scope="alice", thread="t3") == []


def test_from_defaults_accepts_what_engines_pass(memory: sgmem.Memory) -> None:
    mem = SGMemMemory.from_defaults(
        memory=memory, scope="alice", thread="t1", chat_history=list(CHAT[:2]), llm=MockLLM()
    )
    window = MockLLM().metadata.context_window
    # recent messages plus recalled context keep within 75 % of the window
    assert mem.token_limit + mem.context_tokens == int(window * 0.75)
    assert mem.get_all() == CHAT[:2]
    assert SGMemMemory.from_defaults(memory=memory, scope="alice").token_limit == 3000
    assert SGMemMemory.from_defaults(memory=memory, scope="alice", token_limit=77, mode="bm25").token_limit == 77
    fresh = SGMemMemory.from_defaults(memory=memory, scope="alice")
    assert fresh.thread != SGMemMemory.from_defaults(memory=memory, scope="alice").thread



def test_from_defaults_leaves_room_for_the_prompt_and_answer_of_a_4k_model(memory: sgmem.Memory) -> None:
    mem = SGMemMemory.from_defaults(memory=memory, scope="alice", thread="t1", llm=_Window4k())
    # before: 3,072 tokens of messages + 1,000 of recall = 4,072 of 4,096, no room for the answer
    assert mem.token_limit + mem.context_tokens <= 4096 * 0.75
    assert mem.context_tokens > 0 and mem.token_limit > 0


class _Window4k(MockLLM):
    """A MockLLM that says it has a 4,096-token context window."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=4096, num_output=256)


MEM = object()  # stands for the test's sgmem.Memory


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scope": "alice"}, "memory"),
        ({"memory": "./memory", "scope": "alice"}, "memory"),
        ({"memory": MEM}, "scope"),
        ({"memory": MEM, "scope": ""}, "scope"),
        ({"memory": MEM, "scope": "alice", "thread": " "}, "thread"),
        ({"memory": MEM, "scope": "alice", "token_limit": 0}, "token_limit"),
        ({"memory": MEM, "scope": "alice", "context_tokens": -1}, "context_tokens"),
        ({"memory": MEM, "scope": "alice", "mode": "psychic"}, "mode"),
        ({"memory": MEM, "scope": "alice", "context_template": "no placeholder"}, "context_template"),
        ({"memory": MEM, "scope": "alice", "chat_store_key": "x"}, "kwargs"),
    ],
)
def test_bad_arguments_are_clear_errors(memory: sgmem.Memory, kwargs: dict, field: str) -> None:
    kwargs = {k: memory if v is MEM else v for k, v in kwargs.items()}
    with pytest.raises(sgmem.InvalidInputError, match=field):
        SGMemMemory.from_defaults(**kwargs)
    assert memory.stats().messages == 0


def test_bad_messages_are_clear_errors_and_store_nothing(memory: sgmem.Memory) -> None:
    mem = _memory(memory)
    mem.put(user("kept"))
    wizard = ChatMessage.model_construct(role="wizard", blocks=[TextBlock(text="hi")], additional_kwargs={})
    with pytest.raises(sgmem.InvalidInputError, match="role"):
        mem.put(wizard)
    with pytest.raises(sgmem.InvalidInputError, match=r"messages\[1\]\.role"):
        mem.put_messages([user("not stored either"), wizard])
    with pytest.raises(sgmem.InvalidInputError, match="role"):
        mem.set([wizard])
    assert mem.get_all() == [user("kept")]


def test_serialisation_leaves_the_store_and_tokenizer_out(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    with sgmem.Memory(tmp_path / "m", embedder=embedder) as store:
        data = _memory(store, token_limit=100).to_dict()
    assert data["scope"] == "alice" and data["thread"] == "t1" and data["token_limit"] == 100
    assert "memory" not in data and "tokenizer_fn" not in data
    assert data["store_path"] == str(tmp_path / "m")  # the store is saved by its path, not as an object


async def test_async_twins(memory: sgmem.Memory) -> None:
    await _memory(memory, thread="monday").aput_messages([user(FACT), assistant("Noted!")])
    mem = _memory(memory, thread="tuesday")
    await mem.aput(user(QUESTION))
    got = await mem.aget()
    assert SECRET in (got[0].content or "") and got[1:] == [user(QUESTION)]
    assert await mem.aget_all() == [user(QUESTION)]
    await mem.aset([user("replaced")])
    assert await mem.aget_all() == [user("replaced")]
    await mem.areset()
    assert await mem.aget_all() == []


async def test_async_twins_never_block_the_event_loop(embedder: sgmem.Embedder) -> None:
    gate = LoopGate(embedder)  # each embedding waits until the loop has ticked meanwhile (no clock)
    with sgmem.Memory(embedder=gate) as slow:
        mem = _memory(slow)
        task = asyncio.create_task(gate.ticker())
        await mem.aput(user(FACT))  # embeds
        after_put = len(gate.waits)
        await mem.aget(input=QUESTION)  # embeds the query
        task.cancel()
        assert after_put >= 1 and len(gate.waits) > after_put and all(gate.waits)
