"""Retrieval: per-scope index, SGMem graph expansion, and the search modes."""

from .index import ScopeIndex
from .search import Ranked, Retriever

__all__ = ["Ranked", "Retriever", "ScopeIndex"]
