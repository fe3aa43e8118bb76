"""Offline keyword extraction (ALGORITHMS §3.7) and PyramidConfig validation."""

from __future__ import annotations

import dataclasses

import pytest

import sgmem
from sgmem.pyramid import PyramidConfig, candidates, keyword_key
from sgmem.pyramid.keywords import clean_llm_keywords, turn_keywords


def test_candidates_are_lemmas_without_stopwords_or_chat_fillers() -> None:
    got = candidates("Wow, I went camping with my kids and we painted pictures!")
    assert got == ["camp", "kid", "paint", "picture"]


def test_names_numbers_months_and_possessives_are_kept() -> None:
    got = candidates("Caroline's trip to Sweden on 7 May 2023 cost 450 dollars.")
    assert {"caroline", "sweden", "7", "may", "2023", "450", "trip", "dollar"} <= set(got)
    assert "may" not in candidates("you may come")  # the modal verb is not a month


def test_hyphenated_words_are_split_and_lookup_forms_are_stable() -> None:
    assert candidates("a nature-inspired painting") == ["nature", "inspire", "paint"]
    assert keyword_key("Pottery Classes") == "pottery class"
    assert keyword_key("self-care") == "self care"
    assert keyword_key("gone") == "go"


def test_turn_keywords_keep_the_top_k_by_tfidf_and_add_the_speaker() -> None:
    texts = ["Paris pottery classes and pottery", "Paris trip", "Paris museum"]
    got = turn_keywords(texts, ["Melanie", None, "Bob"], 2, lambda w: 0, 0, speaker_keyword=True)
    # "pottery" (tf 2) outranks "class"; "paris" is in every turn, so it ranks below both
    assert got[0] == ["pottery", "class", "melanie"]
    assert got[1] == ["trip", "paris"]
    assert got[2] == ["museum", "paris", "bob"]
    # a word common in the scope before this add ranks below one that is new
    got = turn_keywords(["museum trip"], [None], 1, lambda w: 50 if w == "museum" else 0, 100, False)
    assert got == [["trip"]]


@pytest.mark.parametrize("raw", [None, "pottery", {"k": "v"}, ["ok", 3], [["nested"]]])
def test_llm_keywords_of_the_wrong_shape_are_rejected(raw: object) -> None:
    assert clean_llm_keywords(raw, 8) is None  # type: ignore[arg-type]


def test_llm_keywords_are_normalised_deduplicated_and_capped() -> None:
    assert clean_llm_keywords(["Pottery classes", "pottery class", "the", "Sweden", "x"], 2) == [
        "pottery class",
        "sweden",
    ]


def test_defaults_follow_the_paper_where_it_speaks() -> None:
    cfg = sgmem.Config().pyramid
    assert (cfg.depth, cfg.rounds) == (4, 4)
    assert isinstance(cfg, PyramidConfig)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.depth = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("depth", 0, "depth"),
        ("rounds", 0, "rounds"),
        ("rounds", -1, "rounds"),
        ("depth", 2.5, "depth"),
        ("query_keywords", 0, "query_keywords"),
        ("query_keywords", 40, "query_keywords"),
        ("unit", "round", "unit"),
        ("match_cosine", 1.5, "match_cosine"),
        ("token_budget", 0, "token_budget"),
        ("speaker_keyword", "yes", "speaker_keyword"),
    ],
)
def test_invalid_settings_raise_a_config_error_naming_them(field: str, value: object, needle: str) -> None:
    with pytest.raises(sgmem.ConfigError, match=needle) as info:
        PyramidConfig(**{field: value})  # type: ignore[arg-type]
    assert repr(value) in str(info.value)


def test_zero_rounds_or_depth_says_what_to_use_instead() -> None:
    with pytest.raises(sgmem.ConfigError, match="mode='vector'"):
        PyramidConfig(rounds=0)
    with pytest.raises(sgmem.ConfigError, match="mode='vector'"):
        PyramidConfig(depth=0)


def test_config_rejects_a_pyramid_of_the_wrong_type() -> None:
    with pytest.raises(sgmem.ConfigError, match="pyramid"):
        sgmem.Config(pyramid={"depth": 2})  # type: ignore[arg-type]


def test_pyramid_is_a_search_mode() -> None:
    assert "pyramid" in sgmem.MODES
    assert sgmem.Config(default_mode="pyramid").default_mode == "pyramid"
