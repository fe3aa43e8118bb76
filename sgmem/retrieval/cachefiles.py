"""The files that cache a scope index next to the database, so that reopening a store does not rebuild it.

Per scope, in the store's ``faiss/`` directory:

* ``scope-<id>.sentences.faiss``: the sentence vectors (a FAISS flat index);
* ``scope-<id>.ann.faiss``: the HNSW links over them, when the scope has them;
* ``scope-<id>.columns``: everything else the index derives from the rows
  (turn and sentence columns, postings, the graph's adjacency and kNN lists,
  dialogue acts, names, the keyword pyramid's vocabulary; :mod:`sgmem.retrieval.snapshot`);
* ``scope-<id>.json``: the metadata, replaced last.

They are a cache of SQLite, written atomically (temporary file + rename) and
owner-only (vectors leak what was said). Opening maps the vectors and the
columns instead of reading them (the flat index is copied into memory of its
own before the first append), and loads the HNSW links only when an add needs
them. A first query after reopening then costs about what a later one does.

Validation, without reading every byte (a digest of 150 MB per 100k sentences
would itself cost about as much as the rebuild it saves): the files are
trusted only when

* the scope's generation and stamp in SQLite equal the recorded ones: every
  write to a scope (add, delete, replace, by any process) bumps the
  generation and draws a new random stamp in its own transaction, so a store
  changed after the save is caught by one read, and so is one that reached the
  same generation by other writes (a restored backup written again, whichever
  rows it changed: the stamp of that write is another);
* each file is the one the metadata recorded: same size, modification time
  (ns) and inode, taken when it was written. A torn save, a file replaced by
  another save, a copy or a truncation changes one of them;
* the files agree with each other (format, library version, scope, dim, row
  counts, the classifier of the stored acts);
* probe rows, the first, middle and last turn and sentence, equal SQLite's
  rows with the same ids (scope, caller id, time, owner, position, stored
  act, vector): files from another database differ there, where the stamps
  cannot tell (both 0: scopes not written since stamps were added).

What is not caught: a byte changed in place with the file's modification
time set back, or a row changed in SQLite by hand (not by an sgmem write, so
with no new stamp) where no probe reads, which take deliberate work by
someone allowed to write the owner's files. The HNSW links, read
only when an add needs them, also keep a digest of their bytes. Anything not
trusted is ignored and the index rebuilt from SQLite, then saved again.

Files are only ever replaced by rename, never truncated or rewritten in place:
a process that maps the old file keeps reading it whole. An outside truncation
of a mapped file would fault its reader, so the docs say to delete cache files
instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..store.batch import ahead
from .snapshot import FORMAT, read_columns, restore_columns, write_columns

if TYPE_CHECKING:
    from .index import ScopeIndex

__all__ = ["digest", "discard_cache", "load_cached", "populate", "save_cached", "write_private"]

_SUFFIXES = (".json", ".turns.faiss", ".sentences.faiss", ".ann.faiss", ".columns")


def _faiss() -> Any:
    import faiss

    return faiss


def digest(data: Any) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def write_private(path: Path, data: Any) -> list[int]:
    """Write ``data`` to ``path`` readable by the owner only (vectors leak what was said); return the file's
    signature (size, modification time in ns, inode), which a rename keeps."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a leftover file keeps its old mode through O_CREAT
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(memoryview(data))
        return _signature(os.fstat(fd))
    finally:
        os.close(fd)


def _signature(st: os.stat_result) -> list[int]:
    return [int(st.st_size), int(st.st_mtime_ns), int(st.st_ino)]


def _put(stem: Path, suffix: str, data: Any) -> list[int]:
    tmp = Path(f"{stem}{suffix}.tmp")
    sig = write_private(tmp, data)
    os.replace(tmp, f"{stem}{suffix}")
    return sig


def save_cached(idx: ScopeIndex, directory: Path, acts_by: str) -> None:
    """Write ``idx``'s cache files (``acts_by``: what classified its stored acts); the metadata last."""
    faiss = _faiss()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    stem = directory / f"scope-{idx.scope_id}"
    files: dict[str, Any] = {}
    ann = idx.ann
    files["sentences"] = _put(stem, ".sentences.faiss", faiss.serialize_index(idx.sent_index))
    digests = {}
    if ann is not None and ann.ntotal == idx.n_sentences:
        links = ann.serialize()
        digests["ann"] = digest(links)
        files["ann"] = _put(stem, ".ann.faiss", links)
    else:
        with contextlib.suppress(OSError):
            os.remove(f"{stem}.ann.faiss")
    files["columns"] = []
    write_columns(Path(f"{stem}.columns.tmp"), idx, lambda p, d: files["columns"].extend(write_private(p, d)))
    os.replace(f"{stem}.columns.tmp", f"{stem}.columns")
    store = idx._store  # the caller checked under the write lock that the index is at the store's generation
    meta = {
        "format": FORMAT,
        "library": __version__,
        "scope_id": idx.scope_id,
        "generation": idx.generation,
        "stamp": store.stamp(idx.scope_id) if store is not None else None,
        "n_turns": idx.n_turns,
        "n_sentences": idx.n_sentences,
        "dim": idx.dim,
        "acts_by": acts_by,
        "files": files,
        "digests": digests,
    }
    _put(stem, ".json", json.dumps(meta).encode())


_MADV_POPULATE_READ = 22  # Linux 5.14+


def populate(arr: np.ndarray) -> None:
    """Map a file-backed array's pages in one call (Linux; elsewhere, or on an older kernel, nothing): the
    first scan of mapped vectors otherwise takes a page fault per few pages (about 30 ms per 100k sentences,
    against 2 ms for this call when the file is in the page cache)."""
    if not sys.platform.startswith("linux") or not arr.nbytes:
        return
    import ctypes
    import mmap

    try:
        start = arr.ctypes.data - arr.ctypes.data % mmap.PAGESIZE
        length = arr.ctypes.data + arr.nbytes - start
        ctypes.CDLL(None).madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), _MADV_POPULATE_READ)
    except (OSError, AttributeError):  # no libc madvise: the pages fault in as read
        pass


def _same_file(path: str, recorded: Any) -> bool:
    try:
        return _signature(os.stat(path)) == recorded
    except OSError:
        return False


def load_cached(
    directory: Path | None, conn: Any, make: Callable[[], ScopeIndex], acts_by: str, *, same_stamp: bool = True
) -> ScopeIndex | None:
    """The scope's index from its cache files if they are current and match SQLite (see the module
    docstring), else None. ``make`` returns an empty index stamped with the scope's generation now (or the
    older generation the caller expects the files at: pass ``same_stamp=False`` then, since every write after
    it drew another stamp; the caller checks the rows since, as a PostgreSQL host's older files are)."""
    if directory is None:
        return None
    idx = make()
    stem = directory / f"scope-{idx.scope_id}"
    try:
        meta = json.loads(Path(f"{stem}.json").read_bytes())
        stamp = (
            conn.execute("SELECT stamp FROM scopes WHERE id = ?", (idx.scope_id,)).fetchone()
            if same_stamp
            else (meta.get("stamp"),)  # files of an older generation: every write since drew another stamp
        )
        expect = {
            "format": FORMAT,
            "library": __version__,
            "scope_id": idx.scope_id,
            "generation": idx.generation,
            "stamp": int(stamp[0]) if stamp else None,
            "dim": idx.dim,
            "acts_by": acts_by,
        }
        if any(meta.get(k) != v for k, v in expect.items()):
            return None
        files = meta.get("files") or {}
        for name, suffix in (("columns", ".columns"), ("sentences", ".sentences.faiss")):
            if not _same_file(f"{stem}{suffix}", files.get(name)):
                return None
        header, arrays = read_columns(Path(f"{stem}.columns"))
        for k in ("scope_id", "generation", "dim", "n_turns", "n_sentences"):
            if header.get(k) != meta.get(k):
                return None
        faiss = _faiss()
        mapping = getattr(faiss, "IO_FLAG_MMAP_IFC", None)  # a FAISS without it reads the vectors instead
        # mapped, the vectors stay in the page cache, shared, until the first append copies them (own_vectors)
        sents = faiss.read_index(f"{stem}.sentences.faiss", *(() if mapping is None else (mapping,)))
        if not isinstance(sents, faiss.IndexFlatIP) or sents.ntotal != meta["n_sentences"] or sents.d != idx.dim:
            return None
        if sents.ntotal and mapping is not None:
            populate(faiss.rev_swig_ptr(sents.get_xb(), sents.ntotal * sents.d))
        restore_columns(idx, header, arrays)
        if idx.n_turns != meta["n_turns"] or idx.n_sentences != meta["n_sentences"]:
            return None
        idx.sent_index = sents
        idx._mapped = mapping is not None
        if not _same_rows(conn, idx):
            return None
    except Exception:  # missing, torn, foreign or corrupt cache files: rebuild from SQLite
        return None
    if "ann" in files:
        path, recorded, expected = f"{stem}.ann.faiss", files["ann"], (meta.get("digests") or {}).get("ann")
        idx._ann_pending = lambda: _load_ann(path, recorded, expected, idx)
    return idx


def _same_rows(conn: Any, idx: ScopeIndex) -> bool:
    """Probe rows (first, middle, last turn and sentence) equal SQLite's rows of the same ids.

    The six reads are sent before any is read (one round trip to a PostgreSQL server, :func:`ahead`)."""
    n, m = idx.n_turns, idx.n_sentences
    msg_ids, ext_ids, at_ts = idx._msg_ids.view(), idx.ext_ids, idx._at_ts.view()
    turns = [
        (r, ahead(conn, "SELECT scope_id, ext_id, at_ts, round_id FROM messages WHERE scope_id = ? AND id = ?",
                  (idx.scope_id, int(msg_ids[r]))))
        for r in (sorted({0, n // 2, n - 1}) if n else ())
    ]  # fmt: skip
    sids, owner, pos, acts = idx._sent_ids.view(), idx._sent_msg.view(), idx._sent_idx.view(), idx._raw_acts.view()
    sents = [
        (r, ahead(conn, "SELECT scope_id, message_id, idx, COALESCE(act, -1), vec FROM sentences "
                  "WHERE scope_id = ? AND id = ?", (idx.scope_id, int(sids[r]))))
        for r in (sorted({0, m // 2, m - 1}) if m else ())
    ]  # fmt: skip
    for r, rows in turns:
        row = next(iter(rows()), None)
        if row is None or tuple(row) != (idx.scope_id, ext_ids[r], float(at_ts[r]), int(idx._round_ids.view()[r])):
            return False
    vecs = idx.sentence_vectors()
    for r, rows in sents:
        row = next(iter(rows()), None)
        if row is None or tuple(row[:4]) != (idx.scope_id, int(msg_ids[owner[r]]), int(pos[r]), int(acts[r])):
            return False
        if not np.array_equal(np.frombuffer(row[4], dtype=np.float32), vecs[r]):
            return False
    return True


def _load_ann(path: str, recorded: Any, expected: Any, idx: ScopeIndex) -> Any:
    """The saved HNSW links if intact and covering exactly the scope's sentences, attached to the index's
    flat storage (the vectors are not stored twice), else None."""
    from .ann import AnnIndex

    try:
        data = Path(path).read_bytes()
        if not _same_file(path, recorded) or digest(data) != expected:
            return None
        hnsw = AnnIndex.read_links(data)
        if not isinstance(hnsw, _faiss().IndexHNSWFlat) or hnsw.d != idx.dim or hnsw.ntotal != idx.n_sentences:
            return None
        if idx.sent_index.ntotal != idx.n_sentences:
            return None
    except Exception:  # missing, torn, or an older format: rebuilt from the vectors when needed
        return None
    m = int(hnsw.hnsw.nb_neighbors(0)) // 2  # level 0 holds 2·M links
    ann = AnnIndex(idx.dim, m, int(hnsw.hnsw.efConstruction), int(hnsw.hnsw.efSearch), index=hnsw)
    ann.attach(idx.sent_index)
    return ann


def discard_cache(directory: Path | None, scope_id: int) -> None:
    """Remove a scope's cache files (after a delete), and the temporary ones a save torn part-way left."""
    if directory is None:
        return
    for suffix in _SUFFIXES:
        for name in (f"scope-{scope_id}{suffix}", f"scope-{scope_id}{suffix}.tmp"):
            with contextlib.suppress(OSError):
                os.remove(directory / name)
