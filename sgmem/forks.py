"""A process forked from one with stores open gets them in a usable state (``os.register_at_fork``).

``fork()`` copies the memory of every thread but runs only the forking one in
the child. A lock another thread held at that moment stays held in the child
forever, and so does a lock SQLite's own bookkeeping records for a connection
in mid-checkpoint (the background checkpointer's): every scrub in the child
then waited ``busy_timeout_s`` and failed. So before a fork the forking thread
takes, in a fixed order, the locks of every open ``Memory``, store,
checkpointer and embedder (waiting for the add, delete, checkpoint or model
load in progress to end), and releases them after it in both processes; in
the child, objects whose threads did not survive (the checkpointer) reset
themselves, and so does this registry's own lock (another thread may have
been registering a ``Memory`` it was opening).

A lock that stays held for ``FORK_WAIT_S`` (a long import on another thread) is
skipped rather than block the fork indefinitely: the child then resets what it
can (an embedder's lock) and may find the rest held, as before.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import Any

__all__ = ["FORK_WAIT_S", "guard_at_fork"]

logger = logging.getLogger(__name__)

#: [D] how long a fork waits for each lock held by another thread before going ahead without it
FORK_WAIT_S = 30.0

_registry_lock = threading.Lock()
# (rank, serial) -> (owner, attribute of its lock): ranks give the order code takes them in (Memory, then its
# store, then the store's checkpointer), so the forking thread waits in the same order as every other thread
_guarded: dict[tuple[int, int], tuple[weakref.ref[Any], str]] = {}
_serial = 0
_held: list[Any] = []


def guard_at_fork(owner: Any, attribute: str, rank: int) -> None:
    """Hold ``owner.<attribute>`` (a lock) across every fork, while ``owner`` lives.

    ``rank``: locks are taken in increasing rank (the order the code that uses
    them nests them). After a fork the child calls ``owner._after_fork_in_child()``
    when the owner has one.
    """
    global _serial
    with _registry_lock:
        _serial += 1
        _guarded[(rank, _serial)] = (weakref.ref(owner), attribute)
        for key in [k for k, (ref, _) in _guarded.items() if ref() is None]:  # owners gone since
            del _guarded[key]


def _owners() -> list[tuple[Any, str]]:
    with _registry_lock:
        items = sorted(_guarded.items())
    return [(o, a) for _, (ref, a) in items if (o := ref()) is not None]


def _before() -> None:
    _held.clear()
    for owner, attribute in _owners():
        lock = getattr(owner, attribute, None)
        if lock is None:
            continue
        if lock.acquire(timeout=FORK_WAIT_S):
            _held.append((owner, lock))
        else:
            logger.warning(
                "fork: %s.%s stayed held for %ss; forking without it", type(owner).__name__, attribute, FORK_WAIT_S
            )


def _release() -> list[Any]:
    owners = []
    for owner, lock in reversed(_held):
        lock.release()
        owners.append(owner)
    _held.clear()
    return owners


def _after_in_parent() -> None:
    _release()


def _after_in_child() -> None:
    global _registry_lock
    # another thread may have been inside guard_at_fork at the fork (opening a Memory): the child, which has
    # this thread alone, would wait for ever on the lock it held; the registry itself is whole between two
    # of that thread's steps
    _registry_lock = threading.Lock()
    _release()
    for owner, _ in _owners():
        reset = getattr(owner, "_after_fork_in_child", None)
        if reset is not None:
            reset()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
