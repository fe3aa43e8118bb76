"""sgmem for LlamaIndex: long-term memory for chat engines and agents in one line.

Quickstart::

    import sgmem
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index_sgmem import SGMemMemory

    mem = sgmem.Memory("./memory")
    memory = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="chat-2")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

=====================  ==================================================
``SGMemMemory``        ``memory=`` of chat engines, ``FunctionAgent`` and
                       ``AgentWorkflow`` runs: recent thread + recall
``SGMemMemoryBlock``   a block of ``llama_index.core.memory.Memory``
``SGMemRetriever``     a ``BaseRetriever`` over a scope's memories
``SGMemChatStore``     a ``BaseChatStore`` on the sgmem store
``SGMemToolSpec``      tools an agent calls itself: remember, recall,
                       context, forget, list_threads (one scope)
``LlamaIndexLLM``      a LlamaIndex LLM as an ``sgmem.LLM``
``LlamaIndexEmbedder`` a LlamaIndex ``BaseEmbedding`` as an ``sgmem.Embedder``
=====================  ==================================================

Needs the ``llama-index`` extra: ``pip install 'sgmem[llama-index]'``.
"""

from __future__ import annotations

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:
    from sgmem.errors import DependencyError

    raise DependencyError(
        f"llama_index_sgmem needs llama-index-core, which is not installed ({exc}). "
        "Install the extra: pip install 'sgmem[llama-index]'"
    ) from exc

from llama_index.core.storage.chat_store.loading import RECOGNIZED_CHAT_STORES as _RECOGNIZED_CHAT_STORES

from .chat_store import SGMemChatStore
from .memory import SGMemMemory
from .memory_block import SGMemMemoryBlock
from .retrievers import SGMemRetriever
from .tools import SGMemToolSpec
from .wrappers import LlamaIndexEmbedder, LlamaIndexLLM

# ChatMemoryBuffer.from_dict finds chat stores by class name in this registry; listing ours there lets a saved
# buffer on an SGMemChatStore be restored (SGMemChatStore.from_dict reopens the store by its path)
_RECOGNIZED_CHAT_STORES.setdefault(SGMemChatStore.class_name(), SGMemChatStore)  # type: ignore[arg-type]  # typed as SimpleChatStore only

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
    "SGMemChatStore",
    "SGMemMemory",
    "SGMemMemoryBlock",
    "SGMemRetriever",
    "SGMemToolSpec",
]
