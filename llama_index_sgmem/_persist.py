"""Saving and restoring adapters that hold an sgmem store (workflow ``Context``, pickle, ``to_dict``).

An adapter is saved as its settings plus the store's path; restoring opens
that path again, reusing a :class:`sgmem.Memory` this process already has open
on it (one store, one set of caches). An in-memory store has no path and
cannot be rebuilt, so saving an adapter on one fails at once, saying why.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import sgmem

__all__ = ["open_store", "remember", "store_path"]

_OPEN: weakref.WeakValueDictionary[str, sgmem.Memory] = weakref.WeakValueDictionary()


def _key(path: Any) -> str:
    return str(Path(path).expanduser().resolve())


def remember(memory: sgmem.Memory) -> None:
    """Note an open store, so restoring an adapter on its path reuses it."""
    if memory.path is not None:
        _OPEN[_key(memory.path)] = memory


def store_path(memory: sgmem.Memory, owner: str) -> str:
    """The path to save for ``memory``; a clear error for an in-memory store."""
    if memory.path is None:
        raise sgmem.SgmemError(
            f"{owner} uses an in-memory sgmem store (sgmem.Memory() without a path), which cannot be "
            "rebuilt from a saved state, so it cannot be serialised or pickled. Create the store with a "
            "path, e.g. sgmem.Memory('./memory'), to save and restore it."
        )
    return str(memory.path)


def open_store(path: Any, owner: str) -> sgmem.Memory:
    """The store at ``path``: the one already open in this process, else opened now."""
    if not isinstance(path, str) or not path:
        raise sgmem.InvalidInputError(
            f"{owner} data['store_path']",
            path,
            "the path of the sgmem store it was saved with",
            "It was saved by an older version or from an in-memory store; create it again with memory=...",
        )
    found = _OPEN.get(_key(path))
    if found is not None and not found._closed:
        return found
    memory = sgmem.Memory(path)
    remember(memory)
    return memory
