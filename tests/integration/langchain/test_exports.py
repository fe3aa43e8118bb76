"""The public namespace is pinned, and a missing LangChain install names the pip extra."""

from __future__ import annotations

import importlib
import sys

import pytest

import langchain_sgmem

pytestmark = pytest.mark.integration

EXPECTED = [
    "LangChainEmbedder",
    "LangChainLLM",
    "SGMemChatMessageHistory",
    "SGMemEmbeddings",
    "SGMemMemory",
    "SGMemMiddleware",
    "SGMemRetriever",
    "SGMemStore",
    "create_memory_tools",
]


def test_all_is_pinned() -> None:
    assert langchain_sgmem.__all__ == EXPECTED
    for name in EXPECTED:
        assert getattr(langchain_sgmem, name).__module__.startswith("langchain_sgmem.")


def test_py_typed_is_shipped() -> None:
    from importlib.resources import files

    assert files("langchain_sgmem").joinpath("py.typed").is_file()


@pytest.mark.parametrize(
    ("missing", "package"),
    [
        ("langchain_core", "langchain-core"),
        ("langgraph", "langgraph"),
        ("langchain", "langchain"),
        ("langchain_classic", "langchain-classic"),
    ],
)
def test_import_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch, missing: str, package: str) -> None:
    # forget the adapters and every module of the "uninstalled" package, then block it
    for name in list(sys.modules):
        if name == "langchain_sgmem" or name.startswith("langchain_sgmem."):
            monkeypatch.delitem(sys.modules, name)
        elif name == missing or name.startswith(missing + "."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import missing` raise ImportError
    with pytest.raises(ImportError) as info:
        importlib.import_module("langchain_sgmem")
    message = str(info.value)
    assert "pip install 'sgmem[langchain]'" in message
    assert package in message
