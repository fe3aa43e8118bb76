"""Fixtures for the core unit tests (data and fakes live in ``helpers.py``)."""

from __future__ import annotations

import pytest

import sgmem

from .helpers import add_sample


@pytest.fixture
def sample_memory(memory: sgmem.Memory) -> sgmem.Memory:
    """The in-memory ``memory`` fixture holding both sample threads in scope ``alice``."""
    add_sample(memory)
    return memory
