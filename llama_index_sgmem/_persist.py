"""Saving and restoring adapters that hold an sgmem store (workflow ``Context``, pickle, ``to_dict``).

An adapter is saved as its settings plus its store's reference
(:func:`sgmem.saved.reference`: the store's path, or a PostgreSQL store's URL
without its password, and the ``sgmem.Config`` it was opened with); restoring
reopens that store with that configuration, reusing a :class:`sgmem.Memory`
this process already has open on it (one store, one set of caches). An
in-memory store has no reference and cannot be rebuilt, so saving an adapter
on one fails at once, saying why. The rules, secrets included, are the core's
(:mod:`sgmem.saved`).
"""

from __future__ import annotations

from typing import Any

import sgmem
from sgmem import saved

__all__ = ["open_store", "reference", "remember"]


def remember(memory: sgmem.Memory) -> None:
    """Note an open store, so restoring an adapter on it reuses it."""
    saved.remember(memory)


def reference(memory: sgmem.Memory, owner: str) -> dict[str, Any]:
    """What to save for ``memory`` (``store_path`` or ``store_url``, and ``config``); a clear error in memory."""
    return saved.reference(memory, owner)


def open_store(data: dict[str, Any], owner: str) -> sgmem.Memory:
    """The store ``data`` (an adapter's saved dict) names: the one already open in this process, else opened now."""
    ref = {k: data.get(k) for k in ("store_path", "store_url", "config")}
    return saved.reopen(ref, owner)  # type: ignore[no-any-return]
