"""Run LangGraph's own store tests against ``SGMemStore``: a pytest plugin, not a copy of their code.

LangGraph's store tests (``libs/checkpoint/tests/test_store.py`` in the langgraph repository)
build every store with ``InMemoryStore(...)``. With ``--lg-store=sgmem`` this plugin makes that
name, in each test module, an ``SGMemStore`` over a fresh in-RAM :class:`sgmem.Memory`
(``InMemoryStore(index=...)`` → ``SGMemStore(memory, index=...)``; no index → key-value mode);
with ``--lg-store=inmemory`` (the default) the tests run unchanged, as the baseline.

Run from the checkpoint library of a langgraph checkout (needs ``pytest-mock``)::

    cd langgraph/libs/checkpoint
    PYTHONPATH=/path/to/sgmem:/path/to/sgmem/tests/integration/langchain \\
        python -m pytest tests/test_store.py -p lg_store_shim --lg-store=sgmem -q
    PYTHONPATH=... python -m pytest tests/test_store.py -p lg_store_shim --lg-store=inmemory -q

The differences this shows are documented in the ``SGMemStore`` docstring.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--lg-store", choices=("inmemory", "sgmem"), default="inmemory", help="the store LangGraph's tests build"
    )


def _sgmem_store_class() -> type:
    import sgmem
    from langchain_sgmem import SGMemStore
    from sgmem.embed import default_embedder

    class InMemorySGMemStore(SGMemStore):
        """``InMemoryStore``'s constructor over ``SGMemStore`` with a fresh in-RAM Memory per store."""

        def __init__(self, *, index: Any = None) -> None:
            super().__init__(sgmem.Memory(embedder=default_embedder()), index=index)

    return InMemorySGMemStore


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--lg-store") != "sgmem":
        return
    store_class = _sgmem_store_class()
    for module in {item.module for item in items if getattr(item, "module", None) is not None}:  # type: ignore[attr-defined]
        if hasattr(module, "InMemoryStore"):
            module.InMemoryStore = store_class
