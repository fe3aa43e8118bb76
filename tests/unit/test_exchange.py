"""A reply read with the turn it answers, at the defaults, on a user's own small chat.

What a new user meets first: ten turns with an assistant, then a question. An
answer inherits its question's topic however short it is ("like 2-3 times a
week"); a reply that answers nothing ("I'm not sure.") inherits nothing; a
stored question never outranks its own answer; a word shared by accident ("work"
in "it can work for her"), a shared stem ("manageable" for "manager") or the
speaker's own name lifts nothing; and the cut does not depend on ``k``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import sgmem
from sgmem.text import count_tokens

DAY = "2026-11-01T10:00:00Z"
LATER = "2026-11-20T09:00:00Z"

#: a user's first chat with an assistant (the user is named, as the LangChain middleware stores him)
MARCO = [
    ("user", "Hi! I'm Marco."),
    ("assistant", "Hi Marco! How can I help you today?"),
    ("user", "I started a new job at Fincantieri in Trieste last month."),
    ("assistant", "Congratulations! How is it going so far?"),
    ("user", "Busy. But it's manageable."),
    ("assistant", "Glad to hear it. Who do you report to?"),
    ("user", "My manager is called Giulia Rossi, she is great."),
    ("assistant", "That's a great start."),
    ("user", "My sister is visiting next week, she loves Japanese food but she is vegetarian."),
    ("assistant", "Then conveyor-belt sushi can work for her: she can pick the vegetable plates."),
    ("user", "Good tip."),
    ("user", "I'm allergic to shellfish, so I have to be careful at restaurants."),
    ("assistant", "Good to know. For your trip, how long will you stay in Japan?"),
    ("user", "Two weeks."),
]


def _chat(turns: list[tuple[str, str]], name: str | None = None) -> list[dict[str, str]]:
    return [{"role": r, "content": c, **({"name": name} if name and r == "user" else {})} for r, c in turns]


@pytest.fixture
def marco(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(_chat(MARCO, "Marco"), scope="marco", thread="first-chat", at=DAY)
        yield mem


def _texts(hits: list[sgmem.Hit]) -> list[str]:
    return [h.text for h in hits]


def test_where_do_i_work_ranks_the_new_job_first_not_a_word_shared_by_accident(marco: sgmem.Memory) -> None:
    ranked = marco.search("Where do I work?", scope="marco", now=LATER, min_score=0)
    assert "Fincantieri" in ranked[0].text, _texts(ranked)
    conveyor = next(h for h in ranked if h.text.startswith("Then conveyor-belt sushi"))
    assert conveyor.relevance < ranked[0].relevance, "'work' in 'it can work for her' is not the question's topic"
    # at the defaults the job comes first or nothing does (MiniLM puts "work" and "job" at cosine 0.32, and
    # the default cutoff weighs that); it never depends on k
    for k in (1, 3, 10):
        hits = marco.search("Where do I work?", scope="marco", now=LATER, k=k)
        assert not hits or "Fincantieri" in hits[0].text, (k, _texts(hits))


@pytest.mark.parametrize(
    "query",
    ["Where do I work?", "Who is my manager?", "What is Marco allergic to?", "How long is my trip?", "What is my job?"],
)
def test_the_hits_of_k_3_are_the_first_three_of_k_10(marco: sgmem.Memory, query: str) -> None:
    three = marco.search(query, scope="marco", k=3, now=LATER)
    ten = marco.search(query, scope="marco", k=10, now=LATER)
    assert [h.message_ids for h in three] == [h.message_ids for h in ten[:3]]
    assert [h.relevance for h in ten] == sorted((h.relevance for h in ten), reverse=True), "one measure orders and cuts"


def test_a_shared_stem_is_not_content(marco: sgmem.Memory) -> None:
    hits = marco.search("Who is my manager?", scope="marco", now=LATER)
    assert "Giulia Rossi" in hits[0].text
    busy = [h for h in hits if h.text.startswith("Busy.")]
    assert not busy or not busy[0].why.get("matched"), "'manageable' shares only a stem with 'manager'"
    assert not busy or busy[0].why["channels"]["lexical"] == 0.0


def test_the_speakers_own_name_lifts_none_of_his_turns(marco: sgmem.Memory) -> None:
    hits = marco.search("What is Marco allergic to?", scope="marco", now=LATER)
    assert "shellfish" in hits[0].text
    assert not {"Two weeks.", "Good tip."} & set(_texts(hits)), _texts(hits)


def test_a_short_answer_to_the_assistants_question_is_found_by_that_question(marco: sgmem.Memory) -> None:
    hits = marco.search("How long is my trip to Japan?", scope="marco", now=LATER)
    assert hits[0].text == "Two weeks.", _texts(hits)
    assert all(h.relevance < hits[0].relevance for h in hits[1:]), "the assistant's question is not the answer"


def test_a_non_answer_does_not_inherit_its_question(default_memory: sgmem.Memory) -> None:
    default_memory.add(
        [
            {"role": "user", "content": "What is my cat called?"},
            {"role": "assistant", "content": "I'm not sure."},
            {"role": "user", "content": "Ok, never mind."},
        ],
        scope="u",
        thread="earlier",
        at=DAY,
    )
    default_memory.add(
        [
            {"role": "user", "content": "I adopted a cat named Miso."},
            {"role": "assistant", "content": "What a lovely name!"},
        ],
        scope="u",
        thread="later",
        at=LATER,
    )
    hits = default_memory.search("What is my cat called?", scope="u")
    assert hits[0].text == "I adopted a cat named Miso.", _texts(hits)
    unsure = [h for h in hits if h.text == "I'm not sure."]
    assert not unsure or unsure[0].relevance < hits[0].relevance / 2


@pytest.mark.parametrize("reply", [None, "Let me check."])
def test_a_stored_question_never_outranks_its_own_answer(default_memory: sgmem.Memory, reply: str | None) -> None:
    default_memory.add(
        [
            {"role": "user", "content": "I adopted a cat named Miso. I work as a nurse in Lyon."},
            {"role": "assistant", "content": "Nice!"},
        ],
        scope="u",
        thread="monday",
        at=DAY,
    )
    asked = [{"role": "user", "content": "Where do I work?"}]
    if reply is not None:  # a reply that answers nothing, in a wording no list holds
        asked.append({"role": "assistant", "content": reply})
    default_memory.add(asked, scope="u", thread="friday", at=LATER)
    hits = default_memory.search("Where do I work?", scope="u")
    assert hits[0].text.startswith("I adopted a cat named Miso."), _texts(hits)
    assert all(h.relevance < hits[0].relevance for h in hits[1:]), [(h.text, h.relevance) for h in hits]


def test_a_reply_between_two_friends_inherits_the_question_before_it(default_memory: sgmem.Memory) -> None:
    """Two people chatting (as LoCoMo stores them): the short reply carries the answer, its neighbours the topic."""
    turns = [
        ("Jon", "We tried the new sushi place downtown yesterday, it was packed."),
        ("Gina", "Oh nice, I love sushi, it's my favourite food."),
        ("Jon", "How often do you eat sushi?"),
        ("Gina", "like 2-3 times a week"),
        ("Jon", "Wow, that's a lot of sushi! Do you ever get bored of sushi?"),
        ("Gina", "Never, sushi is my comfort food after a long shift."),
        ("Jon", "Fair enough. I prefer ramen myself."),
    ]
    default_memory.add(
        [{"role": "user" if s == "Jon" else "assistant", "name": s, "content": c} for s, c in turns],
        scope="friends",
        thread="s1",
        at=DAY,
    )
    hits = default_memory.search("How often does Gina eat sushi?", scope="friends")
    assert hits[0].text == "like 2-3 times a week", _texts(hits)


def test_a_long_pasted_report_is_recalled_by_the_window_around_what_matched(default_memory: sgmem.Memory) -> None:
    sections = [
        f"Section {i}: Regional overview\nSales in region {i} were flat this quarter and staffing was unchanged."
        for i in range(1, 480)
    ]
    sections[311] = (
        "Section 312: Facilities\nThe new warehouse in Tilburg opens on 3 March 2027 and is leased from "
        "Vandermolen Logistics for fourteen years."
    )
    report = "\n\n".join(sections)
    assert len(report) > 45_000
    default_memory.add(
        [
            {"role": "user", "content": "Please keep this report for me:\n\n" + report},
            {"role": "assistant", "content": "Saved. Anything you want me to look at first?"},
        ],
        scope="u",
        thread="t",
        at=DAY,
    )
    block = default_memory.context("When does the Tilburg warehouse open?", scope="u", budget_tokens=300)
    assert "3 March 2027" in block
    assert count_tokens(block) <= 300


def test_a_counter_question_inherits_nothing_from_the_question_it_follows(default_memory: sgmem.Memory) -> None:
    """A reply that asks back ("Shall we look at the weather instead?") answers nothing: it is not read as the
    exchange, so it does not rank with its question's topic above the fact."""
    default_memory.add(
        [{"role": "user", "content": "I work as a physiotherapist at the Royal Infirmary in Glasgow."}],
        scope="u",
        thread="a",
        at=DAY,
    )
    default_memory.add(
        [
            {"role": "user", "content": "Where do I work?"},
            {"role": "assistant", "content": "Shall we look at the weather for Saturday instead?"},
        ],
        scope="u",
        thread="b",
        at=LATER,
    )
    hits = default_memory.search("Where do I work?", scope="u", k=10, min_score=0)
    texts = _texts(hits)
    deflect = hits[texts.index("Shall we look at the weather for Saturday instead?")]
    assert "answers" not in deflect.why, deflect.why
    assert texts.index("I work as a physiotherapist at the Royal Infirmary in Glasgow.") < texts.index(deflect.text)
