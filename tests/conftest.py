"""Shared fixtures: one real MiniLM embedder per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import sgmem  # noqa: E402
from sgmem.embed import default_embedder  # noqa: E402


@pytest.fixture(scope="session")
def embedder() -> sgmem.Embedder:
    """The default all-MiniLM-L6-v2 embedder, loaded once for the whole run."""
    return default_embedder()


#: The tests of other behaviour (filters, k, budgets, modes) search for things a store may not hold; the
#: relevance cutoff (tested with its default in test_relevance.py and the adapters' first-hour tests) is off here.
NO_CUTOFF = sgmem.Config(min_relevance=0.0)


@pytest.fixture
def memory(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    """A fresh in-memory store, without the relevance cutoff (see ``default_memory``)."""
    with sgmem.Memory(embedder=embedder, config=NO_CUTOFF) as mem:
        yield mem


@pytest.fixture
def default_memory(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    """A fresh in-memory store with the default configuration (relevance cutoff on)."""
    with sgmem.Memory(embedder=embedder) as mem:
        yield mem


@pytest.fixture
def store_path(tmp_path):  # type: ignore[no-untyped-def]
    """A directory for a durable store."""
    return tmp_path / "store"
