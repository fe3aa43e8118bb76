"""The embedded store: SQLite in WAL mode is the system of record.

One connection per :class:`SQLiteStore`, shared by the threads of one
``Memory`` under a re-entrant lock; other processes coordinate through
SQLite's own locking. Writes run in ``BEGIN IMMEDIATE`` transactions so a
writer takes the lock up front, and "database is locked" is retried with
backoff up to ``busy_timeout_s`` before :class:`StoreBusyError` is raised.

No ``sqlite3`` error about the file reaches a caller: the connection is
wrapped so that a lock held past the timeout becomes :class:`StoreBusyError`,
a damaged file :class:`CorruptStoreError` (the file is never replaced), a
full disk or unreadable file :class:`StoreError`, and use after ``close()``
an :class:`SgmemError` saying so. Deleted content is overwritten on disk
(``secure_delete``), not just unlinked from the b-tree.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from .._version import __version__
from ..errors import (
    CorruptStoreError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    SchemaVersionError,
    StoreBusyError,
    StoreError,
)
from ..forks import guard_at_fork
from ..types import Message, ScopeStats
from .batch import INSERT_MESSAGE, INSERT_SENTENCE, insert_rest, insert_with_ids, message_values, plan_rounds
from .connection import Conn, is_locked, statements
from .paths import LOG_SUFFIXES, remove_reader_logs, unusable_reason
from .rows import MessageRow, SentenceRow
from .schema import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)

__all__ = ["DB_FILENAME", "MessageRow", "SQLiteStore", "SentenceRow"]

DB_FILENAME = "sgmem.db"


#: [D] how long an open retries finishing a scrub a killed process left undone (see ``_scrub_on_open``)
SCRUB_ON_OPEN_S = 0.5


class Checkpointer:
    """Copies a WAL database's log into the database file on a thread of its own.

    SQLite's automatic checkpoint runs inside the commit that passes
    ``wal_autocheckpoint`` pages: that commit copies every page of the log
    into the database and fsyncs both files (about 110 ms for 32 MiB of log
    at 50k sentences on this project's 2-core machine, every 25 adds or so).
    Here each commit only calls :meth:`kick`, which wakes a thread running a ``PASSIVE``
    checkpoint on a connection of its own: it copies what is not copied
    yet without taking the write lock (a writer goes on appending to the
    log meanwhile), and once it has caught up the next writer starts the
    log from the beginning again. SQLite's checkpoint is crash safe at any
    point; durability is the same (the log is fsynced before its pages are
    copied). Kicks while a checkpoint runs are coalesced into one more run.
    A fork waits for a checkpoint in progress to end (:mod:`sgmem.forks`:
    a child would inherit SQLite's record of its lock with no thread to release
    it); a forked child starts a thread and connection of its own at its first kick.
    """

    def __init__(self, target: str) -> None:
        self._target = target
        self._cv = threading.Condition()
        self._due = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._kicks = 0  # kicks so far, and the last one a finished checkpoint started after
        self._served = 0
        self.runs = 0  # checkpoints completed (for tests and benchmarks)
        self._busy = threading.Lock()  # held by the thread while a checkpoint runs; and by a fork (see forks)
        guard_at_fork(self, "_busy", rank=2)

    def _after_fork_in_child(self) -> None:
        """In a forked child: the thread is the parent's; the next kick starts one of the child's own."""
        self._cv = threading.Condition()
        self._busy = threading.Lock()
        self._thread = None
        self._pid = os.getpid()
        self._due = False
        self._kicks = self._served = 0

    def kick(self) -> None:
        """Ask for a checkpoint (returns at once)."""
        with self._cv:
            if self._stopped or self._pid != os.getpid():
                return
            self._due = True
            self._kicks += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sgmem-checkpoint", daemon=True)
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        conn = None
        try:
            conn = sqlite3.connect(self._target, isolation_level=None, check_same_thread=False)
            while True:
                with self._cv:
                    while not self._due and not self._stopped:
                        self._cv.wait()
                    if self._stopped:
                        return
                    self._due = False
                    kicks = self._kicks
                try:
                    with self._busy:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:  # noqa: S112 - e.g. another connection checkpointing: the next kick retries
                    continue
                with self._cv:
                    self.runs += 1
                    self._served = kicks
                    self._cv.notify_all()
        except sqlite3.Error:  # noqa: S110 - no connection: the writers' automatic checkpoint still runs
            pass
        finally:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """Wait until a checkpoint has run after the last kick; True if one did within ``timeout_s``."""
        with self._cv:
            return self._cv.wait_for(lambda: self._served >= self._kicks or self._stopped, timeout_s)

    def close(self) -> None:
        """Stop the thread (after the checkpoint it is running, if any) and close its connection."""
        with self._cv:
            self._stopped = True
            self._cv.notify()
            thread = self._thread
        # not from the thread itself: a finalizer (a dropped store's) may run on any thread, this one too
        if thread is not None and self._pid == os.getpid() and thread is not threading.current_thread():
            thread.join()


class SQLiteStore:
    """Records, vectors and edges of every scope in one SQLite database.

    Args:
        path: a directory (created with user-only permissions) or ``None`` for
            a private in-memory database.
        busy_timeout_s: how long to wait for another writer's lock.
        wal_checkpoint_pages: write-ahead log pages between automatic
            checkpoints (``Config.wal_checkpoint_pages``).
        wal_checkpoint_background: checkpoint after each commit on a thread
            of this store's (``Config.wal_checkpoint_background``; :class:`Checkpointer`).
    """

    _checkpointer: Checkpointer | None = None
    #: the database whose log files a read-only opening made SQLite create (removed at close)
    _reader_logs: str | None = None
    #: a scrub found undone when the store opened could not finish yet (see :meth:`_scrub_on_open`)
    scrub_pending = False

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        busy_timeout_s: float = 30.0,
        read_only: bool = False,
        wal_checkpoint_pages: int = 8192,
        wal_checkpoint_background: bool = False,
    ) -> None:
        self.dir: Path | None = None
        self._checkpointer: Checkpointer | None = None
        self._busy_timeout_s = busy_timeout_s
        self.read_only = read_only
        self._writing = False  # inside write()
        self._lock = threading.RLock()
        guard_at_fork(self, "_lock", rank=1)  # a fork never copies another thread's transaction in progress
        if path is None:
            target = ":memory:"
        else:
            if "\x00" in os.fspath(path):
                raise InvalidInputError("path", path, "a directory path without NUL characters")
            self.dir = Path(path)
            try:
                if self.dir.exists() and not self.dir.is_dir():
                    raise StoreError(
                        f"path {str(self.dir)!r} is a file; sgmem.Memory(path=...) expects a directory "
                        f"(the database is {DB_FILENAME} inside it)."
                    )
                created = not self.dir.exists()
                if read_only and created:
                    raise StoreError(f"no sgmem store at {str(self.dir)!r} to open read-only.")
                self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                if created:  # a directory the user made keeps the permissions they gave it
                    os.chmod(self.dir, 0o700)
            except OSError as exc:
                raise StoreError(
                    f"store path {str(self.dir)[:200]!r} cannot be used: {exc.strerror or exc}. "
                    "Pass a directory you can write to."
                ) from exc
            target = str(self.dir / DB_FILENAME)
            if target.startswith("file:"):  # SQLite would read "file:x/sgmem.db" as a URI: the same file, absolute
                target = os.path.abspath(target)
            problem = unusable_reason(self.dir, self.dir / DB_FILENAME, read_only)
            if problem is not None:
                raise problem
        new_file = self.dir is not None and not (self.dir / DB_FILENAME).exists()
        # a reader that finds no log files leaves none (SQLite creates them for it): docs/ui.md, no file written
        self._reader_logs = (
            target
            if read_only and self.dir is not None and not any(os.path.exists(target + s) for s in LOG_SUFFIXES)
            else None
        )
        try:
            uri = f"file:{quote(target)}?mode=ro" if read_only and self.dir is not None else target
            self._raw = sqlite3.connect(
                uri, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s, uri=uri != target
            )
            self.conn: Any = Conn(self._raw, target, busy_timeout_s)
            if new_file:  # ours, user-only; an existing file keeps the permissions its owner gave it
                with contextlib.suppress(OSError):
                    os.chmod(target, 0o600)
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA secure_delete = ON")
            if self.dir is not None and not read_only:
                mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":  # pragma: no cover - filesystem without WAL support
                    raise StoreError(f"could not put {target!r} in WAL mode (got {mode!r})")
                self.conn.execute("PRAGMA synchronous = NORMAL")
                self.conn.execute(f"PRAGMA wal_autocheckpoint = {int(wal_checkpoint_pages)}")
                if wal_checkpoint_background:
                    self._checkpointer = Checkpointer(target)
                    # a store dropped without close() stops its thread (which holds no reference to the store)
                    weakref.finalize(self, self._checkpointer.close)
            self._check_schema() if read_only else self._migrate()
            if self.dir is not None and not read_only:
                self.scrub_pending = not self._scrub_on_open(target)
        except BaseException as exc:
            # a store that failed to open must not keep its file handle (the caller
            # may move the file away and retry in the same process)
            raw = getattr(self, "_raw", None)
            if raw is not None:
                with contextlib.suppress(sqlite3.Error):
                    raw.close()
            if self._reader_logs is not None:
                remove_reader_logs(self._reader_logs)
            if isinstance(exc, StoreBusyError):
                raise StoreBusyError(
                    f"store {target!r} stayed locked by another connection for {busy_timeout_s}s while opening; "
                    "retry later or raise Config(busy_timeout_s=...)."
                ) from exc
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            if is_locked(exc):
                raise StoreBusyError(f"store {target!r} stayed locked for {busy_timeout_s}s while opening") from exc
            raise CorruptStoreError(
                f"store {target!r} is not a readable sgmem database ({exc}). It was left untouched: "
                "restore it from a backup or move it away to start a new store."
            ) from exc

    # ------------------------------------------------------------------ setup
    def _check_schema(self) -> None:
        """Read-only opening: the store must already be at this sgmem's schema (nothing can be migrated)."""
        try:
            done = {r[0] for r in self.conn.execute("SELECT name FROM migrations")}
        except (sqlite3.OperationalError, CorruptStoreError):  # no migrations table yet (see connection.translate)
            done = set()
        known = {name for name, _ in MIGRATIONS}
        if done - known:
            raise SchemaVersionError(
                f"this store was written by a newer sgmem (migrations {sorted(done - known)} are unknown to "
                f"sgmem {__version__}). Upgrade sgmem to open it."
            )
        if known - done:
            raise StoreError(
                "this store needs a schema upgrade, which a read-only opening cannot do: open it once "
                "with sgmem.Memory(path) (writable), then read-only."
            )

    def _migrate(self) -> None:
        with self.write():
            self.conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            done = {r[0] for r in self.conn.execute("SELECT name FROM migrations")}
            known = {name for name, _ in MIGRATIONS}
            unknown = done - known
            if unknown:
                raise SchemaVersionError(
                    f"this store was written by a newer sgmem (migrations {sorted(unknown)} are unknown to "
                    f"sgmem {__version__}, schema {SCHEMA_VERSION}). Upgrade sgmem to open it."
                )
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                for statement in statements(sql):
                    self.conn.execute(statement)
                self.conn.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                    (name, datetime.now(timezone.utc).isoformat()),
                )
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('library_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (__version__,),
            )

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedder on first use; refuse a different one afterwards."""
        with contextlib.nullcontext() if self.read_only else self.write():
            meta = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')").fetchall())
            if not meta and self.read_only:  # an empty store: nothing to compare, nothing to record
                return
            if not meta:
                self.conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)", [("embedder", name), ("dim", str(dim))]
                )
                return
        if meta.get("embedder") != name or int(meta.get("dim", -1)) != dim:
            raise EmbedderMismatchError(
                f"this store was built with embedder {meta.get('embedder')!r} (dim {meta.get('dim')}), "
                f"but {name!r} (dim {dim}) was given. Open it with the same embedder, or use a new path."
            )

    def bind_acts(self, identity: str) -> None:
        """Record what classifies the dialogue acts stored with each sentence (``identity``,
        :func:`sgmem.text.acts.acts_identity`). A store whose acts another classifier wrote has them cleared,
        once: each index load classifies and stores what it finds without one (a read-only store keeps its
        acts and classifies them anew in memory, :meth:`acts_current`)."""
        if self.read_only or self.meta("acts_by") == identity:
            return
        with self.write():
            if self.meta("acts_by") == identity:
                return
            if self.meta("acts_by") is not None:
                self.conn.execute("UPDATE sentences SET act = NULL WHERE act IS NOT NULL")
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('acts_by', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (identity,),
            )

    def bind_analyzer(self, wanted: str) -> str:
        """The analyzer the store's lexical terms are written with (:mod:`sgmem.text.lexical`), recorded on first
        use: ``wanted`` for a store that holds no message yet, ``"snowball"`` for one written before the
        analyzer was recorded (its terms are Snowball stems). Every add and query of the store uses it."""
        have = self.meta("analyzer")
        if have is not None:
            return have
        if self.read_only:
            return "snowball" if self.conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() else wanted
        with self.write():
            have = self.meta("analyzer")
            if have is None:
                have = "snowball" if self.conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() else wanted
                self.conn.execute("INSERT INTO meta (key, value) VALUES ('analyzer', ?)", (have,))
        return have

    def acts_current(self, identity: str) -> bool:
        """Whether the acts stored with the sentences are ``identity``'s (else they are read anew)."""
        by = self.meta("acts_by")
        return by == identity or (by is None and not self.read_only)

    def save_sentence_acts(self, scope_id: int, pairs: Sequence[tuple[int, int]]) -> None:
        """Store ``(act, sentence_id)`` for a scope's sentences stored without one (best effort: a read-only
        store, or one that stays locked, classifies them again when next opened)."""
        if self.read_only or not pairs:
            return
        sql = "UPDATE sentences SET act = ? WHERE scope_id = ? AND id = ? AND act IS NULL"
        rows = [(act, scope_id, sid) for act, sid in pairs]
        try:
            if self.conn.in_transaction:  # inside a write (an add loading its index): part of it
                if getattr(self, "_writing", False):
                    self.conn.executemany(sql, rows)
                return
            with self.write(timeout_s=1.0):
                self.conn.executemany(sql, rows)
        except StoreError as exc:
            log.info("acts of %d sentences not stored (%s); classified again on the next load", len(pairs), exc)

    def meta(self, key: str) -> str | None:
        """A value from the meta table."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------ transactions
    @contextlib.contextmanager
    def write(self, timeout_s: float | None = None) -> Iterator[Any]:
        """One write transaction (``BEGIN IMMEDIATE``), retried while locked.

        Everything inside commits together or not at all. ``timeout_s``
        overrides ``busy_timeout_s`` for this transaction (e.g. a best-effort
        cache save on close must not wait 30 s).
        """
        if self.read_only:
            raise StoreError(
                f"this store was opened read-only (sgmem.Memory({str(self.dir)!r}, read_only=True)): "
                "searches work, writes do not. Open it without read_only to add or delete."
            )
        timeout = self._busy_timeout_s if timeout_s is None else timeout_s
        with self._lock:
            deadline = time.monotonic() + timeout
            delay = 0.01
            if timeout_s is not None:
                self._raw.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            try:
                while True:
                    try:
                        self._raw.execute("BEGIN IMMEDIATE")
                        break
                    except sqlite3.OperationalError as exc:
                        if not is_locked(exc) or time.monotonic() >= deadline:
                            if is_locked(exc):
                                raise StoreBusyError(
                                    f"the store stayed locked by another writer for {timeout}s; "
                                    "retry later or raise Config(busy_timeout_s=...)."
                                ) from exc
                            raise self.conn.translate(exc) from exc
                        time.sleep(delay * (1 + random.random()))
                        delay = min(delay * 2, 0.5)
                    except sqlite3.Error as exc:
                        raise self.conn.translate(exc) from exc
            finally:
                if timeout_s is not None:
                    with contextlib.suppress(sqlite3.Error):
                        self._raw.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
            self._writing = True
            try:
                yield self.conn
            except BaseException:
                self._writing = False
                with contextlib.suppress(sqlite3.Error):
                    self._raw.execute("ROLLBACK")
                raise
            else:
                self._writing = False
                try:
                    self._raw.execute("COMMIT")
                except sqlite3.Error as exc:
                    with contextlib.suppress(sqlite3.Error):
                        self._raw.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.OperationalError) and is_locked(exc):
                        raise StoreBusyError("the store stayed locked while committing; nothing was stored") from exc
                    raise self.conn.translate(exc) from exc
                if self._checkpointer is not None:
                    self._checkpointer.kick()

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        """A consistent read snapshot (one deferred transaction)."""
        with self._lock:
            if self.conn.in_transaction:  # already inside write(): same snapshot
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("COMMIT")

    def scrub(self, timeout_s: float | None = None) -> bool:
        """Copy the WAL into the database file and truncate it; True once done (or nothing to do).

        Deleted rows are overwritten in the database (``secure_delete``), but
        the WAL keeps the older copies of their pages until a checkpoint; a
        ``TRUNCATE`` checkpoint rewrites those pages in the database and
        empties the WAL, so no file holds the deleted content any more. It
        waits for readers of other connections that still use an older
        snapshot (each may hold those pages) up to ``timeout_s`` (default
        ``busy_timeout_s``) and returns False if one still does.
        """
        if self.dir is None:
            return True  # an in-memory store writes no file
        timeout = self._busy_timeout_s if timeout_s is None else timeout_s
        with self._lock:
            deadline = time.monotonic() + timeout
            delay = 0.01
            self._raw.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            try:
                while True:
                    try:
                        busy = self._raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                    except sqlite3.OperationalError as exc:
                        if not is_locked(exc):
                            raise self.conn.translate(exc) from exc
                        busy = 1  # another connection is checkpointing: try again
                    if not busy:
                        return True
                    if time.monotonic() >= deadline:
                        return False
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 0.5)
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._raw.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")

    def _scrub_on_open(self, target: str) -> bool:
        """Finish a scrub that a killed process left undone (its delete committed, its checkpoint never ran).

        The log of a store whose last connection closed normally is gone or
        empty; one left with frames (a process killed, or others still
        writing) is checkpointed and emptied now, retrying for at most
        ``SCRUB_ON_OPEN_S`` (a checkpoint of this store's own background
        checkpointer, or another process's, is brief; a long reader is not
        waited for), so deleted text does not outlive the open. True if
        the log is now empty; False leaves it to the next delete or ``close``.
        A read-only open cannot write the files and does not try.
        """
        wal = Path(f"{target}-wal")
        try:
            if not wal.exists() or wal.stat().st_size == 0:
                return True
        except OSError:
            return True
        try:
            return self.scrub(timeout_s=min(SCRUB_ON_OPEN_S, self._busy_timeout_s))
        except Exception:  # noqa: BLE001 - best effort: the next delete or close scrubs again
            return False

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self._checkpointer is not None:  # first: the last connection to close checkpoints and removes the log
            self._checkpointer.close()
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._raw.close()
            if self._reader_logs is not None:
                remove_reader_logs(self._reader_logs)
                self._reader_logs = None

    # ------------------------------------------------------------------ scopes
    def scope_id(self, name: str, *, create: bool = False) -> int | None:
        """The scope's row id; created inside the current transaction if asked."""
        row = self.conn.execute("SELECT id FROM scopes WHERE name = ?", (name,)).fetchone()
        if row:
            return int(row[0])
        if not create:
            return None
        cur = self.conn.execute("INSERT INTO scopes (name) VALUES (?)", (name,))
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def lock_scope(self, scope_id: int) -> None:
        """Serialise this write with the scope's other writers (``BEGIN IMMEDIATE`` already does)."""

    def generation(self, scope_id: int) -> int:
        """How many changes the scope has seen (caches compare against it)."""
        row = self.conn.execute("SELECT generation FROM scopes WHERE id = ?", (scope_id,)).fetchone()
        return int(row[0]) if row else -1

    def bump_generation(self, scope_id: int) -> int:
        """Mark the scope changed (a new generation, and a new random :meth:`stamp`); return the new generation."""
        self.conn.execute(
            "UPDATE scopes SET generation = generation + 1, stamp = ? WHERE id = ?",
            (secrets.randbits(62) + 1, scope_id),
        )
        return self.generation(scope_id)

    def stamp(self, scope_id: int) -> int:
        """The random number the scope's last write drew (0 before any since migration ``0011_scope_stamps``): the
        same generation reached by other writes (a restored backup written again) has another."""
        row = self.conn.execute("SELECT stamp FROM scopes WHERE id = ?", (scope_id,)).fetchone()
        return int(row[0]) if row else -1

    def scope_names(self) -> list[str]:
        """Every scope that holds at least one message."""
        rows = self.conn.execute(
            "SELECT name FROM scopes s WHERE EXISTS (SELECT 1 FROM messages m WHERE m.scope_id = s.id) ORDER BY name"
        )
        return [r[0] for r in rows]

    # -------------------------------------------------------------- messages
    def existing_ext_ids(self, scope_id: int, ext_ids: Sequence[str]) -> list[str]:
        """The caller ids among ``ext_ids`` already stored in the scope."""
        found: list[str] = []
        for i in range(0, len(ext_ids), 500):
            chunk = list(ext_ids[i : i + 500])
            marks = ",".join("?" * len(chunk))
            found += [
                r[0]
                for r in self.conn.execute(
                    f"SELECT ext_id FROM messages WHERE scope_id = ? AND ext_id IN ({marks})", (scope_id, *chunk)
                )
            ]
        return found

    def last_in_thread(self, scope_id: int, thread: str) -> tuple[int, str, str, int, int] | None:
        """(id, role, session, round_id, turn_idx) of the thread's latest message."""
        row = self.conn.execute(
            "SELECT id, role, session, round_id, turn_idx FROM messages WHERE scope_id = ? AND thread = ? "
            "ORDER BY id DESC LIMIT 1",
            (scope_id, thread),
        ).fetchone()
        return (int(row[0]), row[1], row[2], int(row[3]), int(row[4])) if row else None

    def thread_tail(
        self, scope_id: int, thread: str, sessions: Sequence[str]
    ) -> tuple[tuple[int, str, str, int, int] | None, dict[str, int]]:
        """The thread's latest message (:meth:`last_in_thread`) and the messages already in each of ``sessions``,
        read together (both statements are sent before either is read)."""
        last = self.conn.execute(
            "SELECT id, role, session, round_id, turn_idx FROM messages WHERE scope_id = ? AND thread = ? "
            "ORDER BY id DESC LIMIT 1",
            (scope_id, thread),
        )
        names = list(dict.fromkeys(sessions))
        sizes = (
            self.conn.execute(
                f"SELECT session, COUNT(*) FROM messages WHERE scope_id = ? AND session IN ({','.join('?' * len(names))}) "
                "GROUP BY session",
                (scope_id, *names),
            )
            if names
            else None
        )
        row = last.fetchone()
        counts = dict.fromkeys(names, 0)
        counts.update({str(n): int(c) for n, c in sizes or ()})
        return ((int(row[0]), row[1], row[2], int(row[3]), int(row[4])) if row else None), counts

    def reserve_ids(self, counts: dict[str, int]) -> None:
        """Ids for an add's new rows, drawn ahead where the store needs to (PostgreSQL); SQLite reads them back."""

    def session_size(self, scope_id: int, session: str) -> int:
        """Messages already in a session."""
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM messages WHERE scope_id = ? AND session = ?", (scope_id, session)
            ).fetchone()[0]
        )

    def vectors_by_hash(self, scope_id: int, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored sentence vectors of the scope keyed by embedded-text hash."""
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(hashes), 500):
            chunk = list(hashes[i : i + 500])
            marks = ",".join("?" * len(chunk))
            for h, blob in self.conn.execute(
                f"SELECT embed_hash, vec FROM sentences WHERE scope_id = ? AND embed_hash IN ({marks})",
                (scope_id, *chunk),
            ):
                out.setdefault(h, np.frombuffer(blob, dtype=np.float32))
        return out

    #: [D] ids of an add's new rows read from one ``executemany`` (:mod:`sgmem.store.batch`); PostgreSQL: False
    consecutive_ids = True

    def insert_message(self, scope_id: int, thread: str, m: MessageRow, round_id: int | None, turn_idx: int) -> int:
        """Insert one message; a ``None`` round opens a round at this message."""
        values = message_values(scope_id, thread, m, round_id if round_id is not None else 0, turn_idx)
        cur = self.conn.execute(INSERT_MESSAGE, values)
        mid = int(cur.lastrowid)  # type: ignore[arg-type]
        if round_id is None:
            self.conn.execute("UPDATE messages SET round_id = id WHERE scope_id = ? AND id = ?", (scope_id, mid))
        return mid

    def insert_messages(
        self, scope_id: int, thread: str, rows: Sequence[tuple[MessageRow, int, int]]
    ) -> tuple[list[int], list[int]]:
        """Insert ``(message, round ref, turn_idx)`` rows; their ids and round ids.

        A round ref ``>= 0`` is an existing round's id, ``< 0`` the round
        opened by new row ``-ref-1`` (itself when it opens one).
        """
        if not rows:
            return [], []
        if not self.consecutive_ids:
            ids: list[int] = []
            for i, (m, ref, turn_idx) in enumerate(rows):
                own = ref == -i - 1
                rid = None if own else ref if ref >= 0 else ids[-ref - 1]
                ids.append(self.insert_message(scope_id, thread, m, rid, turn_idx))
            return ids, plan_rounds([ref for _, ref, _ in rows], ids)
        # the new rows' ids are predicted (the first one's id + position) and checked by insert_rest
        refs = [ref for _, ref, _ in rows]
        m0, _, t0 = rows[0]
        r0 = refs[0] if refs[0] >= 0 else 0  # a round it opens gets its id below
        first = int(self.conn.execute(INSERT_MESSAGE, message_values(scope_id, thread, m0, r0, t0)).lastrowid)
        guess = plan_rounds(refs, range(first, first + len(rows)))
        rest = [message_values(scope_id, thread, m, r, t) for (m, _, t), r in zip(rows[1:], guess[1:], strict=True)]
        ids = insert_rest(self.conn, "messages", INSERT_MESSAGE, first, rest)
        rounds = plan_rounds(refs, ids)
        was = [r0, *guess[1:]]
        fix = [(r, mid) for r, mid, w in zip(rounds, ids, was, strict=True) if r != w]
        if fix:  # the first row's own round; every round when the ids were not the predicted ones
            self.conn.executemany(
                "UPDATE messages SET round_id = ? WHERE scope_id = ? AND id = ?", [(r, scope_id, m) for r, m in fix]
            )
        return ids, rounds

    def insert_sentences(self, scope_id: int, rows: Sequence[tuple[int, SentenceRow]]) -> list[int]:
        """Insert sentences ``(message_id, row)``; return their ids in order."""
        values = [
            (scope_id, mid, s.idx, s.start, s.end, s.text, s.embed_hash, s.vec.astype(np.float32).tobytes(), s.act)
            for mid, s in rows
        ]
        if self.consecutive_ids:
            return insert_with_ids(self.conn, "sentences", INSERT_SENTENCE, values)
        return [int(self.conn.execute(INSERT_SENTENCE, v).lastrowid) for v in values]  # type: ignore[arg-type]

    def insert_sentence_edges(self, scope_id: int, edges: Sequence[tuple[int, int, float]]) -> int:
        """Insert similarity edges; return how many were new."""
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO sentence_edges (scope_id, src, dst, weight) VALUES (?, ?, ?, ?)",
            [(scope_id, a, b, w) for a, b, w in edges],
        )
        return self.conn.total_changes - before

    def insert_turn_edges(self, scope_id: int, edges: Sequence[tuple[int, int]]) -> int:
        """Insert chronological edges; return how many were new."""
        before = self.conn.total_changes
        self.conn.executemany(
            "INSERT OR IGNORE INTO turn_edges (scope_id, src, dst) VALUES (?, ?, ?)",
            [(scope_id, a, b) for a, b in edges],
        )
        return self.conn.total_changes - before

    def messages(self, scope_id: int, thread: str | None, limit: int | None) -> list[Message]:
        """Messages of a scope (or one thread) in the order they were added.

        With ``limit``, the most recent ``limit`` messages, still oldest first.
        """
        sql = "SELECT ext_id, role, name, content, at, thread, session, metadata FROM messages WHERE scope_id = ?"
        args: list[Any] = [scope_id]
        if thread is not None:
            sql += " AND thread = ?"
            args.append(thread)
        if limit is not None:
            sql = (
                "SELECT ext_id, role, name, content, at, thread, session, metadata FROM messages WHERE scope_id = ? "
                f"AND id IN (SELECT id FROM messages WHERE scope_id = ?{' AND thread = ?' if thread is not None else ''} "
                "ORDER BY id DESC LIMIT ?) ORDER BY id"
            )
            args = [scope_id, *args, limit]
        else:
            sql += " ORDER BY id"
        return [
            Message(
                role=r[1],
                content=r[3],
                name=r[2],
                id=r[0],
                at=datetime.fromisoformat(r[4]),
                thread=r[5],
                session=r[6],
                metadata=json.loads(r[7]),
            )
            for r in self.conn.execute(sql, args)
        ]

    def messages_by_ext_ids(self, scope_id: int, ext_ids: Sequence[str]) -> list[Message]:
        """The scope's messages with these caller ids, in the order they were added."""
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(ext_ids), 500):
            chunk = list(ext_ids[i : i + 500])
            marks = ",".join("?" * len(chunk))
            rows += self.conn.execute(
                "SELECT id, ext_id, role, name, content, at, thread, session, metadata FROM messages "
                f"WHERE scope_id = ? AND ext_id IN ({marks})",
                (scope_id, *chunk),
            ).fetchall()
        rows.sort(key=lambda r: r[0])
        return [
            Message(
                role=r[2],
                content=r[4],
                name=r[3],
                id=r[1],
                at=datetime.fromisoformat(r[5]),
                thread=r[6],
                session=r[7],
                metadata=json.loads(r[8]),
            )
            for r in rows
        ]

    def message_details(self, scope_id: int, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Thread, speaker, text and time of a scope's message rows, by row id."""
        out: dict[int, dict[str, Any]] = {}
        for i in range(0, len(ids), 500):
            chunk = list(ids[i : i + 500])
            marks = ",".join("?" * len(chunk))
            sql = (
                "SELECT id, ext_id, thread, role, name, content, at FROM messages "
                f"WHERE scope_id = ? AND id IN ({marks})"
            )
            for r in self.conn.execute(sql, (scope_id, *chunk)):
                out[int(r[0])] = {
                    "ext_id": r[1],
                    "thread": r[2],
                    "speaker": r[4] or r[3],
                    "content": r[5],
                    "at": datetime.fromisoformat(r[6]),
                }
        return out

    def sentence_texts(self, scope_id: int, ids: Sequence[int]) -> dict[int, str]:
        """Texts of a scope's sentence rows, by row id (ids not stored are absent)."""
        out: dict[int, str] = {}
        with self._lock:
            for i in range(0, len(ids), 500):
                chunk = list(ids[i : i + 500])
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT id, text FROM sentences WHERE scope_id = ? AND id IN ({marks})"
                for sid, text in self.conn.execute(sql, (scope_id, *chunk)):
                    out[int(sid)] = text
        return out

    def threads(self, scope_id: int) -> list[str]:
        """Threads of a scope, in order of first message."""
        rows = self.conn.execute(
            "SELECT thread FROM messages WHERE scope_id = ? GROUP BY thread ORDER BY MIN(id)", (scope_id,)
        )
        return [r[0] for r in rows]

    # ---------------------------------------------------------------- delete
    def message_rows(self, scope_id: int, thread: str | None, ext_ids: Sequence[str] | None) -> set[int]:
        """Row ids of the scope's messages: all, a thread's, or those with these caller ids (in ``thread``)."""
        where = "scope_id = ?"
        args: list[Any] = [scope_id]
        if thread is not None:
            where += " AND thread = ?"
            args.append(thread)
        if ext_ids is None:
            return {int(r[0]) for r in self.conn.execute(f"SELECT id FROM messages WHERE {where}", args)}
        out: set[int] = set()
        for i in range(0, len(ext_ids), 500):
            chunk = list(ext_ids[i : i + 500])
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id FROM messages WHERE {where} AND ext_id IN ({marks})"
            out.update(int(r[0]) for r in self.conn.execute(sql, (*args, *chunk)))
        return out

    def delete(self, scope_id: int, thread: str | None, ext_ids: Sequence[str] | None) -> dict[str, Any]:
        """Delete messages and everything derived from them; return counts.

        Must run inside :meth:`write`. Chronological edges are re-linked over
        the gap so each thread stays one chain.
        """
        rows = sorted(self.message_rows(scope_id, thread, ext_ids))
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _del (id INTEGER PRIMARY KEY)")
        self.conn.execute("DELETE FROM _del")
        self.conn.executemany("INSERT INTO _del (id) VALUES (?)", [(r,) for r in rows])
        n_msg = self.conn.execute("SELECT COUNT(*) FROM _del").fetchone()[0]
        if not n_msg:
            return {"messages": 0, "sentences": 0, "edges": 0, "vectors": 0, "threads": ()}
        # every statement names the scope (a store sharded by scope reads one shard): the ids in _del are
        # the scope's, and so are the rows that reference them
        sc = (scope_id,)
        threads = tuple(
            r[0]
            for r in self.conn.execute(
                "SELECT DISTINCT thread FROM messages WHERE scope_id = ? AND id IN (SELECT id FROM _del) ORDER BY thread",
                sc,
            )
        )
        n_sent = self.conn.execute(
            "SELECT COUNT(*) FROM sentences WHERE scope_id = ? AND message_id IN (SELECT id FROM _del)", sc
        ).fetchone()[0]
        dead_sentences = "SELECT s.id FROM sentences s JOIN _del d ON s.message_id = d.id WHERE s.scope_id = ?"
        n_sedges = self.conn.execute(
            f"SELECT COUNT(*) FROM sentence_edges WHERE scope_id = ? AND (src IN ({dead_sentences}) "
            f"OR dst IN ({dead_sentences}))",
            (scope_id, scope_id, scope_id),
        ).fetchone()[0]
        n_tedges = self.conn.execute(
            "SELECT COUNT(*) FROM turn_edges WHERE scope_id = ? AND (src IN (SELECT id FROM _del) "
            "OR dst IN (SELECT id FROM _del))",
            sc,
        ).fetchone()[0]
        # bridge the chronological chain over deleted turns: prev -> next
        bridges = self.conn.execute(
            """
            WITH RECURSIVE walk(start, cur) AS (
                SELECT e.src, e.dst FROM turn_edges e
                 WHERE e.scope_id = ? AND e.src NOT IN (SELECT id FROM _del) AND e.dst IN (SELECT id FROM _del)
                UNION
                SELECT w.start, e.dst FROM walk w JOIN turn_edges e ON e.src = w.cur
                 WHERE e.scope_id = ? AND w.cur IN (SELECT id FROM _del)
            )
            SELECT start, cur FROM walk WHERE cur NOT IN (SELECT id FROM _del)
            """,
            (scope_id, scope_id),
        ).fetchall()
        self.conn.execute(
            f"DELETE FROM sentence_edges WHERE scope_id = ? AND src IN ({dead_sentences})", (scope_id, scope_id)
        )
        self.conn.execute(
            f"DELETE FROM sentence_edges WHERE scope_id = ? AND dst IN ({dead_sentences})", (scope_id, scope_id)
        )
        self.conn.execute("DELETE FROM sentences WHERE scope_id = ? AND message_id IN (SELECT id FROM _del)", sc)
        self.conn.execute(
            "DELETE FROM turn_edges WHERE scope_id = ? AND (src IN (SELECT id FROM _del) OR dst IN (SELECT id FROM _del))",
            sc,
        )
        self.conn.execute("DELETE FROM messages WHERE scope_id = ? AND id IN (SELECT id FROM _del)", sc)
        self.insert_turn_edges(scope_id, [(int(a), int(b)) for a, b in bridges])
        self.conn.execute("DELETE FROM _del")
        return {
            "messages": int(n_msg),
            "sentences": int(n_sent),
            "edges": int(n_sedges + n_tedges),
            # one vector per turn and per sentence
            "vectors": int(n_msg + n_sent),
            "threads": threads,
        }

    def has_messages(self, scope_id: int) -> bool:
        """Whether the scope still holds a message."""
        row = self.conn.execute("SELECT 1 FROM messages WHERE scope_id = ? LIMIT 1", (scope_id,)).fetchone()
        return row is not None

    def purge_scope(self, scope_id: int) -> int:
        """Remove every row of an emptied scope from every table, then the scope row; return rows removed.

        Must run inside :meth:`write`. Works from the schema itself (every table
        with a ``scope_id`` column, including tables of later migrations), so
        no derived record — or the scope's name — outlives the scope's data.
        """
        tables = [
            r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'scopes'")
        ]
        pending = [t for t in tables if "scope_id" in {c[1] for c in self.conn.execute(f'PRAGMA table_info("{t}")')}]
        removed = 0
        for _ in range(len(pending) + 1):  # a parent table may have to wait until its children are emptied
            failed = []
            for table in pending:
                try:
                    removed += self.conn.execute(f'DELETE FROM "{table}" WHERE scope_id = ?', (scope_id,)).rowcount
                except sqlite3.IntegrityError:
                    failed.append(table)
            if not failed:
                break
            pending = failed
        else:
            raise StoreError(f"could not delete scope {scope_id}: rows in {pending} still reference it")
        self.conn.execute("DELETE FROM scopes WHERE id = ?", (scope_id,))
        return removed

    # ----------------------------------------------------------------- stats
    def scope_stats(self, scope_id: int, name: str) -> ScopeStats:
        """Counts for one scope."""
        q = self.conn.execute
        threads, sessions, messages, tokens = q(
            "SELECT COUNT(DISTINCT thread), COUNT(DISTINCT session), COUNT(*), COALESCE(SUM(tokens), 0) "
            "FROM messages WHERE scope_id = ?",
            (scope_id,),
        ).fetchone()
        sentences = q("SELECT COUNT(*) FROM sentences WHERE scope_id = ?", (scope_id,)).fetchone()[0]
        sedges = q("SELECT COUNT(*) FROM sentence_edges WHERE scope_id = ?", (scope_id,)).fetchone()[0]
        tedges = q("SELECT COUNT(*) FROM turn_edges WHERE scope_id = ?", (scope_id,)).fetchone()[0]
        return ScopeStats(
            scope=name,
            threads=int(threads),
            sessions=int(sessions),
            messages=int(messages),
            sentences=int(sentences),
            similarity_edges=int(sedges),
            chronological_edges=int(tedges),
            tokens=int(tokens),
        )

    def require_scope(self, name: str) -> int:
        """The scope's id, or :class:`NotFoundError`."""
        sid = self.scope_id(name)
        if sid is None:
            raise NotFoundError(f"scope {name!r} holds no memories; add messages to it first.")
        return sid
