"""Memory.add: what is stored, what it reports, and what it costs in embedder calls."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import sgmem
from sgmem.text import split_sentences

from .helpers import CAT_THREAD, DAY1, DAY2, RUN_THREAD, CountingEmbedder


def test_add_reports_ids_and_counts(memory: sgmem.Memory) -> None:
    msgs = [dict(m) for m in CAT_THREAD]
    result = memory.add(msgs, scope="alice", thread="chat-1", at=DAY1)
    assert result.message_ids == tuple(m["id"] for m in msgs)
    assert result.messages == len(msgs)
    assert result.sentences == sum(len(split_sentences(m["content"])) for m in msgs)
    stats = memory.stats("alice").scopes[0]
    assert stats.messages == result.messages
    assert stats.sentences == result.sentences
    # every edge the add reports is in the store
    assert result.edges == stats.similarity_edges + stats.chronological_edges
    assert stats.chronological_edges == len(msgs) - 1


def test_generated_ids_are_unique_and_replayed(memory: sgmem.Memory) -> None:
    r1 = memory.add(
        [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}], scope="s", thread="t"
    )
    r2 = memory.add({"role": "user", "content": "three"}, scope="s", thread="t")
    ids = r1.message_ids + r2.message_ids
    assert len(set(ids)) == 3 and all(isinstance(i, str) and i for i in ids)
    assert [m.id for m in memory.messages(scope="s")] == list(ids)


def test_caller_and_generated_ids_mix_in_order(memory: sgmem.Memory) -> None:
    r = memory.add(
        [{"role": "user", "content": "a", "id": "mine"}, {"role": "assistant", "content": "b"}], scope="s", thread="t"
    )
    assert r.message_ids[0] == "mine"
    assert r.message_ids[1] != "mine"


def test_timings_cover_every_stage(memory: sgmem.Memory) -> None:
    r = memory.add([dict(m) for m in RUN_THREAD], scope="alice", thread="chat-2")
    assert set(r.timings_ms) >= {"segment", "embed", "graph", "store", "total"}
    assert all(v >= 0 for v in r.timings_ms.values())
    assert r.timings_ms["total"] >= max(v for k, v in r.timings_ms.items() if k != "total")


def test_identical_texts_are_embedded_once(embedder: sgmem.Embedder) -> None:
    same = "I adopted a grey cat named Miso."
    once, thrice = CountingEmbedder(embedder), CountingEmbedder(embedder)
    with sgmem.Memory(embedder=once) as one, sgmem.Memory(embedder=thrice) as three:
        r1 = one.add({"role": "user", "content": same}, scope="s", thread="t")
        r3 = three.add([{"role": "user", "content": same} for _ in range(3)], scope="s", thread="t")
        assert r3.messages == 3
        # three copies cost exactly what one costs
        assert sorted(thrice.texts) == sorted(once.texts)
        assert r3.embedded == r1.embedded >= 1
        assert len(set(thrice.texts)) == len(thrice.texts)
        # already in the scope: not embedded again
        thrice.texts.clear()
        again = three.add([{"role": "user", "content": same}], scope="s", thread="t2")
        assert again.embedded == 0
        assert thrice.texts == []
        assert three.stats("s").messages == 4


def test_embedded_counts_exactly_the_distinct_texts_sent(embedder: sgmem.Embedder) -> None:
    counting = CountingEmbedder(embedder)
    with sgmem.Memory(embedder=counting) as mem:
        msgs = [dict(m) for m in CAT_THREAD] + [{"role": "assistant", "content": CAT_THREAD[3]["content"]}]
        r = mem.add(msgs, scope="s", thread="t")
        assert r.embedded == len(counting.texts)
        assert len(set(counting.texts)) == len(counting.texts), "a text was sent to the embedder twice"
        # the repeated assistant line was embedded once, though it is two stored sentences
        repeated = f"assistant: {CAT_THREAD[3]['content']}"
        assert counting.texts.count(repeated) == 1
        stored = [
            f"{m.get('name') or m['role']}: {sent}" for m in msgs for sent in split_sentences(m["content"])
        ]
        sent_for_sentences = [t for t in counting.texts if t in stored]
        assert len(stored) == r.sentences and len(sent_for_sentences) == len(set(stored)) < r.sentences


def test_default_time_is_now(memory: sgmem.Memory) -> None:
    before = datetime.now(timezone.utc)
    memory.add({"role": "user", "content": "hello"}, scope="s", thread="t")
    after = datetime.now(timezone.utc)
    [m] = memory.messages(scope="s")
    assert m.at is not None and before <= m.at <= after


def test_message_time_overrides_the_call_time(memory: sgmem.Memory) -> None:
    memory.add(
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "at": DAY2}], scope="s", thread="t", at=DAY1
    )
    assert [m.at for m in memory.messages(scope="s")] == [DAY1, DAY2]


def test_message_objects_are_accepted(memory: sgmem.Memory) -> None:
    msg = sgmem.Message(role="user", content="I live in Lisbon.", name="Bob", id="b1", at=DAY1, metadata={"k": 1})
    memory.add([msg], scope="s", thread="t")
    [got] = memory.messages(scope="s")
    assert (got.role, got.content, got.name, got.id, got.at, got.metadata) == (
        "user",
        "I live in Lisbon.",
        "Bob",
        "b1",
        DAY1,
        {"k": 1},
    )
    assert got.thread == "t"


@pytest.mark.parametrize("role", ["system", "tool", "assistant", "user"])
def test_every_role_is_stored(memory: sgmem.Memory, role: str) -> None:
    memory.add({"role": role, "content": "The build finished in 42 seconds."}, scope="s", thread="t")
    assert memory.messages(scope="s")[0].role == role


@pytest.mark.parametrize("content", ["👍", "...", "!!! ???", "🎉🎉 🎉"])
def test_punctuation_or_emoji_only_messages_are_stored_and_findable(memory: sgmem.Memory, content: str) -> None:
    r = memory.add({"role": "user", "content": content, "id": "only"}, scope="s", thread="t")
    assert r.sentences >= 1
    assert memory.messages(scope="s")[0].content == content
    hits = memory.search(content, scope="s", mode="vector")
    assert [h.message_ids for h in hits] == [("only",)]


def test_a_second_add_continues_the_thread_chain(memory: sgmem.Memory) -> None:
    memory.add([dict(m) for m in CAT_THREAD[:2]], scope="s", thread="t", at=DAY1)
    memory.add([dict(m) for m in CAT_THREAD[2:]], scope="s", thread="t", at=DAY1)
    memory.add([dict(m) for m in RUN_THREAD], scope="s", thread="other", at=DAY1)
    st = memory.stats("s").scopes[0]
    # one chain per thread: (4 - 1) + (4 - 1)
    assert st.chronological_edges == (len(CAT_THREAD) - 1) + (len(RUN_THREAD) - 1)
    assert st.threads == 2


def test_similarity_edges_link_each_sentence_to_its_earlier_neighbours(embedder: sgmem.Embedder) -> None:
    cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_k=2, knn_min_cosine=-1.0))
    texts = ["Cats purr.", "Dogs bark.", "Birds sing.", "Fish swim.", "Cows moo."]
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        mem.add([{"role": "user", "content": t} for t in texts[:3]], scope="s", thread="t")
        mem.add([{"role": "user", "content": t} for t in texts[3:]], scope="s", thread="t")
        # sentence i links to min(k, i) earlier sentences, across adds too
        expected = sum(min(2, i) for i in range(len(texts)))
        assert mem.stats("s").scopes[0].similarity_edges == expected


def test_no_similarity_edges_when_knn_is_off(embedder: sgmem.Embedder) -> None:
    cfg = sgmem.Config(graph=sgmem.GraphConfig(knn_k=0))
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        r = mem.add([dict(m) for m in CAT_THREAD], scope="s", thread="t")
        st = mem.stats("s").scopes[0]
        assert st.similarity_edges == 0
        assert r.edges == st.chronological_edges == len(CAT_THREAD) - 1


def test_sessions_default_to_one_per_thread_day(memory: sgmem.Memory) -> None:
    day = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
    memory.add(
        [{"role": "user", "content": f"day {i} note", "at": day + timedelta(days=i // 2)} for i in range(6)],
        scope="s",
        thread="t",
    )
    assert memory.stats("s").scopes[0].sessions == 3
    sessions = [m.session for m in memory.messages(scope="s")]
    assert sessions[0] == sessions[1] != sessions[2] == sessions[3] != sessions[4]


def test_explicit_sessions_are_kept(memory: sgmem.Memory) -> None:
    memory.add(
        [
            {"role": "user", "content": "first", "session": "s-1"},
            {"role": "user", "content": "second", "session": "s-1"},
            {"role": "user", "content": "third", "session": "s-2"},
        ],
        scope="s",
        thread="t",
    )
    assert [m.session for m in memory.messages(scope="s")] == ["s-1", "s-1", "s-2"]
    assert memory.stats("s").scopes[0].sessions == 2


def test_session_by_day_off_gives_one_session_per_thread(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(session_by_day=False)) as mem:
        mem.add(
            [{"role": "user", "content": "a", "at": DAY1}, {"role": "user", "content": "b", "at": DAY2}],
            scope="s",
            thread="t",
        )
        assert mem.stats("s").scopes[0].sessions == 1


def test_token_counts_are_recorded(memory: sgmem.Memory) -> None:
    from sgmem.text import count_tokens

    msgs = [dict(m) for m in CAT_THREAD]
    memory.add(msgs, scope="s", thread="t")
    assert memory.stats("s").scopes[0].tokens == sum(count_tokens(m["content"]) for m in msgs)


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
