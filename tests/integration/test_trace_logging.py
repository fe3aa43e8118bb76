"""What the memory did, seen two ways: the ``sgmem`` DEBUG log and the adapters' ``last_recall``.

One agent turn in each framework (fake models, no LLM): at DEBUG the log holds
the recalled hits with their relevance and ``why`` and the block injected into
the prompt; at the default level nothing is emitted at all.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest
from langchain.agents import create_agent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

import sgmem
from langchain_sgmem import SGMemMiddleware
from llama_index_sgmem import SGMemMemory

from .langchain.conftest import RecordingChatModel

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")]

FACT = "I adopted a grey cat named Miso last spring."
OTHER = "My sister Priya lives in Lisbon and works as an architect."
QUESTION = "What is my cat called?"


def _seed(memory: sgmem.Memory) -> None:
    memory.add([{"role": "user", "content": FACT, "id": "m-cat"}], scope="alice", thread="old")
    memory.add([{"role": "user", "content": OTHER, "id": "m-sister"}], scope="alice", thread="older")


def _debug_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("sgmem"))


def test_langchain_turn_at_debug_logs_hits_their_why_and_the_injected_block(
    memory: sgmem.Memory, caplog: pytest.LogCaptureFixture
) -> None:
    _seed(memory)
    seen: list[sgmem.RecallTrace] = []
    middleware = SGMemMiddleware(memory, scope="alice", on_recall=seen.append)
    model = RecordingChatModel()
    agent = create_agent(model, tools=[], middleware=[middleware])
    with caplog.at_level(logging.DEBUG, logger="sgmem"):
        agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    log = _debug_text(caplog)
    assert "query='What is my cat called?'" in log
    assert "hit m-cat relevance" in log and "why {" in log and "'mode': " in log
    # the injected block is logged whole, as the model received it
    recall = middleware.last_recall
    assert recall is not None and seen == [recall]
    assert "Miso" in recall.text and recall.text in log and recall.text in model.system_text()
    assert recall.message_ids[0] == "m-cat" and recall.hits[0].message_ids == ("m-cat",)
    assert recall.hits[0].why and 0.0 < recall.hits[0].relevance <= 1.0
    assert "adds nothing" not in log and "add scope='alice' thread=" in log  # the turn's own write is logged


def test_llama_index_turn_at_debug_logs_hits_their_why_and_the_injected_block(
    memory: sgmem.Memory, caplog: pytest.LogCaptureFixture
) -> None:
    _seed(memory)
    mem = SGMemMemory.from_defaults(memory=memory, scope="alice", thread="today")
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=3, is_chat_model=True)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=mem)
    with caplog.at_level(logging.DEBUG, logger="sgmem"):
        engine.chat(QUESTION)
    log = _debug_text(caplog)
    assert "hit m-cat relevance" in log and "why {" in log
    recall = mem.last_recall
    assert recall is not None and "Miso" in recall.text and recall.text in log
    sent = "\n".join(str(m.content) for m in llm.last_chat_messages)
    assert recall.text in sent  # what the trace says was injected is what the LLM received


def test_the_cutoff_is_visible_in_the_trace(default_memory: sgmem.Memory) -> None:
    memory = default_memory  # the default relevance cutoff
    _seed(memory)
    trace = memory.context_trace("How do I bake sourdough bread at home?", scope="alice")
    assert trace.text == "" and trace.hits == () and trace.cut  # ranked, then cut for relevance
    assert all(h.relevance < trace.cutoff for h in trace.cut)
    assert memory.context_trace(QUESTION, scope="nobody").text == ""


def test_nothing_is_logged_at_the_default_level(memory: sgmem.Memory, caplog: pytest.LogCaptureFixture) -> None:
    _seed(memory)
    agent = create_agent(RecordingChatModel(), tools=[], middleware=[SGMemMiddleware(memory, scope="alice")])
    with caplog.at_level(logging.WARNING):
        agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    assert [r for r in caplog.records if r.name.split(".")[0] in ("sgmem", "langchain_sgmem")] == []


def test_nothing_is_printed_without_logging_configured() -> None:
    # a fresh interpreter with no logging configuration, as an application that never set it up
    code = textwrap.dedent(
        """
        import sgmem
        from tests.unit.helpers import HashEmbedder
        with sgmem.Memory(":memory:", embedder=HashEmbedder()) as mem:
            mem.add([{"role": "user", "content": "I adopted a cat named Miso."}], scope="a", thread="t")
            mem.context("What is my cat called?", scope="a")
            mem.search("cat", scope="a")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout == "" and out.stderr == ""


def test_the_classic_langchain_memory_keeps_its_last_recall(memory: sgmem.Memory) -> None:
    from langchain_sgmem import SGMemMemory as ClassicMemory

    _seed(memory)
    classic = ClassicMemory(memory=memory, scope="alice", thread="chain")
    assert classic.last_recall is None
    block = classic.load_memory_variables({"input": QUESTION})["history"]
    recall = classic.last_recall
    assert recall is not None and recall.text == block and "Miso" in block and recall.query == QUESTION


async def test_the_async_paths_keep_their_last_recall_too(memory: sgmem.Memory) -> None:
    _seed(memory)
    middleware = SGMemMiddleware(memory, scope="alice")
    agent = create_agent(RecordingChatModel(), tools=[], middleware=[middleware])
    await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
    assert middleware.last_recall is not None and "Miso" in middleware.last_recall.text
    trace = await memory.acontext_trace(QUESTION, scope="alice")
    assert trace.text == memory.context(QUESTION, scope="alice") and trace.hits
