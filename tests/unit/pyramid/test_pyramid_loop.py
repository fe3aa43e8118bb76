"""The pyramid (ALGORITHMS §3.4) and the reflective loop (§3.5, §3.7) on hand-built indexes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sgmem.pyramid import PyramidConfig, build_pyramid
from sgmem.pyramid.pyramid import units
from sgmem.pyramid.reflect import reflective_search
from sgmem.text.tokens import count_tokens

from .helpers import ScriptedLLM, index_of, reflect_keep_all, rel_of

# rows: 0 {apple, berry, cherry}  1 {apple, berry}  2 {apple}  3 {berry, cherry}  4 {cherry}  5 {durian}
A, B, C, D = "apple", "berry", "cherry", "durian"
TURNS = [[A, B, C], [A, B], [A], [B, C], [C], [D]]
QUERY = "apple berry cherry"


def words(kwi, level):  # type: ignore[no-untyped-def]
    return [(tuple(kwi.words[w] for w in n.keywords), n.rows.tolist()) for n in level.nodes]


def test_levels_run_from_the_most_specific_down_with_exact_intersections() -> None:
    kwi = index_of(TURNS)
    q = [kwi.lookup[w] for w in (A, B, C)]
    levels = build_pyramid(kwi, q, depth=4, allowed=None)
    assert [lv.size for lv in levels] == [3, 2, 1]  # L_top = min(l, n) = 3
    assert words(kwi, levels[0]) == [((A, B, C), [0])]
    # level 2: every pair, largest memory set first, ties in combination order
    assert words(kwi, levels[1]) == [((A, B), [0, 1]), ((B, C), [0, 3]), ((A, C), [0])]
    assert [len(r) for _, r in words(kwi, levels[2])] == [3, 3, 3]


def test_depth_caps_the_top_level_and_empty_nodes_are_dropped() -> None:
    kwi = index_of(TURNS)
    q = [kwi.lookup[w] for w in (A, D)]
    levels = build_pyramid(kwi, q, depth=1, allowed=None)
    assert [lv.size for lv in levels] == [1]
    levels = build_pyramid(kwi, q, depth=4, allowed=None)
    assert levels[0].size == 2 and levels[0].nodes == ()  # {apple, durian} share no memory
    assert list(units(levels, "level"))[0][0] == 1  # an empty level yields no unit


def test_filters_apply_to_every_node() -> None:
    kwi = index_of(TURNS)
    allowed = np.array([False, True, True, True, True, True])
    levels = build_pyramid(kwi, [kwi.lookup[A], kwi.lookup[B]], depth=4, allowed=allowed)
    assert all(0 not in n.rows.tolist() for lv in levels for n in lv.nodes)


def test_node_units_yield_one_combination_at_a_time() -> None:
    kwi = index_of(TURNS)
    levels = build_pyramid(kwi, [kwi.lookup[w] for w in (A, B)], depth=4, allowed=None)
    assert [(size, len(nodes)) for size, nodes in units(levels, "node")] == [(2, 1), (1, 1), (1, 1)]


def run(kwi, query, rel, cfg, **kw):  # type: ignore[no-untyped-def]
    n = len(rel)
    return reflective_search(kwi, query, np.zeros(4, np.float32), rel, np.full(n, 10), np.zeros(n), None, cfg, **kw)


def test_rounds_show_each_memory_once_with_its_path_level_and_round() -> None:
    kwi = index_of(TURNS)
    rel = rel_of([0.1, 0.2, 0.3, 0.4, 0.5, 0.9])
    out = run(kwi, QUERY, rel, PyramidConfig(critical=10, sufficient_cosine=1.0, level_weight=0.0))
    assert out.query_keywords and set(out.query_keywords) == {A, B, C}
    assert out.stop == "exhausted" and out.rounds == 3
    assert out.seen[0].level == 3 and out.seen[0].round == 1 and set(out.seen[0].path) == {A, B, C}
    assert out.seen[1].level == 2 and out.seen[1].round == 2 and set(out.seen[1].path) == {A, B}
    assert out.seen[2].level == 1 and out.seen[2].round == 3
    assert 5 not in out.seen  # "durian" is not a query keyword: no path leads there
    # C is the top-c of C ∪ N_r by cosine (level_weight 0), carried across rounds
    assert out.critical == [4, 3, 2, 1, 0]
    out = run(
        kwi, QUERY, rel, PyramidConfig(critical=2, sufficient_cosine=1.0, level_weight=0.0, sufficient_full=False)
    )
    assert out.critical == [0] and out.stop == "sufficient" and out.rounds == 1  # literal §3.7: stops at once


def test_at_most_r_rounds_are_run() -> None:
    kwi = index_of(TURNS)
    out = run(kwi, QUERY, rel_of([0.1] * 6), PyramidConfig(rounds=1, sufficient_cosine=1.0))
    assert out.rounds == 1 and out.stop == "rounds"
    assert set(out.seen) == {0} and set(out.later) == {1, 2, 3, 4}


def test_the_rule_stops_once_critical_memories_cover_every_keyword() -> None:
    kwi = index_of(TURNS)
    out = run(kwi, QUERY, rel_of([0.1] * 6), PyramidConfig(critical=1, sufficient_cosine=1.0))
    assert out.stop == "sufficient" and out.rounds == 1 and out.critical == [0]
    # with sufficient_full (default) a partly filled C does not stop the loop
    out = run(kwi, QUERY, rel_of([0.1] * 6), PyramidConfig(critical=3, sufficient_cosine=1.0))
    assert out.rounds > 1


def test_a_query_without_vocabulary_words_reports_no_keywords() -> None:
    kwi = index_of(TURNS)
    out = run(kwi, "zebra xylophone", rel_of([0.1] * 6), PyramidConfig())
    assert out.stop == "no-keywords" and out.rounds == 0 and not out.seen and not out.critical


def test_a_vocabulary_of_one_word_is_a_one_node_pyramid() -> None:
    kwi = index_of([["solo"], [], ["solo"]])
    out = run(kwi, "solo solo", rel_of([0.2, 0.9, 0.5]), PyramidConfig())
    assert out.query_keywords == ["solo"] and out.critical == [2, 0] and out.rounds == 1


@pytest.mark.parametrize("budget", [1, 15, 35, 10_000])
def test_the_rule_path_never_reads_more_tokens_than_the_budget(budget: int) -> None:
    kwi = index_of(TURNS)
    out = run(kwi, QUERY, rel_of([0.1] * 6), PyramidConfig(token_budget=budget, sufficient_cosine=1.0))
    assert out.tokens <= budget
    assert sum(14 for _ in out.seen) == out.tokens  # 10 tokens + 4 per memory read
    if budget < 14:
        assert out.stop == "budget" and not out.seen


def llm_run(llm, cfg, rel=None):  # type: ignore[no-untyped-def]
    kwi = index_of(TURNS)
    rel = rel if rel is not None else rel_of([0.1, 0.2, 0.3, 0.4, 0.5, 0.9])
    return run(kwi, QUERY, rel, cfg, llm=llm, texts=lambda rows: [f"Ann: memory {r}" for r in rows])


def test_the_llm_selects_keywords_judges_rounds_and_picks_critical_memories() -> None:
    def reflect(prompt: str) -> str:
        return json.dumps({"answer": "it was berry", "sufficient": "[M2]" in prompt, "critical": ["M2"]})

    llm = ScriptedLLM(select='["berry", "cherry"]', reflect=reflect)
    out = llm_run(llm, PyramidConfig())
    assert out.query_keywords == [B, C] and out.selection == "llm"
    assert out.reflection == "llm" and out.answer == "it was berry"
    assert out.stop == "sufficient"
    assert len(out.critical) == 1
    assert llm.count("select") == 1 and llm.count("reflect") == out.rounds
    assert out.usage.calls == 1 + out.rounds and out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0


def test_critical_memories_are_carried_into_the_next_round_prompt() -> None:
    llm = ScriptedLLM(select='["apple", "berry", "cherry"]', reflect=reflect_keep_all(False))
    out = llm_run(llm, PyramidConfig(sufficient_cosine=1.0))
    prompts = [p for k, p in llm.prompts if k == "reflect"]
    assert len(prompts) == out.rounds >= 2
    # round 2 lists round 1's memory among the critical ones, not among the new ones
    crit2, new2 = prompts[1].split("New memories in this round:")
    assert "[M1]" in crit2 and "[M1]" not in new2


@pytest.mark.parametrize(
    "bad",
    ["not json", '{"answer": "x"}', '["M1"]', '{"sufficient": "yes", "critical": []}', RuntimeError("model down")],
)
def test_malformed_or_failing_llm_output_falls_back_to_the_rule(bad: object) -> None:
    llm = ScriptedLLM(select=bad, reflect=bad)
    out = llm_run(llm, PyramidConfig(sufficient_cosine=1.0))
    assert out.reflection == "rule" and out.selection == "rule"
    assert out.critical and out.seen  # the rule still retrieved
    assert out.usage.malformed + out.usage.errors == out.usage.calls


@pytest.mark.parametrize("budget", [500, 900, 1500, 4000])
def test_llm_prompts_plus_reserve_never_exceed_the_budget(budget: int) -> None:
    llm = ScriptedLLM(select='["apple", "berry", "cherry"]', reflect=reflect_keep_all(False))
    cfg = PyramidConfig(token_budget=budget, completion_reserve=100)
    out = llm_run(llm, cfg)
    sent = sum(count_tokens(p) for _, p in llm.prompts)
    assert sent + cfg.completion_reserve * len(llm.prompts) <= budget
    assert out.tokens <= budget


def test_intersections_of_short_and_long_postings_are_exact() -> None:
    from sgmem.pyramid.pyramid import _intersect

    rng = np.random.default_rng(11)
    for small_n, large_n in [(3, 5_000), (40, 20_000), (200, 400), (0, 100), (5, 0), (1, 1)]:
        large = np.unique(rng.integers(0, 30_000, large_n))
        small = np.unique(
            np.concatenate([rng.choice(large, min(small_n, large.size) // 2), rng.integers(0, 30_000, small_n)])
        )[:small_n]
        np.testing.assert_array_equal(_intersect(small, large), np.intersect1d(small, large, assume_unique=True))
    # past the end of the long list, and before its start
    np.testing.assert_array_equal(_intersect(np.array([0, 7, 99_999]), np.arange(1, 2_000)), [7])
