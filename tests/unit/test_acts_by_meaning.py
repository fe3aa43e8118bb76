"""Dialogue acts read by meaning (sgmem.text.acts.ActClassifier, the default for a real embedder).

A chat holds the assistant's non-answers in wordings nobody listed, stored
questions and thanks; none of them may bury the fact that answers a question.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

import sgmem
from sgmem.embed import SentenceTransformerEmbedder
from sgmem.text.acts import labelled_acts

DAY = "2024-03-01T10:00:00Z"
#: the acts read by the classifier (``Config.acts="auto"``: MiniLM has a shipped fit); the assistant's role weight
#: off, so that what keeps a non-answer under the fact here is its act alone
BY_MEANING = sgmem.Config(acts="auto", hybrid=sgmem.HybridConfig(assistant_weight=1.0))
LATER = "2024-04-01T10:00:00Z"

FACT = "I work as a physiotherapist at the Royal Infirmary in Glasgow."
#: assistant non-answers written for this test: in no word list and not in the labelled act set
NON_ANSWERS = [
    "Honestly, your occupation is something I have no details on.",
    "I can't seem to find where you work in anything we've discussed.",
    "You haven't filled me in on your employer yet.",
    "Sadly, I lack any knowledge of your workplace.",
    "No recollection of your job on my side, I'm afraid.",
]


def test_the_shipped_fit_is_the_one_its_recipe_makes() -> None:
    """The weights shipped for the default embedder match the labelled set and recipe of this code (else run
    ``python -m sgmem.text.acts fit``)."""
    from sgmem.text.acts import recipe, shipped_fit

    doc = json.loads(resources.files("sgmem").joinpath("data/act_model.json").read_text(encoding="utf-8"))
    assert doc["recipe"] == recipe(), "the labelled train split or the fit changed: regenerate the shipped fit"
    assert shipped_fit(SentenceTransformerEmbedder()) is not None


def test_the_non_answers_of_this_test_are_in_no_labelled_set() -> None:
    known = {t for t, _ in labelled_acts()}
    assert not known & set(NON_ANSWERS)


#: measured: the classifier reads this wording as a statement (probability of a non-answer 0.56 < SURE as said by the
#: assistant), even with 17 non-answers phrased as a failed search among the train sentences
MISSED = "I can't seem to find where you work in anything we've discussed."


def _fact_then_non_answers(mem: sgmem.Memory, non_answers: list[str]) -> None:
    """The fact in one thread, then each non-answer as the assistant's reply in a later thread of its own."""
    mem.add(
        [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Got it."}], scope="u", thread="a", at=DAY
    )
    for i, text in enumerate(non_answers):
        mem.add(
            [{"role": "user", "content": "Let's pick a film for tonight."}, {"role": "assistant", "content": text}],
            scope="u",
            thread=f"b{i}",
            at=LATER,
        )


@pytest.mark.parametrize(
    "non_answer",
    [
        pytest.param(t, marks=pytest.mark.xfail(strict=True, reason="read as a statement")) if t == MISSED else t
        for t in NON_ANSWERS
    ],
)
def test_an_unlisted_non_answer_never_outranks_the_fact(embedder: sgmem.Embedder, non_answer: str) -> None:
    with sgmem.Memory(embedder=embedder, config=BY_MEANING) as mem:
        mem.add(
            [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Got it."}],
            scope="u",
            thread="a",
            at=DAY,
        )
        mem.add(
            [
                {"role": "user", "content": "Let's pick a film for tonight."},
                {"role": "assistant", "content": non_answer},
            ],
            scope="u",
            thread="b",
            at=LATER,
        )
        for query in ("Where do I work?", "What is my job?"):
            ranked = [h.text for h in mem.search(query, scope="u", k=10, min_score=0)]
            assert FACT in ranked and non_answer not in ranked[: ranked.index(FACT)], (query, ranked[:3])
            assert FACT in [h.text for h in mem.search(query, scope="u", k=5)]  # the default cutoff keeps it


def test_four_unlisted_non_answers_in_one_chat_stay_under_the_fact(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=BY_MEANING) as mem:
        _fact_then_non_answers(mem, [t for t in NON_ANSWERS if t != MISSED])
        for query in ("Where do I work?", "What is my job?"):
            ranked = [h.text for h in mem.search(query, scope="u", k=5)]  # the default cutoff
            assert FACT in ranked and not set(NON_ANSWERS) & set(ranked[: ranked.index(FACT)]), (query, ranked)


def test_a_non_answers_words_lift_its_round_mate_no_more_than_itself(embedder: sgmem.Embedder) -> None:
    """The user's "Let's pick a film for tonight." holds no word of the query; the non-answer replying to it holds
    "job", which says only what the assistant does not know (a non-answer's weight, not a statement's)."""
    with sgmem.Memory(embedder=embedder, config=BY_MEANING) as mem:
        _fact_then_non_answers(mem, [t for t in NON_ANSWERS if t != MISSED])
        hits = mem.search("What is my job?", scope="u", k=10, min_score=0)
    assert hits[0].text == FACT, [(h.text, h.why["channels"]["lexical"]) for h in hits]


@pytest.mark.xfail(
    strict=True,
    reason="measured: 'Where do I work?' is a paraphrase of 'What is my job?' (cosine about 0.6, an echo only from "
    "0.8), so it weighs a question's 0.75: sentence score 0.448 against the fact's 0.389; a graded echo is the next "
    "step",
)
def test_a_near_repeat_of_an_old_question_ranks_under_the_fact(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=BY_MEANING) as mem:
        mem.add(
            [{"role": "user", "content": FACT}, {"role": "assistant", "content": "That sounds demanding."}],
            scope="u",
            thread="a",
            at=DAY,
        )
        mem.add(
            [
                {"role": "user", "content": "Where do I work?"},
                {"role": "assistant", "content": "Shall we look at the weather for Saturday instead?"},
            ],
            scope="u",
            thread="b",
            at=LATER,
        )
        ranked = [h.text for h in mem.search("What is my job?", scope="u", k=5, min_score=0)]
    assert ranked.index(FACT) < ranked.index("Where do I work?"), ranked


@pytest.mark.parametrize("query", ["What did I tell you?", "What did I tell you about my allergy?", "Thanks"])
def test_thanks_for_telling_me_is_never_a_hits_why_sentence(embedder: sgmem.Embedder, query: str) -> None:
    with sgmem.Memory(embedder=embedder, config=BY_MEANING) as mem:
        mem.add(
            [
                {"role": "user", "content": "I'm allergic to peanuts."},
                {"role": "assistant", "content": "Thanks for telling me."},
                {"role": "user", "content": "My sister Ana lives in Porto."},
                {"role": "assistant", "content": "Thanks for telling me. Porto is lovely in spring."},
            ],
            scope="u",
            thread="t",
            at=DAY,
        )
        hits = mem.search(query, scope="u", k=10, min_score=0)
    assert hits
    assert all(h.why.get("sentence") != "Thanks for telling me." for h in hits), [
        (h.text, h.why.get("sentence")) for h in hits
    ]
    assert hits[0].text != "Thanks for telling me."


@pytest.mark.parametrize(
    ("split", "earlier", "least"), [("test2", ("train", "test"), 80), ("test3", ("train", "test", "test2"), 200)]
)
def test_the_fresh_held_out_split_is_never_fitted_on_and_holds_what_it_measures(
    split: str, earlier: tuple[str, ...], least: int
) -> None:
    from sgmem.text.acts import NON_ANSWER, STATEMENT, labelled_acts

    fresh = labelled_acts(split)
    seen = {t.strip().lower() for s in earlier for t, _ in labelled_acts(s)}
    assert not [t for t, _ in fresh if t.strip().lower() in seen]
    acts = [a for _, a in fresh]
    assert len(fresh) >= least and acts.count(NON_ANSWER) >= least // 2 and acts.count(STATEMENT) >= least * 3 // 8


def test_with_the_shipped_defaults_all_five_unlisted_non_answers_stay_under_the_fact(embedder: sgmem.Embedder) -> None:
    """What a user gets without any setting: the word rules know none of these wordings; the assistant's role
    (``HybridConfig.assistant_weight``), the lexical channel read by act and a reply that inherits only what it
    says keep the non-answers under the user's own statement."""
    with sgmem.Memory(embedder=embedder) as mem:
        _fact_then_non_answers(mem, NON_ANSWERS)
        for query in ("Where do I work?", "What is my job?"):
            ranked = [h.text for h in mem.search(query, scope="u", k=5)]  # the default cutoff
            assert ranked and ranked[0] == FACT, (query, ranked)
