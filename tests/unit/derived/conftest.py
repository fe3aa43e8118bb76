"""Fixtures for the derived-memory tests."""

from __future__ import annotations

import pytest

from .helpers import BagEmbedder


@pytest.fixture
def bag() -> BagEmbedder:
    """A fast bag-of-words embedder (close vectors for sentences sharing words)."""
    return BagEmbedder()
