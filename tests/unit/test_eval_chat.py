"""The chat conditions of the LoCoMo evaluation (sgmem.eval.chat): echo and answered beside clean."""

from __future__ import annotations

import pytest

import sgmem
from sgmem.eval.chat import ACTS_OFF, CHAT_GRID, ECHO_REPLY, chat_conversation, evaluate_chat, render_chat, rrf

from .tiny_locomo import CONVS


def test_the_echo_conditions_store_each_question_asked_before() -> None:
    conv = CONVS[0]
    clean, none = chat_conversation(conv, "clean")
    assert clean is conv and none == {}
    echo, none = chat_conversation(conv, "echo")
    assert echo.sessions[0] == conv.sessions[0] and len(echo.sessions) == 1 + len(conv.questions)
    assert none == {}
    for i, (thread, at, msgs) in enumerate(echo.sessions[1:]):
        assert thread == f"echo-{i}" and at > conv.sessions[-1][1]
        assert [m["content"] for m in msgs] == [conv.questions[i].question, ECHO_REPLY]
    answered, replies = chat_conversation(conv, "answered")
    assert [s[2][1]["content"] for s in answered.sessions[1:]] == [q.answer for q in conv.questions]
    assert replies == {i: f"E{i}:a" for i in range(len(conv.questions))}
    with pytest.raises(ValueError, match="condition"):
        chat_conversation(conv, "noisy")


def test_reciprocal_rank_fusion() -> None:
    # b: 1/61 + 1/62; a: 1/61 + 1/63; c: 1/63
    assert rrf([["a", "b", "c"], ["b", "c", "a"]]) == ["b", "a", "c"]
    assert rrf([["x", "x", "y"]]) == ["x", "y"]  # a repeated item counts once, at its first rank


@pytest.fixture(scope="module")
def result(embedder: sgmem.Embedder):  # type: ignore[no-untyped-def]
    return evaluate_chat(CONVS, embedder, settings=CHAT_GRID[:2], k=1)


def test_an_earlier_question_does_not_push_its_answer_out(result) -> None:  # type: ignore[no-untyped-def]
    defaults, off = "defaults", ", ".join(f"{k}={v}" for k, v in ACTS_OFF.items())
    # BM25 finds the stored question first: its words are the query's
    assert result.pooled("echo", "BM25 turns") < result.pooled("clean", "BM25 turns")
    # sgmem with its dialogue acts keeps the answer first; with them off it loses it to the echoes
    assert result.pooled("echo", defaults) >= result.pooled("clean", defaults) - 20.0
    assert result.pooled("echo", defaults) > result.pooled("echo", off)
    # the earlier answered exchange is evidence: its reply counts as finding the answer
    assert result.pooled("answered", defaults) >= result.pooled("echo", defaults)
    assert result.filler_why and all(bad == 0 for bad, _ in result.filler_why.values())
    assert set(result.chosen) == {"a", "b"}


def test_the_report_names_every_condition_and_baseline(result) -> None:  # type: ignore[no-untyped-def]
    text = render_chat(result)
    for needle in ("| clean |", "| echo |", "| answered |", "RRF(BM25, dense)", "echo ÷ clean", "filler"):
        assert needle in text
