"""Fixtures for the reliability tests, and a summary of the figures they measured.

Tests record what they measured (kill points survived, writers × adds,
hypothesis examples per entry point, RSS samples) with :func:`record_figure`;
the figures are printed at the end of the run for the closing report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sgmem

from .helpers import FastEmbedder

FIGURES: dict[str, Any] = {}


def record_figure(name: str, value: Any) -> None:
    """Keep a measured figure for the end-of-run summary."""
    FIGURES[name] = value


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    terminalreporter.section("sgmem reliability figures")
    for name in sorted(FIGURES):
        terminalreporter.write_line(f"{name}: {FIGURES[name]}")


@pytest.fixture(scope="session")
def fast_embedder() -> FastEmbedder:
    """The hashed bag-of-words test embedder (no model load)."""
    return FastEmbedder()


@pytest.fixture
def fast_memory(fast_embedder: FastEmbedder) -> Iterator[sgmem.Memory]:
    """An in-memory store with the fast embedder."""
    with sgmem.Memory(embedder=fast_embedder) as mem:
        yield mem


@pytest.fixture
def durable(fast_embedder: FastEmbedder, tmp_path: Path) -> Iterator[sgmem.Memory]:
    """A durable store (``tmp_path / 'store'``) with the fast embedder."""
    with sgmem.Memory(tmp_path / "store", embedder=fast_embedder) as mem:
        yield mem
