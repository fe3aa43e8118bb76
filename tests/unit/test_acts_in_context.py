"""Dialogue acts in their exchange: a reply to a question is an answer whatever its length (sgmem.text.acts).

"12.", "In 2019.", "$300.", "Yes, I am." carry no content word, yet each
answers the question before it. Ranking, ``Hit.relevance`` and
``Memory.context`` read it with that question; a bare "12." or "Thanks!" that
answers nothing stays filler.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import sgmem
from sgmem.text.acts import ACT_NAMES, act_of, acts_of

DAY = "2024-03-01T10:00:00Z"

#: the assistant asks, the user answers in a word or two
CHAT = [
    {"role": "user", "content": "Hi! Can you help me plan my week?"},
    {"role": "assistant", "content": "Sure. How old is your son?"},
    {"role": "user", "content": "12."},
    {"role": "assistant", "content": "When did you move to Denver?"},
    {"role": "user", "content": "In 2019."},
    {"role": "assistant", "content": "How much did the new bike cost?"},
    {"role": "user", "content": "$300."},
    {"role": "assistant", "content": "Are you still working as a teacher?"},
    {"role": "user", "content": "Yes, I am."},
    {"role": "assistant", "content": "Do you have a car?"},
    {"role": "user", "content": "No, I don't."},
    {"role": "assistant", "content": "Is your wife the one who cooks?"},
    {"role": "user", "content": "She is."},
    {"role": "assistant", "content": "Great, thanks! Anything else?"},
    {"role": "user", "content": "Thanks!"},
]
#: a question about the user → (the reply that answers it, the question it answers)
ASKED = {
    "How old is my son?": ("12.", "How old is your son?"),
    "What year did I move to Denver?": ("In 2019.", "When did you move to Denver?"),
    "How much was my bike?": ("$300.", "How much did the new bike cost?"),
    "Am I a teacher?": ("Yes, I am.", "Are you still working as a teacher?"),
    "Do I own a car?": ("No, I don't.", "Do you have a car?"),
    "Who does the cooking at home?": ("She is.", "Is your wife the one who cooks?"),
}


@pytest.fixture(scope="module")
def chat(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(embedder=embedder) as mem:  # the default cutoff
        mem.add(CHAT, scope="u", thread="t", at=DAY)
        yield mem


@pytest.mark.parametrize("query", list(ASKED))
def test_a_short_reply_survives_the_default_cutoff(chat: sgmem.Memory, query: str) -> None:
    answer, _ = ASKED[query]
    hits = {h.text: h for h in chat.search(query, scope="u", k=5)}
    assert answer in hits, f"{answer!r} was cut: {[(t, round(h.relevance, 3)) for t, h in hits.items()]}"
    assert hits[answer].relevance >= chat.min_relevance
    assert hits[answer].why["sentence"] == answer


@pytest.mark.parametrize("query", list(ASKED))
def test_the_context_shows_a_short_reply_beside_its_question(chat: sgmem.Memory, query: str) -> None:
    answer, question = ASKED[query]
    lines = chat.context(query, scope="u", budget_tokens=300).splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith(f"user: {answer}"))
    assert lines[at - 1].endswith(question), lines


def test_a_reply_that_answers_no_question_is_filler(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(
            [
                {"role": "user", "content": "My son turned 12 in May and loves football."},
                {"role": "assistant", "content": "That's lovely."},
                {"role": "user", "content": "Yes."},
            ],
            scope="u",
            thread="t",
            at=DAY,
        )
        hits = mem.search("How old is my son?", scope="u", k=5, min_score=0)
        assert hits[0].text.startswith("My son turned 12")
        assert {h.text: h.relevance for h in hits}["Yes."] == 0.0


def test_thanks_in_reply_to_a_question_is_still_filler(chat: sgmem.Memory) -> None:
    hits = {h.text: h for h in chat.search("Anything else?", scope="u", k=20, min_score=0)}
    assert hits["Thanks!"].relevance == 0.0


@pytest.mark.parametrize(
    ("sentence", "alone", "in_reply"),
    [
        ("12.", "filler", "statement"),
        ("In 2019.", "filler", "statement"),
        ("$300.", "filler", "statement"),
        ("Yes, I am.", "filler", "statement"),
        ("No, I don't.", "filler", "statement"),
        ("She is.", "filler", "statement"),
        ("Thanks!", "filler", "filler"),
        ("Hi!", "filler", "filler"),
        ("😀👍", "filler", "filler"),
        ("I adopted a cat named Miso.", "statement", "statement"),
    ],
)
def test_a_fragment_is_an_answer_only_in_a_reply(sentence: str, alone: str, in_reply: str) -> None:
    assert ACT_NAMES[act_of(sentence)] == alone
    assert ACT_NAMES[act_of(sentence, reply=True)] == in_reply


@pytest.mark.parametrize("run", [" ", ")", " )", "\t\n"])
def test_the_act_rules_take_linear_time_on_long_runs(run: str) -> None:
    # A regex anchored at the end of a long run of whitespace or ")" rescans the run from every start: 20k
    # characters took ~1 s and 200k minutes. Linear rules cost ~10x more for 10x the input; the bound of 40x
    # leaves room for a loaded machine and still fails a quadratic rule (~100x). Timings under 5 ms are
    # noise (allocation, cache), so the small input counts as at least that.
    def cost(n: int) -> float:
        text = "a" + run * (n // len(run)) + "b"
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            acts_of([text, text + "?", text + ")"])
            best = min(best, time.perf_counter() - t0)
        return best

    small, large = cost(20_000), cost(200_000)
    assert large < 40 * max(small, 5e-3), f"20k: {small:.4f} s, 200k: {large:.4f} s"


TURN_MODES = ["hybrid", "graph", "bm25", "pyramid", "sgrm"]


@pytest.mark.parametrize("mode", TURN_MODES)
def test_a_stored_recall_output_never_outranks_the_fact(embedder: sgmem.Embedder, mode: str) -> None:
    # an agent's recall tool returned the fact, and the tool's output was stored with the rest of the turn
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add([{"role": "user", "content": "I work as a nurse in Lyon."}], scope="u", thread="t1", at=DAY)
        mem.add(
            [
                {"role": "user", "content": "Remind me, what do you know?"},
                {"role": "assistant", "content": '[tool call: recall {"query": "user job"}]'},
                {"role": "tool", "name": "recall", "content": "I work as a nurse in Lyon."},
                {"role": "assistant", "content": "You told me a few things."},
            ],
            scope="u",
            thread="t2",
            at="2024-04-01T10:00:00Z",
        )
        for query in ("Where do I work?", "Am I a nurse in Lyon?", "nurse Lyon"):
            hits = mem.search(query, scope="u", k=5, mode=mode, min_score=0)
            assert hits[0].speaker == "user" and hits[0].text == "I work as a nurse in Lyon.", (query, hits)
            tool = [h for h in hits if h.speaker == "recall"]
            assert all(h.relevance < hits[0].relevance for h in tool)


@pytest.mark.parametrize("mode", TURN_MODES[:-1])  # (sgrm returns chunks of several turns)
def test_filler_never_ranks_first_in_any_mode(embedder: sgmem.Embedder, mode: str) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(
            [
                {"role": "user", "content": "Thanks! Great!"},
                {"role": "user", "content": "Great news, I got the job at the bank, thanks to your tips."},
                {"role": "assistant", "content": "Thanks! Great!"},
            ],
            scope="u",
            thread="t",
            at=DAY,
        )
        hits = mem.search("Thanks, great!", scope="u", k=5, mode=mode, min_score=0)
        assert hits and hits[0].text.startswith("Great news"), [h.text for h in hits]
        assert [h.relevance for h in hits if h.text == "Thanks! Great!"] == [0.0] * (len(hits) - 1)
