"""Test doubles and probes shared by the reliability tests.

``FastEmbedder`` is a legitimate implementation of the :class:`sgmem.Embedder`
protocol: a hashed bag of words, unit-normalised. It is deterministic across
processes (no ``hash()`` randomisation) and loads in microseconds, so crash and
concurrency tests can start many writer processes without paying MiniLM's
five-second load each time. Texts that share words get similar vectors, so
search behaves like a (weak) real embedder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import sgmem

_WORD = re.compile(r"\w+", re.UNICODE)

#: The entity layer is opt-in; reliability tests that cover every mode (or the entity tables) switch it on.
ENTITIES = sgmem.Config(entities=sgmem.EntityConfig(enabled=True))
#: The modes a Memory without the entity layer answers (``mode="entity"`` needs it).
DEFAULT_MODES = tuple(m for m in sgmem.MODES if m != "entity")


class FastEmbedder:
    """Hashed bag-of-words embedder (64 dims by default)."""

    def __init__(self, dim: int = 64, name: str = "test-hash-bow-64") -> None:
        self.dim = dim
        self.name = name

    def _slot(self, token: str) -> tuple[int, float]:
        h = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        n = int.from_bytes(h, "little")
        return n % self.dim, 1.0 if (n >> 32) & 1 else -1.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            tokens = _WORD.findall(text.lower()) or [text]
            for tok in tokens:
                j, sign = self._slot(tok)
                out[i, j] += sign
            norm = float(np.linalg.norm(out[i]))
            if norm == 0.0:  # signs cancelled out: fall back to one slot for the whole text
                j, _ = self._slot("\x00" + text)
                out[i, j] = 1.0
            else:
                out[i] /= norm
        return out


def db_path(store: Path) -> Path:
    """The SQLite file inside a store directory."""
    return Path(store) / "sgmem.db"


def raw_tables(conn: sqlite3.Connection) -> list[str]:
    """Every user table of the database (the schema of today and of future migrations)."""
    return [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]


def table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """Column names of ``table``."""
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def raw_dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read with a separate read-only connection."""
    conn = sqlite3.connect(f"file:{db_path(path)}?mode=ro", uri=True)
    try:
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in raw_tables(conn)}
    finally:
        conn.close()


def observable(mem: sgmem.Memory) -> tuple[Any, ...]:
    """Everything a user can observe about what is stored, for before/after checks."""
    stats = mem.stats()
    # the gate's stream counters (step, messages seen, τ, decision tallies) record processing
    # history, not stored data: a successful add followed by its delete advances them by design
    scopes = tuple(
        dataclasses.replace(s, gate={"facts": s.gate.get("facts", 0)} if s.gate else {}) for s in stats.scopes
    )
    return (
        scopes,
        tuple(mem.scopes()),
        tuple((s, tuple(mem.threads(scope=s)), tuple(mem.messages(scope=s))) for s in mem.scopes()),
    )


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check`` findings, minus a known false positive.

    SQLite 3.40.0-3.41.0 reports "NULL value in T.C" for NOT NULL columns of
    WITHOUT ROWID tables whose primary key is not declared first (the edge
    tables); such a finding is dropped only after a direct query shows the
    column really holds no NULL.
    """
    total = sum(conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in raw_tables(conn))
    found = [r[0] for r in conn.execute(f"PRAGMA integrity_check({total + 100})")]
    real = []
    for line in found:
        m = re.fullmatch(r"NULL value in (\w+)\.(\w+)", line)
        if m and conn.execute(f'SELECT COUNT(*) FROM "{m[1]}" WHERE "{m[2]}" IS NULL').fetchone()[0] == 0:
            continue
        if line != "ok":
            real.append(line)
    return real
