"""Where an embedded store lives: checking the directory before SQLite opens it, tidying it after a reader.

SQLite reports every problem opening a file as "unable to open database
file"; this module tells the user which one it is (a path that is a file, a
database name that is a directory, a directory or file they may not write)
instead of calling the store corrupt.

A read-only connection to a WAL database makes SQLite create the ``-wal`` and
``-shm`` files beside it when they are missing (a reader needs them to see a
writer's commits), and, unable to checkpoint, it leaves them at close.
:func:`remove_reader_logs` removes them again when no connection uses them.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, StoreError

__all__ = ["LOG_SUFFIXES", "remove_reader_logs", "resolve_store_path", "unusable_reason"]

#: the files SQLite keeps beside a WAL database while it is open
LOG_SUFFIXES = ("-wal", "-shm")

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # a scheme of two or more letters ("C:" is a drive)


def resolve_store_path(path: Any) -> Path | None:
    """A store directory from what the user passed: ``~`` expanded, ``""`` refused, ``":memory:"`` in memory.

    A ``str`` that starts like a URI (``file:``, ``sqlite:``...) is refused, not
    taken for a directory named ``file:``; a ``pathlib.Path`` is always a directory.

    Raises:
        InvalidInputError: ``path`` is not a str / ``os.PathLike`` or ``None``, is blank,
            is a URI, or names a ``~user`` that has no home directory here.
    """
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError("path", path, "a directory path (str or pathlib.Path) or None")
    raw = os.fspath(path)
    if isinstance(raw, bytes) or not raw.strip():
        raise InvalidInputError(
            "path",
            path,
            "a directory path, or None for an in-memory store",
            "An empty path would silently use the current directory; pass e.g. './memory'.",
        )
    if raw == ":memory:":
        return None  # SQLite's name for an in-memory database: an in-memory store, not a directory of that name
    if "\x00" in raw:
        raise InvalidInputError("path", path, "a directory path without NUL characters")
    if isinstance(path, str) and _URI.match(raw):
        # "file:/data/x.db" or "sqlite:x": a URI would become a directory named "file:" (then a store
        # reported corrupt); a pathlib.Path is always a directory, for the rare name that really has a colon
        raise InvalidInputError(
            "path",
            path,
            "a directory path; URIs other than postgresql:// are not store paths",
            "Pass the store's directory as a plain path (e.g. '/data/memory'), or pathlib.Path(...) for a "
            "directory whose name has a colon.",
        )
    try:
        # absolute now: the store's later writes (its FAISS cache at close) must not follow a later chdir
        return Path(raw).expanduser().absolute()
    except RuntimeError:  # "~name/..." with no such user (or no home directory to expand "~" to)
        user = raw[1:].split("/", 1)[0].split(os.sep, 1)[0]
        raise InvalidInputError(
            "path",
            path,
            "a directory path whose ~ names a user of this machine with a home directory",
            f"No home directory was found for {('~' + user)!r}; pass an absolute path, or "
            f"pathlib.Path({('./' + raw)!r}) for a directory literally named so.",
        ) from None


def unusable_reason(directory: Path, db: Path, read_only: bool) -> StoreError | None:
    """Why SQLite could not open ``db`` in ``directory``, when it is not damage to the file (else ``None``)."""
    if db.is_dir():
        return StoreError(
            f"{str(db)!r} is a directory, not a database file. Move it away (it is not an sgmem store) "
            "or pass another path."
        )
    if read_only:
        if not db.exists():
            return StoreError(f"no sgmem store at {str(directory)!r} to open read-only ({db.name} is missing).")
        if not os.access(db, os.R_OK):
            return StoreError(f"permission denied: cannot read {str(db)!r}. Fix its permissions.")
        return None
    if not os.access(directory, os.W_OK | os.X_OK):
        return StoreError(
            f"permission denied: the store directory {str(directory)!r} is not writable. Fix its permissions, "
            "or open the store with sgmem.Memory(path, read_only=True) to search it without writing."
        )
    if db.exists() and not os.access(db, os.R_OK | os.W_OK):
        return StoreError(
            f"permission denied: {str(db)!r} is read-only for this user. sgmem does not change a file's "
            "permissions: open it with sgmem.Memory(path, read_only=True), or make it writable (chmod u+w)."
        )
    return None


def remove_reader_logs(db: str) -> None:
    """After a read-only opening of ``db`` that found no log files: remove the empty ``-wal`` and the ``-shm``
    SQLite created for it, when no other connection uses them.

    A connection that may write opens the log and closes: SQLite's own last-connection rule (an exclusive lock
    on the database) then checkpoints nothing and deletes both files; while another connection has the
    database open, or a log holds frames (someone wrote), they are left as they are.
    """
    try:
        if os.path.getsize(f"{db}-wal"):
            return  # a writer's frames: its files
    except OSError:
        return
    with contextlib.suppress(sqlite3.Error):
        conn = sqlite3.connect(db, isolation_level=None, timeout=0)
        try:
            conn.execute("PRAGMA schema_version").fetchone()  # opens the log, as the last reader had it
        finally:
            conn.close()
