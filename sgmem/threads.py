"""Edits of one thread that read it first: ``insert``, ``edit``, ``set_thread``, ``pop``, ``clear_thread`` of ``Memory``.

A mixin, like :mod:`sgmem.records`. Each call reads the thread, plans the
change against what it read (which messages to delete, which to add) and
then commits it with :func:`sgmem.write.replace_messages`, which checks, inside
the write transaction and under the scope's write lock (SQLite's ``BEGIN
IMMEDIATE``, PostgreSQL's per-scope row lock, taken by every writer of
the scope on every host), that the thread still holds exactly the message
rows that were read (row ids are never reused). If another writer changed
the thread in between, nothing is written and the edit is planned again from
the new state: a compare-and-swap on the thread. So with many hosts on one
store every edit applies to the state it was planned on (a message another
host deleted never comes back; a reader only ever sees a list some writer
set; a message popped by one host is returned to that host only), and the
slow part, embedding the new messages, stays outside the lock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from .errors import InvalidInputError, StoreBusyError
from .types import AddResult, Message
from .validate import check_name, message_fields, normalise_messages
from .write import ThreadChanged, replace_messages

__all__ = ["ThreadMethods"]

#: Plans a thread edit may make before giving up (each lost race means another writer committed meanwhile).
MAX_ATTEMPTS = 64


def _as_list(messages: Any) -> list[Any]:
    if isinstance(messages, (dict, Message)):
        return [messages]
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError("messages", messages, "a list of message dicts or sgmem.Message objects")
    return list(messages)


def _same(stored: Message, new: dict[str, Any]) -> bool:
    """Whether a stored message already is ``new`` (a normalised dict): role, text, speaker, metadata (and id)."""
    return (
        stored.role == new["role"]
        and stored.content == new["content"]
        and stored.name == new["name"]
        and stored.metadata == new["metadata"]
        and (new["id"] is None or new["id"] == stored.id)
    )


def _fields(m: Message) -> dict[str, Any]:
    """A stored message as the dict an add takes (its id, time, session and metadata kept)."""
    return message_fields(m)


def _edit_fields(value: Any, key: Any) -> dict[str, Any]:
    """An edit's new fields: a dict or a :class:`Message` (whose unset fields are left as stored)."""
    if isinstance(value, Message):
        given = {k: v for k, v in _fields(value).items() if v not in (None, {})}
        given.pop("session", None)
        return given
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"edits[{key!r}]", value, "a message dict, e.g. {'content': 'the new text'}")
    unknown = sorted(set(value) - {"role", "content", "name", "id", "at", "session", "metadata"})
    if unknown:
        raise InvalidInputError(f"edits[{key!r}]", unknown, "only role, content, name, id, at, session, metadata")
    return dict(value)


class ThreadMethods:
    """``insert``, ``edit``, ``set_thread``, ``pop`` and ``clear_thread`` for :class:`sgmem.Memory`."""

    def _thread_state(self: Any, scope: str, thread: str) -> tuple[tuple[int, ...], list[Message]]:
        """The thread's message row ids and messages, from one read snapshot."""
        with self._lock, self._store.read():
            sid = self._store.scope_id(scope)
            if sid is None:
                return (), []
            rows = tuple(sorted(self._store.message_rows(sid, thread, None)))
            return rows, self._store.messages(sid, thread, None)

    def _edit_thread(
        self: Any, scope: str, thread: str, plan: Any, replaced: dict[str, tuple[str, Message]] | None = None
    ) -> AddResult | None:
        """Read the thread, ``plan(stored) -> (messages, message_ids)``, commit if the thread did not change.

        A plan that returns ``None`` (nothing to change) ends the call at once: nothing is written.
        ``replaced``, filled by the plan, names the edited messages (see :func:`sgmem.write.replace_messages`).
        """
        for attempt in range(MAX_ATTEMPTS):
            rows, stored = self._thread_state(scope, thread)
            change = plan(stored)
            if change is None:
                return None
            messages, message_ids = change
            try:
                return replace_messages(
                    self, messages, scope, thread, message_ids, None, expect_rows=rows, replaced=replaced
                )
            except ThreadChanged:
                # another writer committed first (it made progress): plan again from its state, after a
                # short random pause so two hosts that keep colliding fall out of step
                time.sleep(random.uniform(0, min(0.05, 0.001 * (attempt + 1))))  # noqa: S311 - jitter, not security
        raise StoreBusyError(
            f"thread {thread!r} of scope {scope!r} changed under {MAX_ATTEMPTS} attempts in a row to edit it "
            "(other writers kept committing to it first); nothing was written by this call. Retry it."
        )

    def insert(
        self: Any,
        messages: Sequence[dict[str, Any] | Message] | dict[str, Any] | Message,
        *,
        scope: str,
        thread: str,
        position: int,
    ) -> AddResult:
        """Insert messages into ``thread`` before ``position``, as ``list.insert`` does, in one transaction.

        ``position`` counts from 0; a negative one counts from the end; one at
        or past the end appends. A thread is kept in insertion order, so the
        messages from ``position`` on are added again after the new ones with
        their ids, times, sessions and metadata (the returned
        :class:`AddResult` lists them too), and new messages without their own
        ``at`` take the time of the message they precede. The thread is read,
        and the change committed only if no other writer (another thread,
        process or host) changed the thread meanwhile; otherwise it is planned
        again from the new state (see :mod:`sgmem.threads`).

        Raises:
            InvalidInputError: bad messages or arguments; nothing changes.
            StoreBusyError: other writers changed the thread at every one of
                many attempts; nothing was written.
        """
        self._check_writable()
        limits = self.config.limits
        scope, thread = check_name(scope, "scope", limits, new=True), check_name(thread, "thread", limits, new=True)
        if isinstance(position, bool) or not isinstance(position, int):
            raise InvalidInputError("position", position, "an int (negative counts from the end)")
        new = _as_list(messages)
        normalise_messages(new, datetime.now(timezone.utc), limits)  # bad input: refused before any read

        def plan(stored: list[Message]) -> tuple[list[Any], list[str]]:
            pos = position if position >= 0 else max(0, len(stored) + position)
            if pos >= len(stored):
                return new, []
            tail = stored[pos:]
            return [*normalise_messages(new, tail[0].at or datetime.now(timezone.utc), limits), *tail], [
                m.id for m in tail if m.id
            ]

        return self._edit_thread(scope, thread, plan)  # type: ignore[return-value]  # its plan never is None

    def edit(
        self: Any,
        edits: Mapping[str, dict[str, Any] | Message],
        *,
        scope: str,
        thread: str,
        append: Sequence[dict[str, Any] | Message] = (),
    ) -> AddResult:
        """Replace messages of ``thread`` by new versions, in place, keeping what they replaced.

        ``edits`` maps a stored message's id to its new version: a message dict
        (or :class:`Message`) whose fields replace the stored ones; what it
        leaves out (the role, speaker, time, session, metadata, the id) stays
        as stored, so ``{"content": "..."}`` changes the text only. Each
        message keeps its place in the thread and its time; the text it had is
        kept as an earlier version (:meth:`versions`), and forgetting the
        message forgets those too. ``append`` adds messages at the end of the
        thread in the same transaction. The thread is read and the change
        committed only if no other writer changed it meanwhile, else planned
        again (see :mod:`sgmem.threads`).

        Returns:
            The write's :class:`AddResult`: the edited messages and the ones after
            them are added again (their ids, times and sessions unchanged).

        Raises:
            InvalidInputError: bad messages or arguments, or an id the thread
                does not hold; nothing changes.
            StoreBusyError: other writers changed the thread at every one of
                many attempts; nothing was written.
        """
        self._check_writable()
        limits = self.config.limits
        scope, thread = check_name(scope, "scope", limits, new=True), check_name(thread, "thread", limits, new=True)
        if not isinstance(edits, Mapping):
            raise InvalidInputError("edits", edits, "a dict of message id -> the new version (a message dict)")
        changes = {check_name(k, "edits", limits): _edit_fields(v, k) for k, v in edits.items()}
        extra = _as_list(append) if append else []
        now = datetime.now(timezone.utc)
        if extra:
            normalise_messages(extra, now, limits)  # bad input: refused before any read
        replaced: dict[str, tuple[str, Message]] = {}

        def plan(stored: list[Message]) -> tuple[list[Any], list[str]]:
            replaced.clear()
            where = {m.id: i for i, m in enumerate(stored)}
            missing = sorted(set(changes) - set(where))
            if missing:
                raise InvalidInputError(
                    "edits", missing[:5], f"ids of messages of thread {thread!r} in scope {scope!r}"
                )
            if not changes:
                return extra, []
            tail = stored[min(where[i] for i in changes) :]
            out: list[Any] = []
            for m in tail:
                if m.id in changes:
                    new = {**_fields(m), **changes[m.id]}
                    replaced[str(new["id"])] = (str(m.id), m)
                    out.append(new)
                else:
                    out.append(m)
            normalise_messages(out, now, limits)
            return [*out, *extra], [str(m.id) for m in tail]

        return self._edit_thread(scope, thread, plan, replaced)  # type: ignore[return-value]  # never None

    def set_thread(
        self: Any,
        messages: Sequence[dict[str, Any] | Message] | dict[str, Any] | Message,
        *,
        scope: str,
        thread: str,
    ) -> AddResult:
        """Make ``thread`` hold exactly ``messages`` (``[]`` empties it), in one transaction.

        Stored messages that already are the head of ``messages`` (same role,
        text, speaker and metadata, and id when one is given) are kept as they
        are, with their ids and times: re-setting a history with new messages
        at the end only adds those. Otherwise the thread is replaced, as
        :meth:`replace` with ``message_ids=None``. Committed only if no other
        writer changed the thread since it was read, else planned again (see
        :mod:`sgmem.threads`), so concurrent ``set_thread`` calls on many hosts
        leave, and show readers, only lists one of them set.

        Raises:
            InvalidInputError: bad messages or arguments; nothing changes.
            StoreBusyError: other writers changed the thread at every one of
                many attempts; nothing was written.
        """
        self._check_writable()
        limits = self.config.limits
        scope, thread = check_name(scope, "scope", limits, new=True), check_name(thread, "thread", limits, new=True)
        new = _as_list(messages)
        wanted = normalise_messages(new, datetime.now(timezone.utc), limits, allow_empty=True)

        def plan(stored: list[Message]) -> tuple[list[Any], list[str] | None]:
            if len(stored) <= len(wanted) and all(_same(s, n) for s, n in zip(stored, wanted, strict=False)):
                return new[len(stored) :], []  # the head is there: add the rest (nothing, if it is all there)
            return new, None

        return self._edit_thread(scope, thread, plan)  # type: ignore[return-value]  # its plan never is None

    def pop(self: Any, *, scope: str, thread: str, position: int = -1) -> Message | None:
        """Delete the message at ``position`` of ``thread`` and return it, as ``list.pop`` does.

        ``position`` counts from 0; a negative one counts from the end (the
        default, ``-1``, is the last message). Returns ``None``, and deletes
        nothing, when the thread or the position does not exist. The message is
        deleted only if the thread still holds the rows it was chosen from,
        else it is chosen again (see :mod:`sgmem.threads`): hosts popping one
        thread at once each get, and delete, a different message.

        Raises:
            InvalidInputError: bad arguments; nothing changes.
            StoreBusyError: other writers changed the thread at every one of
                many attempts; nothing was deleted.
        """
        self._check_writable()
        limits = self.config.limits
        scope, thread = check_name(scope, "scope", limits), check_name(thread, "thread", limits)
        if isinstance(position, bool) or not isinstance(position, int):
            raise InvalidInputError(
                "position", position, "an int position in the thread (negative counts from the end)"
            )
        taken: list[Message] = []

        def plan(stored: list[Message]) -> tuple[list[Any], list[str]] | None:
            taken.clear()
            if not -len(stored) <= position < len(stored):
                return None
            taken.append(stored[position])
            return [], [str(stored[position].id)]

        return taken[0] if self._edit_thread(scope, thread, plan) is not None else None

    def clear_thread(self: Any, *, scope: str, thread: str) -> list[Message]:
        """Delete every message of ``thread`` and return them (``[]`` for an unknown thread).

        The thread is deleted only if it still holds the messages read, else
        read again (see :mod:`sgmem.threads`): what is returned is exactly what
        was deleted, even while other hosts add to the thread.

        Raises:
            InvalidInputError: bad arguments; nothing changes.
            StoreBusyError: other writers changed the thread at every one of
                many attempts; nothing was deleted.
        """
        self._check_writable()
        limits = self.config.limits
        scope, thread = check_name(scope, "scope", limits), check_name(thread, "thread", limits)
        taken: list[Message] = []

        def plan(stored: list[Message]) -> tuple[list[Any], None] | None:
            taken[:] = stored
            return ([], None) if stored else None

        return taken if self._edit_thread(scope, thread, plan) is not None else []
