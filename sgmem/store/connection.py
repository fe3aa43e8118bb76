"""The SQLite connection wrapper: no ``sqlite3`` error reaches a caller untranslated.

A lock held past the timeout becomes :class:`StoreBusyError`, a damaged file
:class:`CorruptStoreError`, a full disk or unreadable file :class:`StoreError`
(see :mod:`sgmem.store.sqlite`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from ..errors import CorruptStoreError, SgmemError, StoreBusyError, StoreError

__all__ = ["Conn", "Cursor", "is_locked", "statements", "translate"]


def statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (executescript would commit)."""
    buf = ""
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            yield buf
            buf = ""
    if buf.strip():
        yield buf


def is_locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translate(exc: sqlite3.Error, where: str, busy_timeout_s: float) -> BaseException:
    """The sgmem error a caller should see for ``exc``; programming errors pass through unchanged."""
    name = str(getattr(exc, "sqlite_errorname", ""))  # Python >= 3.11
    text = str(exc).lower()
    if isinstance(exc, sqlite3.ProgrammingError) and "closed" in text:
        return SgmemError("this Memory is closed; create a new sgmem.Memory(path=...) to reopen the store.")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or (
        isinstance(exc, sqlite3.OperationalError) and is_locked(exc)
    ):
        return StoreBusyError(
            f"the store {where!r} stayed locked by another connection for {busy_timeout_s}s; "
            "retry later or raise Config(busy_timeout_s=...)."
        )
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or any(
        w in text for w in ("malformed", "not a database", "corrupt")
    ):
        return CorruptStoreError(
            f"store {where!r} is damaged ({exc}). It was left untouched: restore it from a backup, "
            "or move it away to start a new store."
        )
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")) or any(
        w in text for w in ("disk is full", "disk i/o", "readonly", "unable to open")
    ):
        return StoreError(f"the store {where!r} could not be read or written ({exc}); check the disk and permissions.")
    if isinstance(exc, sqlite3.OperationalError) and text.startswith("no such table"):
        # sgmem's migrations create every table it names: one missing was dropped by hand (or lost)
        return CorruptStoreError(
            f"store {where!r} lacks part of sgmem's schema ({exc}): it was changed by hand or damaged. It was "
            "left untouched: restore it from a backup, or move it away to start a new store."
        )
    return exc


class Cursor:
    """A cursor whose row fetches translate sqlite3 errors (damage can surface mid-scan)."""

    __slots__ = ("_conn", "_cur")

    def __init__(self, cur: sqlite3.Cursor, conn: Conn) -> None:
        self._cur = cur
        self._conn = conn

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._cur
        except sqlite3.Error as exc:
            raise self._conn.translate(exc) from exc

    def fetchone(self) -> Any:
        try:
            return self._cur.fetchone()
        except sqlite3.Error as exc:
            raise self._conn.translate(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return self._cur.fetchall()
        except sqlite3.Error as exc:
            raise self._conn.translate(exc) from exc

    def fetchmany(self, size: int = 1) -> list[Any]:
        try:
            return self._cur.fetchmany(size)
        except sqlite3.Error as exc:
            raise self._conn.translate(exc) from exc

    def __getattr__(self, name: str) -> Any:  # lastrowid, rowcount, description...
        return getattr(self._cur, name)


class Conn:
    """The sqlite3 connection with its errors translated (see the module docstring)."""

    __slots__ = ("_raw", "_where", "_timeout")

    def __init__(self, raw: sqlite3.Connection, where: str, busy_timeout_s: float) -> None:
        self._raw = raw
        self._where = where
        self._timeout = busy_timeout_s

    def translate(self, exc: sqlite3.Error) -> BaseException:
        return translate(exc, self._where, self._timeout)

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        try:
            return Cursor(self._raw.execute(sql, parameters), self)
        except sqlite3.Error as exc:
            raise self.translate(exc) from exc

    def executemany(self, sql: str, seq: Any) -> Any:
        try:
            return Cursor(self._raw.executemany(sql, seq), self)
        except sqlite3.Error as exc:
            raise self.translate(exc) from exc

    def __getattr__(self, name: str) -> Any:  # in_transaction, total_changes, close...
        try:
            return getattr(self._raw, name)
        except sqlite3.Error as exc:  # e.g. in_transaction on a closed connection
            raise self.translate(exc) from exc
