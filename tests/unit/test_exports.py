"""The public namespace is pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

import importlib
import importlib.metadata

import pytest

import sgmem

SGMEM_ALL = [
    "LLM",
    "MODES",
    "SGMEM_PAPER_LOCOMO",
    "SGMEM_PAPER_LONGMEMEVAL",
    "SGRM_PAPER",
    "SGRMConfig",
    "EntityConfig",
    "AddResult",
    "Config",
    "ConfigError",
    "CorruptStoreError",
    "DeleteReceipt",
    "DerivedConfig",
    "DependencyError",
    "Embedder",
    "EmbedderMismatchError",
    "GateConfig",
    "GraphConfig",
    "Hit",
    "HybridConfig",
    "InvalidInputError",
    "LimitExceededError",
    "Limits",
    "Memory",
    "MemoryVersion",
    "MessageVersion",
    "Message",
    "NotFoundError",
    "PyramidConfig",
    "RecallTrace",
    "SchemaVersionError",
    "ScopeStats",
    "SentenceLink",
    "SentenceTransformerEmbedder",
    "SgmemError",
    "Stats",
    "StoreBusyError",
    "StoreError",
    "__version__",
]

SUBPACKAGES = {
    "sgmem.text": ["analyze", "count_tokens", "split_sentences", "stem_terms", "truncate_to_tokens"],
    "sgmem.embed": [
        "DEFAULT_MODEL_NAME",
        "Embedder",
        "MULTILINGUAL_MODEL_NAME",
        "SentenceTransformerEmbedder",
        "check_embeddings",
        "default_embedder",
        "multilingual_embedder",
    ],
    "sgmem.store": ["DB_FILENAME", "SCHEMA_VERSION", "SQLiteStore"],
    "sgmem.retrieval": ["Ranked", "Retriever", "ScopeIndex"],
    "sgmem.entities": [
        "CommunityPlan",
        "CommunityRow",
        "ENTITY_MIGRATION",
        "ENTITY_TYPES",
        "EntityCache",
        "EntityConfig",
        "EntityIndex",
        "EntityPlan",
        "EntityQuery",
        "EntityTools",
        "Mention",
        "TypeModel",
        "ego_split_communities",
        "find_spans",
        "graph_scores",
        "norm_name",
        "plan_entities",
        "plan_summaries",
        "query_categories",
        "rank_summaries",
        "read_query",
        "type_channel",
    ],
    "sgmem.pyramid": [
        "Found",
        "KeywordIndex",
        "Level",
        "Node",
        "Outcome",
        "PyramidConfig",
        "Usage",
        "build_pyramid",
        "candidates",
        "keyword_key",
        "reflective_search",
    ],
}


def test_sgmem_all_is_pinned() -> None:
    assert sorted(sgmem.__all__) == sorted(SGMEM_ALL)
    assert len(set(sgmem.__all__)) == len(sgmem.__all__), "duplicate names in sgmem.__all__"


@pytest.mark.parametrize("name", SGMEM_ALL)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(sgmem, name) is not None


def test_star_import_gives_exactly_all() -> None:
    ns: dict[str, object] = {}
    exec("from sgmem import *", ns)
    assert {k for k in ns if k != "__builtins__"} == set(sgmem.__all__)


@pytest.mark.parametrize("module", sorted(SUBPACKAGES))
def test_subpackage_all_is_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(SUBPACKAGES[module])
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ lists {name!r} but it does not exist"


def test_version_matches_installed_distribution() -> None:
    assert sgmem.__version__ == importlib.metadata.version("sgmem")


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (sgmem.InvalidInputError, ValueError),
        (sgmem.LimitExceededError, ValueError),
        (sgmem.ConfigError, ValueError),
        (sgmem.NotFoundError, KeyError),
        (sgmem.StoreError, RuntimeError),
        (sgmem.EmbedderMismatchError, RuntimeError),
        (sgmem.SchemaVersionError, RuntimeError),
        (sgmem.CorruptStoreError, RuntimeError),
        (sgmem.StoreBusyError, RuntimeError),
        (sgmem.DependencyError, ImportError),
    ],
)
def test_errors_share_one_root_and_refine_a_builtin(error: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, sgmem.SgmemError)
    assert issubclass(error, builtin)


def test_limit_exceeded_is_an_invalid_input_and_store_errors_are_store_errors() -> None:
    assert issubclass(sgmem.LimitExceededError, sgmem.InvalidInputError)
    for e in (sgmem.EmbedderMismatchError, sgmem.SchemaVersionError, sgmem.CorruptStoreError, sgmem.StoreBusyError):
        assert issubclass(e, sgmem.StoreError)


def test_not_found_error_message_is_not_quoted_like_a_key_error() -> None:
    err = sgmem.NotFoundError("scope 'x' holds no memories")
    assert str(err) == "scope 'x' holds no memories"


def test_modes_are_the_seven_search_modes() -> None:
    assert set(sgmem.MODES) == {"hybrid", "vector", "graph", "bm25", "pyramid", "entity", "sgrm"}
