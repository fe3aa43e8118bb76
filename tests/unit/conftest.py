"""Fixtures for the core unit tests (data and fakes live in ``helpers.py``)."""

from __future__ import annotations

import pytest

import sgmem

from .helpers import add_sample


@pytest.fixture
def sample_default(default_memory: sgmem.Memory) -> sgmem.Memory:
    """Both sample threads in scope ``alice`` of a store with the default configuration (relevance cutoff on)."""
    add_sample(default_memory)
    return default_memory


@pytest.fixture
def sample_memory(memory: sgmem.Memory) -> sgmem.Memory:
    """The in-memory ``memory`` fixture holding both sample threads in scope ``alice``."""
    add_sample(memory)
    return memory
