"""Configuration objects: frozen, validated, presets never mutated."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import sgmem
from sgmem import Config, ConfigError, GraphConfig, HybridConfig, Limits


def test_defaults_are_valid_and_hybrid_is_the_default_mode() -> None:
    cfg = Config()
    assert cfg.default_mode == "hybrid"
    assert isinstance(cfg.graph, GraphConfig)
    assert isinstance(cfg.hybrid, HybridConfig)
    assert isinstance(cfg.limits, Limits)


@pytest.mark.parametrize("obj", [Config(), GraphConfig(), HybridConfig(), Limits()])
def test_config_objects_are_frozen(obj: Any) -> None:
    field = dataclasses.fields(obj)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, field, getattr(obj, field))


def test_with_returns_a_copy_and_leaves_the_original() -> None:
    base = Config()
    changed = base.with_(default_mode="bm25")
    assert changed.default_mode == "bm25"
    assert base.default_mode == "hybrid"


def test_paper_presets_follow_the_published_rows() -> None:
    # ALGORITHMS §1.4: LoCoMo k=1, h=1, n=15, γ=1.2 on sessions; LongMemEval k=3, h=1, n=15, γ=1.0 on turns
    loc = sgmem.SGMEM_PAPER_LOCOMO
    assert (loc.knn_k, loc.hops, loc.seeds, loc.gamma, loc.chunk_level) == (1, 1, 15, 1.2, "session")
    lme = sgmem.SGMEM_PAPER_LONGMEMEVAL
    assert (lme.knn_k, lme.hops, lme.seeds, lme.gamma, lme.chunk_level) == (3, 1, 15, 1.0, "turn")


def test_using_a_preset_does_not_mutate_it() -> None:
    before = dataclasses.asdict(sgmem.SGMEM_PAPER_LOCOMO)
    cfg = Config(graph=dataclasses.replace(sgmem.SGMEM_PAPER_LOCOMO, seeds=3))
    assert cfg.graph.seeds == 3
    assert dataclasses.asdict(sgmem.SGMEM_PAPER_LOCOMO) == before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"knn_k": -1},
        {"knn_k": 1.5},
        {"knn_k": "3"},
        {"knn_min_cosine": 1.5},
        {"knn_min_cosine": -2},
        {"knn_min_cosine": None},
        {"hops": -1},
        {"hops": 6},
        {"hops": True},
        {"seeds": 0},
        {"seeds": "15"},
        {"gamma": -0.1},
        {"gamma": 2.5},
        {"gamma": "high"},
        {"gamma": float("nan")},
        {"chunk_level": "page"},
        {"chunk_score": "median"},
        {"rest_weight": -1.0},
        {"knn_background": "yes"},
        {"knn_background": 1},
        {"knn_early": "no"},
        {"knn_early_threads": 0},
        {"knn_early_threads": 2.0},
    ],
)
def test_invalid_graph_config_raises_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        GraphConfig(**kwargs)
    field = next(iter(kwargs))
    assert f"GraphConfig.{field}" in str(err.value)
    assert "received" in str(err.value) and "expected" in str(err.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"w_sentence": -0.1},
        {"w_lexical": "0.9"},
        {"w_graph": None},
        {"length_prior": float("nan")},
        {"w_turn": True},
        {"rest_weight": -0.5},
    ],
)
def test_invalid_hybrid_config_raises_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=f"HybridConfig.{next(iter(kwargs))}"):
        HybridConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_message_chars": 0}, {"max_k": -5}, {"max_name_chars": 1.5}, {"max_query_chars": "big"}, {"max_k": True}],
)
def test_invalid_limits_raise_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=f"Limits.{next(iter(kwargs))}"):
        Limits(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"default_mode": "semantic"},
        {"embed_batch_size": 0},
        {"embed_batch_size": 2.5},
        {"embed_batch_size": "64"},
        {"busy_timeout_s": 0},
        {"busy_timeout_s": "30"},
        {"wal_checkpoint_pages": 0},
        {"wal_checkpoint_pages": 8192.0},
        {"wal_checkpoint_background": "yes"},
        {"wal_checkpoint_background": 1},
        {"graph": {"knn_k": 3}},
        {"hybrid": None},
        {"limits": GraphConfig()},
        {"speaker_prefix": "yes"},
    ],
)
def test_invalid_config_raises_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=f"Config.{next(iter(kwargs))}"):
        Config(**kwargs)


def test_config_error_is_a_value_error_for_callers_that_do_not_know_sgmem() -> None:
    with pytest.raises(ValueError):
        GraphConfig(hops=99)


def test_memory_rejects_a_config_that_is_not_a_config(embedder: sgmem.Embedder) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="config"):
        sgmem.Memory(embedder=embedder, config={"default_mode": "bm25"})  # type: ignore[arg-type]
