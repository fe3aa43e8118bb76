"""LlamaIndex adapters: the relevance cutoff, the block's budget, restoring a workflow Context (issue 12, items 4, 8)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.memory import Memory
from llama_index.core.utils import get_tokenizer

import sgmem
from llama_index_sgmem import SGMemMemory, SGMemMemoryBlock, SGMemRetriever

from .helpers import FACT, assistant, user

pytestmark = pytest.mark.integration

RELATED = "What is my cat called?"
UNRELATED = "How do I deduct home office expenses on my income tax return?"
HIKE = "I love hiking in the Alps every summer."


@pytest.fixture
def filled(default_memory: sgmem.Memory) -> sgmem.Memory:
    memory = default_memory  # the default configuration: relevance cutoff on
    memory.add([{"role": "user", "content": FACT}, {"role": "user", "content": HIKE}], scope="alice", thread="old")
    return memory


# ------------------------------------------------------------------ min_score per adapter
def test_retriever_min_score(filled: sgmem.Memory) -> None:
    # a retriever returns similarity_top_k nodes unless a threshold is asked for (LlamaIndex's convention)
    loose = SGMemRetriever(filled, "alice").retrieve(UNRELATED)
    assert len(loose) == 2 and all(0 <= n.node.metadata["relevance"] <= 1 for n in loose)
    assert SGMemRetriever(filled, "alice", min_score=filled.min_relevance).retrieve(UNRELATED) == []
    assert SGMemRetriever(filled, "alice", min_score=0.99).retrieve(RELATED) == []
    with pytest.raises(sgmem.InvalidInputError, match="min_score"):
        SGMemRetriever(filled, "alice", min_score=-1)


def _recalled(mem: SGMemMemory, question: str) -> str:
    got = mem.get(input=question)
    return (got[0].content or "") if got and got[0].role == MessageRole.SYSTEM else ""


def test_memory_min_score(filled: sgmem.Memory) -> None:
    assert _recalled(SGMemMemory.from_defaults(memory=filled, scope="alice"), UNRELATED) == ""
    assert "Alps" in _recalled(SGMemMemory.from_defaults(memory=filled, scope="alice", min_score=0), UNRELATED)
    assert _recalled(SGMemMemory.from_defaults(memory=filled, scope="alice", min_score=0.99), RELATED) == ""


async def test_memory_block_min_score(filled: sgmem.Memory) -> None:
    ask = [user(UNRELATED)]
    assert await SGMemMemoryBlock(memory=filled, scope="alice").aget(ask) == ""
    assert "Alps" in await SGMemMemoryBlock(memory=filled, scope="alice", min_score=0).aget(ask)
    assert await SGMemMemoryBlock(memory=filled, scope="alice", min_score=0.99).aget([user(RELATED)]) == ""


# ------------------------------------------------------------------ the block keeps the Memory's budget
async def test_the_block_by_default_is_truncated_to_the_memorys_token_limit(memory: sgmem.Memory) -> None:
    facts = [f"My cat Miso {what}." for what in ("loves tuna", "sleeps on my keyboard", "chases laser dots",
             "hates the vacuum cleaner", "was adopted in Lyon", "is grey with white paws", "is three years old",
             "climbs the bookshelf at night", "drinks from the tap", "purrs when I read")]
    memory.add([{"role": "user", "content": f} for f in facts], scope="alice", thread="old")
    block = SGMemMemoryBlock(memory=memory, scope="alice")
    assert block.priority > 0  # LlamaIndex never truncates priority 0
    li = Memory.from_defaults(session_id="new", token_limit=120, memory_blocks=[block])
    await li.aput(user("Tell me about my cat Miso."))
    got = await li.aget()
    tokens = sum(len(get_tokenizer()(m.content or "")) for m in got)
    assert "Miso" in (got[0].content or "")
    assert tokens <= 120 + 20  # the Memory's limit, give or take its own tags


# ------------------------------------------------------------------ serialising SGMemMemory
def test_a_memory_on_a_path_round_trips_through_to_dict_and_pickle(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    store = sgmem.Memory(tmp_path / "m", embedder=embedder)
    mem = SGMemMemory.from_defaults(memory=store, scope="alice", thread="t1", context_tokens=300, min_score=0.1)
    mem.put_messages([user(FACT), assistant("Noted!")])
    data = mem.to_dict()
    assert data["store_path"] == str(tmp_path / "m")
    back = SGMemMemory.from_dict(data)
    assert (back.scope, back.thread, back.context_tokens, back.min_score) == ("alice", "t1", 300, 0.1)
    assert back.get_all() == mem.get_all() and back.memory is store  # the open store is reused
    again = pickle.loads(pickle.dumps(mem))
    assert again.get_all() == mem.get_all()
    store.close()


def test_an_in_memory_store_fails_clearly_when_serialised(memory: sgmem.Memory) -> None:
    mem = SGMemMemory.from_defaults(memory=memory, scope="alice", thread="t1")
    with pytest.raises(sgmem.SgmemError, match="in-memory"):
        mem.to_dict()
    with pytest.raises(sgmem.SgmemError, match="in-memory"):
        pickle.dumps(mem)


async def test_a_workflow_context_holding_the_memory_is_restored(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    from workflows import Context, Workflow, step
    from workflows.events import StartEvent, StopEvent

    class Remember(Workflow):
        @step
        async def go(self, ctx: Context, ev: StartEvent) -> StopEvent:
            await ctx.store.set("memory", ev.memory)
            return StopEvent(result="ok")

    store = sgmem.Memory(tmp_path / "m", embedder=embedder)
    mem = SGMemMemory.from_defaults(memory=store, scope="alice", thread="t1")
    mem.put(user(FACT))
    wf = Remember()
    handler = wf.run(memory=mem)
    await handler
    data = handler.ctx.to_dict()
    restored = Context.from_dict(wf, data)
    back = await restored.store.get("memory")
    assert isinstance(back, SGMemMemory) and back.get_all() == [user(FACT)]
    store.close()


def test_a_chat_memory_buffer_on_the_chat_store_is_restored(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    from llama_index.core.memory import ChatMemoryBuffer

    from llama_index_sgmem import SGMemChatStore

    store = sgmem.Memory(tmp_path / "m", embedder=embedder)
    buf = ChatMemoryBuffer.from_defaults(chat_store=SGMemChatStore(store, scope="alice"), chat_store_key="t1")
    buf.put(user(FACT))
    back = ChatMemoryBuffer.from_dict(buf.to_dict())
    assert isinstance(back.chat_store, SGMemChatStore) and back.chat_store.memory is store
    assert back.get_all() == [user(FACT)]
    store.close()


def test_a_chat_memory_buffer_on_an_in_memory_chat_store_fails_clearly(memory: sgmem.Memory) -> None:
    from llama_index.core.memory import ChatMemoryBuffer

    from llama_index_sgmem import SGMemChatStore

    buf = ChatMemoryBuffer.from_defaults(chat_store=SGMemChatStore(memory, scope="alice"), chat_store_key="t1")
    with pytest.raises(sgmem.InvalidInputError, match="in-memory"):
        ChatMemoryBuffer.from_dict(buf.to_dict())
