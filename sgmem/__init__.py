"""sgmem: long-term memory for LLM agents — sentence-graph retrieval, no LLM needed.

Quickstart::

    import sgmem

    with sgmem.Memory("./memory") as mem:
        mem.add([{"role": "user", "content": "I adopted a cat named Miso."}],
                scope="alice", thread="chat-1")
        print(mem.context("What is my cat called?", scope="alice"))
"""

from __future__ import annotations

import logging

from ._version import __version__
from .config import (
    MODES,
    SGMEM_PAPER_LOCOMO,
    SGMEM_PAPER_LONGMEMEVAL,
    SGRM_PAPER,
    Config,
    GraphConfig,
    HybridConfig,
    Limits,
    PyramidConfig,
    SGRMConfig,
)
from .derived.config import DerivedConfig
from .embed import Embedder, SentenceTransformerEmbedder
from .entities.config import EntityConfig
from .errors import (
    ConfigError,
    CorruptStoreError,
    DependencyError,
    EmbedderMismatchError,
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
    SchemaVersionError,
    SgmemError,
    StoreBusyError,
    StoreError,
)
from .gate.config import GateConfig
from .llm import LLM
from .memory import Memory
from .types import (
    AddResult,
    DeleteReceipt,
    Hit,
    MemoryVersion,
    Message,
    MessageVersion,
    RecallTrace,
    ScopeStats,
    SentenceLink,
    Stats,
)

__all__ = [
    "LLM",
    "MODES",
    "SGMEM_PAPER_LOCOMO",
    "SGMEM_PAPER_LONGMEMEVAL",
    "SGRM_PAPER",
    "SGRMConfig",
    "EntityConfig",
    "AddResult",
    "Config",
    "ConfigError",
    "CorruptStoreError",
    "DeleteReceipt",
    "DerivedConfig",
    "DependencyError",
    "Embedder",
    "EmbedderMismatchError",
    "GateConfig",
    "GraphConfig",
    "Hit",
    "HybridConfig",
    "InvalidInputError",
    "LimitExceededError",
    "Limits",
    "Memory",
    "MemoryVersion",
    "MessageVersion",
    "Message",
    "NotFoundError",
    "PyramidConfig",
    "RecallTrace",
    "SchemaVersionError",
    "ScopeStats",
    "SentenceLink",
    "SentenceTransformerEmbedder",
    "SgmemError",
    "Stats",
    "StoreBusyError",
    "StoreError",
    "__version__",
]

# a library logs and the application decides where it goes: nothing is printed until it configures logging
logging.getLogger(__name__).addHandler(logging.NullHandler())
