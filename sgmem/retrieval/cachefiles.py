"""The files that cache a scope index next to the database (FAISS flat and HNSW indexes).

They are a cache of SQLite, written atomically (temporary file + rename),
owner-only, and checked on load: the metadata file, replaced last, records
the scope's generation, row counts, last ids and a digest of each index
file, and a few rows are compared with SQLite's vectors. Anything missing,
torn, stale or from another history of the database is ignored and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .index import ScopeIndex

__all__ = ["digest", "discard_cache", "load_cached", "probes", "write_private"]


def _faiss() -> Any:
    import faiss

    return faiss


def digest(data: Any) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def write_private(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` readable by the owner only (vectors leak what was said)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a leftover file keeps its old mode through O_CREAT
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(memoryview(data))
    finally:
        os.close(fd)


def _read_index(path: str, expected: Any) -> Any:
    """A FAISS index from ``path`` if its bytes match the digest ``expected``, else None."""
    data = Path(path).read_bytes()
    if not isinstance(expected, str) or digest(data) != expected:
        return None
    return _faiss().deserialize_index(np.frombuffer(data, dtype=np.uint8))


def _same_rows(index: Any, vecs: dict[int, np.ndarray]) -> bool:
    """Spot-check: the cached index holds SQLite's vectors at these rows."""
    return all(np.array_equal(index.reconstruct(row), vec) for row, vec in vecs.items())


def load_cached(directory: Path | None, idx: ScopeIndex, probes: dict[int, np.ndarray]) -> tuple[Any, Any] | None:
    """FAISS indexes from disk if they match the scope exactly, else None.

    ``probes`` holds SQLite's vectors at a few rows of each index: a cache
    saved from another history of the database (a restored backup) has the
    right counts and generation but not those vectors.
    """
    if directory is None:
        return None
    stem = directory / f"scope-{idx.scope_id}"
    try:
        meta = json.loads(Path(f"{stem}.json").read_text())
        if (
            meta.get("generation") != idx.generation
            or meta.get("n_turns") != idx.n_turns
            or meta.get("n_sentences") != idx.n_sentences
            or meta.get("dim") != idx.dim
            or meta.get("last_turn_id") != (idx.msg_ids[-1] if idx.msg_ids else 0)
            or meta.get("last_sentence_id") != (idx.sent_ids[-1] if idx.sent_ids else 0)
        ):
            return None
        digests = meta.get("digests") or {}
        sents = _read_index(f"{stem}.sentences.faiss", digests.get("sentences"))
        if sents is None or sents.ntotal != idx.n_sentences or sents.d != idx.dim:
            return None
        if not _same_rows(sents, probes):
            return None
    except Exception:  # missing, torn or corrupt cache files: rebuild from SQLite
        return None
    return sents, _load_ann(f"{stem}.ann.faiss", digests.get("ann"), idx, sents)


def _load_ann(path: str, expected: Any, idx: ScopeIndex, sents: Any) -> Any:
    """The saved HNSW links if intact and covering exactly the scope's sentences, attached to
    ``sents`` (the loaded flat index: the vectors are not stored twice), else None."""
    if expected is None:
        return None
    from .ann import AnnIndex

    try:
        data = Path(path).read_bytes()
        if digest(data) != expected:
            return None
        hnsw = AnnIndex.read_links(data)
        if not isinstance(hnsw, _faiss().IndexHNSWFlat) or hnsw.d != idx.dim or hnsw.ntotal != idx.n_sentences:
            return None
    except Exception:  # missing, torn, or an older format: rebuilt from the vectors when needed
        return None
    m = int(hnsw.hnsw.nb_neighbors(0)) // 2  # level 0 holds 2·M links
    ann = AnnIndex(idx.dim, m, int(hnsw.hnsw.efConstruction), int(hnsw.hnsw.efSearch), index=hnsw)
    ann.attach(sents)
    return ann


def probes(conn: Any, idx: ScopeIndex) -> dict[int, np.ndarray]:
    """SQLite's sentence vectors at the first, middle and last row (turn vectors are derived, not cached)."""
    ids: Sequence[int] = idx.sent_ids
    rows = sorted({0, len(ids) // 2, len(ids) - 1}) if ids else []
    return {
        r: np.frombuffer(conn.execute("SELECT vec FROM sentences WHERE id = ?", (ids[r],)).fetchone()[0], np.float32)
        for r in rows
    }


def discard_cache(directory: Path | None, scope_id: int) -> None:
    """Remove a scope's cache files (after a delete)."""
    if directory is None:
        return
    for suffix in (".json", ".turns.faiss", ".sentences.faiss", ".ann.faiss"):
        with contextlib.suppress(OSError):
            os.remove(directory / f"scope-{scope_id}{suffix}")
