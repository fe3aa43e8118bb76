"""Robust parsing of LLM output: malformed answers never fail, they fall back and are counted."""

from __future__ import annotations

import pytest

from sgmem.llm import LLMUsage, complete_json, complete_text, parse_json

from .helpers import ScriptedLLM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["a", "b"]', ["a", "b"]),
        ('```json\n[{"fact": "x"}]\n```', [{"fact": "x"}]),
        ('Sure! Here are the facts:\n["a"]\nHope this helps.', ["a"]),
        ('["a", "b",]', ["a", "b"]),
        ("['a', 'b']", ["a", "b"]),
        ('{"answer": [1, 2]}', {"answer": [1, 2]}),
        ("Facts [none] found: []", []),
    ],
)
def test_parse_json_finds_the_value(text: str, expected: object) -> None:
    assert parse_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json here", "[unclosed", None, 42, "{'a': }"])
def test_parse_json_returns_none_for_garbage(text: object) -> None:
    assert parse_json(text) is None


def test_complete_json_counts_calls_tokens_and_fallbacks() -> None:
    usage = LLMUsage()
    llm = ScriptedLLM({"other": "not json at all"})
    assert complete_json(llm, "hello there", usage, "facts", lambda v: v) is None
    u = usage.tasks["facts"]
    assert (u.calls, u.fallbacks) == (1, 1)
    assert u.prompt_tokens == 2 and u.completion_tokens == 4
    assert u.ms >= 0.0


def test_a_raising_model_is_a_counted_fallback() -> None:
    usage = LLMUsage()
    assert complete_text(ScriptedLLM(raises=True), "x", usage, "merge") is None
    assert complete_json(ScriptedLLM(raises=True), "x", usage, "merge", lambda v: v) is None
    assert usage.calls == 2 and usage.fallbacks == 1


def test_a_validator_rejecting_the_shape_is_a_fallback() -> None:
    usage = LLMUsage()
    llm = ScriptedLLM({"other": '{"not": "a list"}'})
    got = complete_json(llm, "x", usage, "facts", lambda v: v if isinstance(v, list) else None)
    assert got is None and usage.fallbacks == 1


def test_a_truncated_answer_is_not_mistaken_for_an_inner_fragment() -> None:
    assert parse_json('[{"fact": "Caroline went to a support group", "sources": [1]') is None
    assert parse_json('Here: {"a": "text with ] and [ inside"}') == {"a": "text with ] and [ inside"}
