"""Who said it: the user's own words are the evidence about the user; the assistant's restatements and advice
must not bury them, yet a question about what the assistant said still finds the assistant's turn; a broad
question about the user ("What do you know about me?") gets the user's statements, not an empty context."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sgmem

DOG = [
    {"role": "user", "content": "I adopted a rescue greyhound named Biscuit last month."},
    {
        "role": "assistant",
        "content": "Congratulations on adopting Biscuit! A rescue greyhound is a wonderful dog to adopt. Since you "
        "adopted your greyhound only last month, give the dog a few weeks to settle in. Many adopted rescue dogs are "
        "shy at first, so keep Biscuit's routine calm and predictable. A greyhound likes a soft bed, short walks and "
        "plenty of sleep. Adopted greyhounds often bond quickly with patient owners. Enjoy your new dog!",
    },
    {"role": "user", "content": "Any tips for walking him in the rain?"},
    {
        "role": "assistant",
        "content": "Greyhounds have thin coats, so a waterproof dog coat keeps your adopted greyhound warm on rainy "
        "walks. Dry Biscuit with a towel afterwards, and keep rainy walks with your dog short.",
    },
]
BOOK = [
    {"role": "user", "content": "I'm looking for something to read on my commute."},
    {
        "role": "assistant",
        "content": "I recommend the book 'Project Hail Mary' by Andy Weir: a gripping science fiction novel that "
        "is perfect for a train ride.",
    },
]
FAMILY = [
    {"role": "user", "content": "My sister Clara is a nurse in Leeds and she has two little boys."},
    {"role": "assistant", "content": "That sounds like a busy household! Nursing is demanding work."},
    {"role": "user", "content": "My parents retired to Portugal last year."},
    {"role": "assistant", "content": "Portugal is a lovely place to retire."},
    {"role": "user", "content": "I work as a data engineer at a logistics company."},
    {"role": "assistant", "content": "Data engineering in logistics must involve a lot of route and fleet data."},
]


@pytest.fixture(scope="module")
def chat(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(DOG, scope="u", thread="dog")
        mem.add(BOOK, scope="u", thread="book")
        mem.add(FAMILY, scope="u", thread="family")
        yield mem


@pytest.mark.parametrize("question", ["What kind of dog did I adopt?", "When did I adopt my dog?"])
def test_the_users_fact_ranks_above_the_assistants_restatement_of_it(chat: sgmem.Memory, question: str) -> None:
    hits = chat.search(question, scope="u", k=3, min_score=0)
    assert hits[0].speaker == "user" and "Biscuit" in hits[0].text


def test_a_question_about_what_the_assistant_said_finds_the_assistants_turn(chat: sgmem.Memory) -> None:
    hits = chat.search("What was the book you recommended me?", scope="u", k=3)
    assert hits[0].speaker == "assistant" and "Project Hail Mary" in hits[0].text
    assert "Project Hail Mary" in chat.context("What was the book you recommended me?", scope="u")
    advice = chat.search("What coat did you suggest for my dog?", scope="u", k=3)
    assert advice[0].speaker == "assistant" and "waterproof" in advice[0].text


def test_a_named_speaker_in_the_assistant_role_is_a_person(embedder: sgmem.Embedder) -> None:
    # two people chatting (as LoCoMo stores its second speaker): no role weight between them
    named = [dict(m, name="Sam" if m["role"] == "assistant" else "Ana") for m in DOG]
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(named, scope="p", thread="t")
        off = sgmem.Config(hybrid=sgmem.HybridConfig(assistant_weight=1.0))
        with sgmem.Memory(embedder=embedder, config=off) as plain:
            plain.add(named, scope="p", thread="t")
            for q in ("What kind of dog did Ana adopt?", "When did Ana adopt her dog?"):
                got = [(h.text, round(h.score, 6)) for h in mem.search(q, scope="p", k=4, min_score=0)]
                assert got == [(h.text, round(h.score, 6)) for h in plain.search(q, scope="p", k=4, min_score=0)]


@pytest.mark.parametrize("question", ["What do you know about me?", "What have you learned about me so far?"])
def test_a_broad_question_about_the_user_gets_the_users_statements(chat: sgmem.Memory, question: str) -> None:
    text = chat.context(question, scope="u")
    for fact in ("Biscuit", "Clara", "Portugal", "data engineer"):
        assert fact in text
    assert "Congratulations" not in text and "lovely place" not in text  # the user's words, not the assistant's
    hits = chat.search(question, scope="u")
    assert hits and all(h.speaker == "user" for h in hits)


def test_a_broad_question_with_a_topic_keeps_to_the_topic(chat: sgmem.Memory) -> None:
    text = chat.context("Summarise what you remember about my family", scope="u")
    assert "Clara" in text and "Portugal" in text
    assert "commute" not in text and "data engineer" not in text
    work = chat.context("Tell me everything you know about my work", scope="u")
    assert "data engineer" in work and "Clara" not in work and "Biscuit" not in work


def test_an_unrelated_question_still_gets_nothing(chat: sgmem.Memory) -> None:
    assert chat.context("What is the capital of Peru?", scope="u") == ""
    assert chat.search("What is the capital of Peru?", scope="u") == []


def test_the_broad_rule_is_a_setting(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(broad_cosine=1.0)) as mem:
        mem.add(FAMILY, scope="u", thread="family")
        assert mem.context("What do you know about me?", scope="u") == ""
    with pytest.raises(sgmem.ConfigError, match="broad_cosine"):
        sgmem.Config(broad_cosine=2)
