"""LangChain adapters for sgmem: one-line memory for every way a LangChain 1.x agent gets it.

- :class:`SGMemChatMessageHistory` — chat history (``RunnableWithMessageHistory``)
- :class:`SGMemRetriever` — a retriever over a scope's memories
- :class:`SGMemMemory` — memory for legacy chains (``langchain_classic``)
- :class:`SGMemStore` — a LangGraph ``BaseStore``
- :class:`SGMemMiddleware` — agent middleware for ``create_agent``
- :func:`create_memory_tools` — tools an agent calls itself: remember, recall, context, forget, list_threads
- :class:`LangChainLLM`, :class:`LangChainEmbedder`, :class:`SGMemEmbeddings` — model wrappers

Install with ``pip install 'sgmem[langchain]'``.
"""

from __future__ import annotations

import importlib

from sgmem.errors import DependencyError

for _module in ("langchain_core", "langgraph.store.base", "langchain.agents.middleware", "langchain_classic"):
    try:
        importlib.import_module(_module)
    except ImportError as _exc:
        raise DependencyError(
            f"langchain_sgmem needs {_module.split('.')[0].replace('_', '-')}, which is not installed "
            f"({_exc}). Install the LangChain extra: pip install 'sgmem[langchain]'"
        ) from _exc
del _module

from .chat_history import SGMemChatMessageHistory  # noqa: E402
from .memory import SGMemMemory  # noqa: E402
from .middleware import SGMemMiddleware  # noqa: E402
from .retrievers import SGMemRetriever  # noqa: E402
from .store import SGMemStore  # noqa: E402
from .tools import create_memory_tools  # noqa: E402
from .wrappers import LangChainEmbedder, LangChainLLM, SGMemEmbeddings  # noqa: E402

__all__ = [
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
