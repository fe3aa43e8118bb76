"""Embedders: the protocol and the default all-MiniLM-L6-v2."""

from .base import Embedder, check_embeddings
from .minilm import (
    DEFAULT_MODEL_NAME,
    MULTILINGUAL_MODEL_NAME,
    SentenceTransformerEmbedder,
    default_embedder,
    multilingual_embedder,
)

__all__ = [
    "DEFAULT_MODEL_NAME",
    "MULTILINGUAL_MODEL_NAME",
    "Embedder",
    "SentenceTransformerEmbedder",
    "check_embeddings",
    "default_embedder",
    "multilingual_embedder",
]
