"""The LangChain and LlamaIndex adapters inherit the core's guarantees: scopes never mix,
deletes leave nothing behind, hostile input gets sgmem's (or the framework's) error and
changes nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sgmem

from . import strategies as s
from .conftest import record_figure
from .helpers import DEFAULT_MODES, FastEmbedder, observable

lc_messages = pytest.importorskip("langchain_core.messages")
pydantic = pytest.importorskip("pydantic")
langchain_sgmem = pytest.importorskip("langchain_sgmem")
li_llms = pytest.importorskip("llama_index.core.llms")
llama_index_sgmem = pytest.importorskip("llama_index_sgmem")

pytestmark = pytest.mark.integration

EXAMPLES: Counter[str] = Counter()
SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
#: what a caller of an adapter may legitimately get for bad input
EXPECTED = (sgmem.SgmemError, pydantic.ValidationError)


@pytest.fixture
def mem() -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=FastEmbedder()) as m:
        yield m


def _texts(mem: sgmem.Memory, scope: str) -> list[str]:
    return [m.content for m in mem.messages(scope=scope)]


# ------------------------------------------------------------------------ isolation
def test_langchain_adapters_keep_scopes_apart(mem: sgmem.Memory) -> None:
    H, A = lc_messages.HumanMessage, lc_messages.AIMessage
    alice = langchain_sgmem.SGMemChatMessageHistory(mem, scope="alice", thread="chat")
    bob = langchain_sgmem.SGMemChatMessageHistory(mem, scope="bob", thread="chat")
    alice.add_messages([H("My cat is called Miso."), A("Miso is a sweet name.")])
    bob.add_messages([H("My bank PIN is bobsecret4471."), A("Please never share your PIN.")])
    assert [m.content for m in alice.messages] == ["My cat is called Miso.", "Miso is a sweet name."]
    for mode in DEFAULT_MODES:
        docs = langchain_sgmem.SGMemRetriever(memory=mem, scope="alice", k=10, mode=mode).invoke(
            "bank PIN bobsecret4471"
        )
        assert all("bobsecret4471" not in d.page_content and "PIN" not in d.page_content for d in docs), mode
    legacy = langchain_sgmem.SGMemMemory(memory=mem, scope="alice", thread="chat")
    assert "bobsecret4471" not in json.dumps(legacy.load_memory_variables({"input": "what is my PIN bobsecret4471"}))
    bob.clear()
    assert [m.content for m in alice.messages] == ["My cat is called Miso.", "Miso is a sweet name."]
    assert bob.messages == []


def test_langgraph_store_namespaces_stay_apart(mem: sgmem.Memory) -> None:
    store = langchain_sgmem.SGMemStore(mem)
    store.put(("users", "alice"), "pet", {"text": "Alice has a cat named Miso."})
    store.put(("usersx", "bob"), "pin", {"text": "Bob's PIN is bobsecret4471."})
    store.put(("users", "alice", "deep"), "pin", {"text": "Nested note about gardening."})
    found = [(i.namespace, i.key) for i in store.search(("users",), query="PIN bobsecret4471", limit=10)]
    assert (("usersx", "bob"), "pin") not in found
    assert all(ns[0] == "users" for ns, _ in found)
    assert store.get(("users", "alice"), "pin") is None
    assert ("usersx", "bob") not in store.list_namespaces(prefix=("users",))
    # a namespace whose labels would join into another namespace's scope is refused
    with pytest.raises(Exception) as info:  # noqa: PT011 - LangGraph's own error type
        store.put(("users.alice",), "pet", {"text": "Impostor"})
    assert "." in str(info.value) or isinstance(info.value, sgmem.SgmemError)
    assert store.get(("users", "alice"), "pet").value == {"text": "Alice has a cat named Miso."}


def test_llama_index_adapters_keep_scopes_apart(mem: sgmem.Memory) -> None:
    Msg = li_llms.ChatMessage
    a = llama_index_sgmem.SGMemChatStore(memory=mem, scope="alice")
    b = llama_index_sgmem.SGMemChatStore(memory=mem, scope="bob")
    a.add_message("chat", Msg(role="user", content="My cat is called Miso."))
    b.add_message("chat", Msg(role="user", content="My PIN is bobsecret4471."))
    assert [m.content for m in a.get_messages("chat")] == ["My cat is called Miso."]
    assert a.get_keys() == ["chat"] and b.get_keys() == ["chat"]
    for mode in DEFAULT_MODES:
        nodes = llama_index_sgmem.SGMemRetriever(memory=mem, scope="alice", k=10, mode=mode).retrieve(
            "PIN bobsecret4471"
        )
        assert all("bobsecret4471" not in n.node.get_content() for n in nodes), mode
    memory = llama_index_sgmem.SGMemMemory.from_defaults(memory=mem, scope="alice", thread="chat")
    assert all("bobsecret4471" not in str(m.content) for m in memory.get(input="what is my PIN bobsecret4471?"))
    assert b.delete_messages("chat") is not None
    assert [m.content for m in a.get_messages("chat")] == ["My cat is called Miso."]


# ------------------------------------------------------------------------- deletion
def test_clearing_an_adapter_history_removes_it_from_search(mem: sgmem.Memory) -> None:
    H = lc_messages.HumanMessage
    hist = langchain_sgmem.SGMemChatMessageHistory(mem, scope="alice", thread="old")
    keep = langchain_sgmem.SGMemChatMessageHistory(mem, scope="alice", thread="new")
    hist.add_messages([H("The vault code is quartzfalcon88.")])
    keep.add_messages([H("I like climbing on weekends.")])
    hist.clear()
    for mode in DEFAULT_MODES:
        docs = langchain_sgmem.SGMemRetriever(memory=mem, scope="alice", k=10, mode=mode).invoke(
            "The vault code is quartzfalcon88."
        )
        assert all("quartzfalcon88" not in d.page_content for d in docs)
    store = llama_index_sgmem.SGMemChatStore(memory=mem, scope="alice")
    store.add_message("tmp", li_llms.ChatMessage(role="user", content="Temporary secret emberlynx12."))
    store.delete_message("tmp", 0)
    assert all(
        "emberlynx12" not in h.text for m in DEFAULT_MODES for h in mem.search("emberlynx12", scope="alice", mode=m)
    )
    assert _texts(mem, "alice") == ["I like climbing on weekends."]


# ------------------------------------------------------------------------ bad input
_lc_kinds = st.sampled_from(["human", "ai", "system", "tool", "junk"])
_content = st.one_of(
    s.any_text,
    s.valid_text,
    st.lists(
        st.one_of(
            s.any_text,
            st.dictionaries(st.sampled_from(["type", "text", "url"]), st.one_of(s.any_text, s.junk), max_size=2),
        ),
        max_size=2,
    ),
)


def _lc_message(kind: str, content: Any, extra: Any) -> Any:
    m = lc_messages
    if kind == "human":
        return m.HumanMessage(content=content, additional_kwargs=extra)
    if kind == "ai":
        return m.AIMessage(content=content, additional_kwargs=extra)
    if kind == "system":
        return m.SystemMessage(content=content)
    if kind == "tool":
        return m.ToolMessage(content=content, tool_call_id="call-1")
    return content  # not a message at all


@SETTINGS
@given(
    kinds=st.lists(_lc_kinds, min_size=1, max_size=3),
    content=_content,
    extra=st.one_of(st.just({}), st.dictionaries(s.any_text, s.metadata, max_size=2)),
    scope=st.one_of(st.just("alice"), s.names),
    thread=st.one_of(st.just("t"), s.names),
)
def test_langchain_history_takes_any_message_or_refuses_it(
    mem: sgmem.Memory, kinds: list[str], content: Any, extra: Any, scope: Any, thread: Any
) -> None:
    EXAMPLES["langchain SGMemChatMessageHistory"] += 1
    before = observable(mem)
    try:
        hist = langchain_sgmem.SGMemChatMessageHistory(mem, scope=scope, thread=thread)
        msgs = [_lc_message(k, content, extra) for k in kinds]
    except EXPECTED:
        return
    try:
        hist.add_messages(msgs)
    except Exception as exc:  # noqa: BLE001
        assert isinstance(exc, EXPECTED), f"{type(exc).__name__} escaped: {exc!r}"
        assert observable(mem) == before
        return
    replay = hist.messages
    assert [type(m) for m in replay[-len(msgs) :]] == [type(m) for m in msgs]
    assert [m.content for m in replay[-len(msgs) :]] == [m.content for m in msgs]
    hist.clear()


@SETTINGS
@given(query=st.one_of(s.any_text, s.valid_text, s.junk), k=s.ints, mode=s.modes)
def test_langchain_retriever_answers_or_refuses(mem: sgmem.Memory, query: Any, k: Any, mode: Any) -> None:
    EXAMPLES["langchain SGMemRetriever"] += 1
    mem.add({"role": "user", "content": "I keep bees."}, scope="alice", thread="t") if not mem.scopes() else None
    before = observable(mem)
    try:
        docs = langchain_sgmem.SGMemRetriever(memory=mem, scope="alice", k=k, mode=mode).invoke(query)
    except Exception as exc:  # noqa: BLE001
        assert isinstance(exc, EXPECTED), f"{type(exc).__name__} escaped: {exc!r}"
    else:
        assert len(docs) <= k
    assert observable(mem) == before


@SETTINGS
@given(
    key=st.one_of(st.just("chat"), s.names),
    role=st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), s.any_text),
    content=st.one_of(s.any_text, s.valid_text),
    extra=st.dictionaries(s.any_text, s.metadata, max_size=2),
    op=st.sampled_from(["add", "set", "insert", "delete"]),
)
def test_llama_index_chat_store_takes_any_message_or_refuses_it(
    mem: sgmem.Memory, key: Any, role: Any, content: Any, extra: Any, op: str
) -> None:
    EXAMPLES["llama_index SGMemChatStore"] += 1
    store = llama_index_sgmem.SGMemChatStore(memory=mem, scope="alice")
    if [m.content for m in store.get_messages("chat")] != ["first"]:
        store.delete_messages("chat")
        store.add_message("chat", li_llms.ChatMessage(role="user", content="first"))
    before = observable(mem)
    try:
        msg = li_llms.ChatMessage(role=role, content=content, additional_kwargs=extra)
    except EXPECTED:
        return
    try:
        if op == "add":
            store.add_message(key, msg)
        elif op == "set":
            store.set_messages(key, [msg])
        elif op == "insert":
            store.add_message(key, msg, idx=0)
        else:
            store.delete_message(key, 0)
    except Exception as exc:  # noqa: BLE001
        assert isinstance(exc, EXPECTED), f"{type(exc).__name__} escaped: {exc!r}"
        assert observable(mem) == before
        return
    if op in ("add", "set", "insert"):
        assert any(m.content == content for m in store.get_messages(key))
        store.delete_messages(key)
        assert store.get_messages(key) == []
        if key != "chat":  # the other keys' messages are as they were
            assert [m.content for m in store.get_messages("chat")] == ["first"]


def test_zz_record_examples() -> None:
    for name, n in sorted(EXAMPLES.items()):
        record_figure(f"hypothesis examples: {name}", n)
