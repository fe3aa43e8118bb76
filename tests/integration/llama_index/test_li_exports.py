"""The public namespace of llama_index_sgmem is pinned, and a missing extra names itself."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import llama_index_sgmem
import sgmem

pytestmark = pytest.mark.integration

LLAMA_INDEX_SGMEM_ALL = [
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "SGMemChatStore",
    "SGMemMemory",
    "SGMemMemoryBlock",
    "SGMemRetriever",
    "SGMemToolSpec",
]


def test_all_is_pinned() -> None:
    assert sorted(llama_index_sgmem.__all__) == sorted(LLAMA_INDEX_SGMEM_ALL)


def test_star_import_gives_exactly_all() -> None:
    ns: dict[str, object] = {}
    exec("from llama_index_sgmem import *", ns)
    assert {k for k in ns if k != "__builtins__"} == set(LLAMA_INDEX_SGMEM_ALL)


def test_py_typed_is_shipped() -> None:
    assert (Path(llama_index_sgmem.__file__).parent / "py.typed").is_file()


def test_missing_llama_index_raises_import_error_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "llama_index_sgmem" or name.startswith("llama_index_sgmem."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "llama_index.core", None)  # as if llama-index-core were not installed
    with pytest.raises(ImportError, match=r"pip install 'sgmem\[llama-index\]'") as info:
        importlib.import_module("llama_index_sgmem")
    assert isinstance(info.value, sgmem.DependencyError)
