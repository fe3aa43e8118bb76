"""Deletion of :class:`sgmem.Memory`: ``delete`` and ``scrub``.

A mixin, like :mod:`sgmem.records`: a delete removes rows from the system of
record with everything derived from them (:mod:`sgmem.write` does the
transaction) and then makes sure the deleted text has left the store's files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .types import DeleteReceipt
from .validate import check_name, check_names
from .write import delete_rows

__all__ = ["DeleteMethods"]


class DeleteMethods:
    """``delete`` and ``scrub`` for :class:`sgmem.Memory`."""

    def delete(
        self: Any, *, scope: str, thread: str | None = None, message_ids: Sequence[str] | None = None
    ) -> DeleteReceipt:
        """Delete a scope, a thread or given messages, with everything derived.

        Sentences, similarity and chronological edges, vectors and index caches
        go with the messages. Other scopes are never touched. Generated memory
        goes with the messages it came from: a fact left with no source is
        deleted, a merged fact that lost one source reverts to its last version
        without it (deleted text is purged from its history too), a summary is
        recomputed from what is left of its session (see :mod:`sgmem.derived.reads`).
        A scope left without messages is removed entirely, its name included,
        and deleted text is overwritten in the database file, not just unlinked.

        Returns:
            A receipt counting what was removed (all zero if nothing matched).
        """
        self._check_writable()
        scope = check_name(scope, "scope", self.config.limits)
        if thread is not None:
            thread = check_name(thread, "thread", self.config.limits)
        ids = check_names(message_ids, "message_ids", self.config.limits)
        with self._lock:
            scope_id = self._store.scope_id(scope)
            if scope_id is None:
                return DeleteReceipt()
            counts = delete_rows(self._store, self._derived, self._cache_dir, scope_id, thread, ids, self.config.graph)
            if counts["messages"]:
                self._indexes.pop(scope_id, None)
                self._entities.drop(scope_id)
            scrubbed = self._scrub() if counts["messages"] or self._unscrubbed else True
        return DeleteReceipt(**counts, scrubbed=scrubbed)

    def scrub(self: Any, timeout_s: float | None = None) -> bool:
        """Make sure deleted text has left every file of the store; True once it has.

        :meth:`delete` and :meth:`replace` do this before they return; it can
        only be left undone when another connection (another process) keeps
        reading an older snapshot of the store for longer than
        ``Config.busy_timeout_s`` (``DeleteReceipt.scrubbed`` is then False).
        This waits for such readers up to ``timeout_s`` (default ``busy_timeout_s``).
        """
        self._check_open()
        with self._lock:
            return self._scrub(timeout_s)

    def _scrub(self: Any, timeout_s: float | None = None) -> bool:
        """Checkpoint and empty the WAL, which keeps older copies of deleted pages (see :meth:`SQLiteStore.scrub`)."""
        self._unscrubbed = not self._store.scrub(timeout_s)
        return not self._unscrubbed
