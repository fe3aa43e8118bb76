"""A question that gathers several memories gets hits from several conversations, not one long chat about one of them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

import sgmem
from sgmem.text.questions import asks_for_many
from tests.conftest import NO_CUTOFF


def _at(month: int, day: int) -> datetime:
    return datetime(2024, month, day, 18, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(None, embedder=embedder, config=NO_CUTOFF) as m:
        june = [
            "I attended my cousin Ana's wedding this weekend, the ceremony was by the lake.",
            "At Ana's wedding the band played until midnight and everyone danced.",
            "The wedding cake at Ana's reception had five tiers.",
            "I gave a toast at Ana's wedding and cried a little.",
            "Ana's wedding photos came out great.",
        ]
        m.add([{"role": "user", "content": t} for t in june], scope="u", thread="june-chat", at=_at(6, 10))
        march = ["I need a new laptop for work.", "I was at my college roommate's wedding in Denver on Saturday."]
        m.add([{"role": "user", "content": t} for t in march], scope="u", thread="march-chat", at=_at(3, 4))
        august = ["Went to Tom and Priya's wedding yesterday, a small one at city hall.", "My dog needs a vet visit."]
        m.add([{"role": "user", "content": t} for t in august], scope="u", thread="august-chat", at=_at(8, 20))
        yield m


def test_a_count_question_reaches_beyond_the_one_long_chat(mem: sgmem.Memory) -> None:
    threads = [h.thread for h in mem.search("How many weddings did I attend this year?", scope="u", k=3)]
    assert "march-chat" in threads, threads  # the roommate's wedding, told in passing in another chat


def test_a_question_about_one_thing_keeps_its_chat(mem: sgmem.Memory) -> None:
    threads = [h.thread for h in mem.search("What did the wedding cake look like?", scope="u", k=3)]
    assert threads == ["june-chat"] * 3


@pytest.mark.parametrize(
    ("question", "many"),
    [
        ("How many weddings did I attend this year?", True),
        ("What are all the instruments I play?", True),
        ("How much did I spend on gifts in total?", True),
        ("How many days passed between the workshop and the day I planted the tomatoes?", True),
        ("Which happened first, the trip to Lisbon or the move?", True),
        ("What is the order of the three museums I visited?", True),
        ("What did the wedding cake look like?", False),
        ("Where does my sister live now?", False),
        ("Can you recommend a show for tonight?", False),
    ],
)
def test_questions_that_gather_several_memories_are_read_by_their_grammar(question: str, many: bool) -> None:
    assert asks_for_many(question) is many


def test_a_question_that_gathers_is_cut_by_the_order_it_is_ranked_in(embedder: sgmem.Embedder) -> None:
    """ "How much is my rent?" gathers (a total): its hits are spread over sessions, and the spread score is the one
    its relevance is read from, so the hits of k=3 are the first three of k=10 (a chat of the build pool where the
    third turn by the spread order sat just under the cutoff while later ones passed)."""
    from sgmem.eval.pool import load_pool
    from sgmem.eval.small import SCOPE
    from sgmem.eval.suite import generate_chats

    chat = next(c for c in generate_chats(load_pool("build"), 13, 0) if c.id == "s0-c0012")
    probe = next(p for p in chat.probes if p.id.endswith("rent-1850"))
    with sgmem.Memory(embedder=embedder) as mem:
        for thread, at, msgs in chat.sessions:
            mem.add(msgs, scope=SCOPE, thread=thread, at=at)
        ten = mem.search(probe.text, scope=SCOPE, k=10, now=probe.now)
        three = mem.search(probe.text, scope=SCOPE, k=3, now=probe.now)
        ranked = mem.search(probe.text, scope=SCOPE, k=10, now=probe.now, min_score=0)
    assert [h.message_ids for h in three] == [h.message_ids for h in ten[:3]]
    assert [h.relevance for h in ranked] == sorted((h.relevance for h in ranked), reverse=True)
