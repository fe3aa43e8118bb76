"""Memory inside a real chat: stored questions, non-answers and filler (sgmem.text.acts and the hybrid's use of it).

A deployed agent stores everything said: the user's earlier questions, the
assistant's "I'm not sure." and "Thanks.". Ranking must still put what answers
a question first, and never show filler as the reason a hit was found.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

import sgmem
from sgmem.text.acts import ACT_NAMES, act_of

DAY1 = "2024-01-01T10:00:00Z"
DAY2 = "2024-02-01T10:00:00Z"

FACTS = [
    {"role": "user", "content": "Hi!"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "I adopted a cat named Miso. I work as a nurse in Lyon."},
    {"role": "assistant", "content": "Nice!"},
    {"role": "user", "content": "Thanks."},
]
#: the agent's later chat: the same questions asked again, answered with nothing
ECHOES = [
    {"role": "user", "content": "What is my cat called?"},
    {"role": "assistant", "content": "I'm not sure, I don't remember."},
    {"role": "user", "content": "What is my job?"},
    {"role": "assistant", "content": "No idea."},
    {"role": "user", "content": "Good idea."},
]
#: acts switched off: every sentence weighs as a statement (filler still does not), no reply channel
ACTS_OFF = {"question_weight": 1.0, "echo_weight": 1.0, "non_answer_weight": 1.0, "reply_weight": 0.0}


@pytest.mark.parametrize(
    ("sentence", "act"),
    [
        ("Hi!", "filler"),
        ("Thanks.", "filler"),
        ("Nice!", "filler"),
        ("ok", "filler"),
        ("😀👍", "filler"),
        ("Good idea.", "filler"),
        ("That's a great point!", "filler"),
        ("Wow, that's awesome!", "filler"),
        ("Take care!", "filler"),
        ("No idea.", "non-answer"),
        ("I'm not sure, I don't remember.", "non-answer"),
        ("I don't know.", "non-answer"),
        ("What is my cat called?", "question"),
        ("what is my cat called", "question"),
        ("Did you go to the concert", "question"),
        ("I adopted a cat named Miso.", "statement"),
        ("My job is great.", "statement"),
        ("I'm not sure what you mean by the Berlin marathon.", "statement"),
        ("Good luck with the new job!", "statement"),
    ],
)
def test_each_sentence_gets_its_dialogue_act(sentence: str, act: str) -> None:
    assert ACT_NAMES[act_of(sentence)] == act


def _memory(embedder: sgmem.Embedder, **hybrid: float) -> sgmem.Memory:
    config = sgmem.Config()
    return sgmem.Memory(embedder=embedder, config=config.with_(hybrid=dataclasses.replace(config.hybrid, **hybrid)))


@pytest.fixture(scope="module")
def chat(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with _memory(embedder) as mem:
        mem.add(FACTS, scope="u", thread="t1", at=DAY1)
        mem.add(ECHOES, scope="u", thread="t2", at=DAY2)
        yield mem


@pytest.fixture(scope="module")
def chat_acts_off(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with _memory(embedder, **ACTS_OFF) as mem:
        mem.add(FACTS, scope="u", thread="t1", at=DAY1)
        mem.add(ECHOES, scope="u", thread="t2", at=DAY2)
        yield mem


@pytest.mark.parametrize("query", ["What is my cat called?", "What is my job?"])
def test_the_answer_outranks_the_same_question_asked_before(
    chat: sgmem.Memory, chat_acts_off: sgmem.Memory, query: str
) -> None:
    hits = chat.search(query, scope="u", k=5, min_score=0)
    assert "nurse in Lyon" in hits[0].text
    # and it was the dialogue acts that did it: read as statements, the echo comes first
    off = chat_acts_off.search(query, scope="u", k=5, min_score=0)
    assert off[0].text == query


def test_a_non_answer_never_outranks_the_answer(chat: sgmem.Memory) -> None:
    texts = [h.text for h in chat.search("What is my job?", scope="u", k=10, min_score=0)]
    answer = next(i for i, t in enumerate(texts) if "nurse" in t)
    for said in ("No idea.", "I'm not sure, I don't remember."):
        assert texts.index(said) > answer


@pytest.mark.parametrize("query", ["Hello there!", "Thanks a lot", "What is my job?", "Where do I work?"])
def test_filler_ranks_after_every_turn_with_content_and_is_never_the_why(chat: sgmem.Memory, query: str) -> None:
    hits = chat.search(query, scope="u", k=10, min_score=0)
    filler = {"Hi!", "Nice!", "Thanks.", "Good idea."}
    # (the greeting asks in form and carries nothing by meaning: either reading may place it)
    kinds = [h.text in filler for h in hits if h.text != "Hello! How can I help?"]
    assert kinds == sorted(kinds), f"a filler turn outranks content: {[h.text for h in hits]}"
    for h in hits:
        sentence = h.why.get("sentence")
        assert sentence is None or ACT_NAMES[act_of(sentence)] != "filler", h.why
        if h.text in filler:
            assert h.relevance == 0.0


def test_a_greeting_in_a_turn_with_content_is_not_its_best_sentence(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add([{"role": "user", "content": "Hello! I moved to Leeds last week."}], scope="u", thread="t")
        for mode in ("hybrid", "vector"):
            (hit,) = mem.search("hello", scope="u", k=1, min_score=0, mode=mode)
            assert hit.why["sentence"] == "I moved to Leeds last week."


def test_a_greetings_words_lift_no_turn_beside_it(embedder: sgmem.Embedder) -> None:
    """A word of the query found only in the turn before or after counts for a turn (an answer needs its
    question); a greeting holding it says nothing, so the turn after "Good morning!" gains nothing from it."""
    fact = "I ran ten kilometres along the river before breakfast today."
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add([{"role": "user", "content": fact}], scope="u", thread="a", at=DAY1)
        mem.add(
            [
                {"role": "assistant", "content": "Good morning!"},
                {"role": "user", "content": "Let's plan this week's dinners."},
            ],
            scope="u",
            thread="b",
            at=DAY2,
        )
        hits = mem.search("What did I do this morning?", scope="u", k=5, min_score=0)
    assert hits[0].text == fact, [h.text for h in hits]
    (plan,) = [h for h in hits if h.text == "Let's plan this week's dinners."]
    assert plan.why["channels"]["lexical"] == 0.0, plan.why


def test_filler_is_still_stored_and_replayed_verbatim(chat: sgmem.Memory) -> None:
    assert [m.content for m in chat.messages(scope="u", thread="t1")] == [m["content"] for m in FACTS]


def test_filler_and_non_answers_stay_out_of_the_context(chat: sgmem.Memory) -> None:
    text = chat.context("What is my job?", scope="u", budget_tokens=500)
    assert "nurse in Lyon" in text
    for said in ("No idea.", "Nice!", "Thanks.", "I'm not sure"):
        assert said not in text


def test_a_reply_to_a_question_like_the_query_carries_its_answer(embedder: sgmem.Embedder) -> None:
    chat = [
        {"role": "user", "content": "We got a puppy last month, a border collie."},
        {"role": "assistant", "content": "And what's the dog's name?"},
        {"role": "user", "content": "Pepper."},
        {"role": "assistant", "content": "How is your sister doing in Berlin?"},
        {"role": "user", "content": "She loves the new flat."},
    ]
    query = "What is my dog called?"
    score = {}
    for name, hybrid in (("on", {}), ("no reply channel", {"reply_weight": 0.0})):
        with _memory(embedder, **hybrid) as mem:
            mem.add(chat, scope="u", thread="t", at=DAY1)
            hits = {h.text: h for h in mem.search(query, scope="u", k=5, min_score=0)}
            score[name] = hits["Pepper."].score
            if name == "on":
                # read as its exchange, the one-word answer is relevant: the default cutoff keeps it
                assert hits["Pepper."].relevance > hits["And what's the dog's name?"].relevance
                assert "Pepper." in [h.text for h in mem.search(query, scope="u", k=5)]
                assert "Pepper." in mem.context(query, scope="u", budget_tokens=200)
    # the reply channel: the answer to a question like the query gains
    assert score["on"] > score["no reply channel"] + 0.2


def test_the_acts_follow_an_index_rebuilt_from_the_store(tmp_path, embedder: sgmem.Embedder) -> None:  # type: ignore[no-untyped-def]
    with sgmem.Memory(tmp_path / "m", embedder=embedder) as mem:
        mem.add(FACTS, scope="u", thread="t1", at=DAY1)
        mem.add(ECHOES, scope="u", thread="t2", at=DAY2)
    with sgmem.Memory(tmp_path / "m", embedder=embedder) as mem:
        hits = mem.search("What is my cat called?", scope="u", k=3, min_score=0)
        assert "nurse in Lyon" in hits[0].text


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: sgmem.Config(relative_relevance=2), "Config.relative_relevance: received 2"),
        (lambda: sgmem.Config(relative_relevance="half"), "Config.relative_relevance: received 'half'"),
        (lambda: sgmem.HybridConfig(question_weight=-1), "HybridConfig.question_weight: received -1"),
        (lambda: sgmem.HybridConfig(reply_weight=float("nan")), "HybridConfig.reply_weight"),
    ],
)
def test_bad_act_and_cutoff_settings_are_refused(make, needle: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(sgmem.ConfigError, match=needle):
        make()


@pytest.mark.parametrize("query", ["What is my cat called?", "What is my job?"])
def test_the_reply_to_a_greeting_is_an_answer_when_acts_are_read_by_meaning(
    embedder: sgmem.Embedder, query: str
) -> None:
    # by meaning "Hello! How can I help?" carries nothing (filler), yet the user's turn after it replies to it: the
    # exchange is read from its form, so the fact still outranks the same question asked again later
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(acts="auto")) as mem:
        mem.add(FACTS, scope="u", thread="t1", at=DAY1)
        mem.add(ECHOES, scope="u", thread="t2", at=DAY2)
        hits = mem.search(query, scope="u", k=5, min_score=0)
        assert "nurse in Lyon" in hits[0].text, [h.text for h in hits]
        greeting = next(
            h for h in mem.search("Hello! How can I help?", scope="u", k=10, min_score=0) if "Hello" in h.text
        )
        assert greeting.relevance == 0.0  # filler by meaning: the reply channel did not depend on its act
