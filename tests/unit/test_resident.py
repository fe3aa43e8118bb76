"""Resident memory after one-off builds: freed heap pages go back to the OS; keyword postings share row ints."""

from __future__ import annotations

import ctypes.util
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import sgmem
from sgmem.pyramid.retrieve import ensure_keywords
from sgmem.pyramid.vocabulary import load_keywords
from sgmem.retrieval.heap import release_free_heap

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux") or not ctypes.util.find_library("c"), reason="glibc only")
def test_freed_heap_pages_go_back_to_the_operating_system() -> None:
    chunks = [bytes(bytearray(64 * 1024)) for _ in range(1200)]  # 75 MB from the heap (below the mmap threshold)
    pin = bytes(bytearray(64 * 1024))  # a live block above them: glibc cannot shrink the heap by itself
    del chunks
    before = _rss()
    assert release_free_heap()
    assert before - _rss() > 40 * 2**20
    del pin


def test_a_turns_keyword_postings_share_one_row_number(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    path = tmp_path / "store"
    texts = [
        "Caroline painted a sunrise over the lake with watercolors at the art class.",
        "Melanie took the kids camping near the mountains and roasted marshmallows by the campfire.",
        "The pottery workshop taught Caroline glazing techniques for ceramic bowls and vases.",
    ]
    with sgmem.Memory(path, embedder=embedder) as mem:
        for i, text in enumerate(texts):
            mem.add([{"role": "user", "content": text}], scope="s", thread="t", at=T0 + timedelta(hours=i))
    with sgmem.Memory(path, embedder=embedder) as mem:
        sid = mem._store.scope_id("s")
        assert sid is not None
        idx = mem._index(sid)
        assert ensure_keywords(mem._store, idx).turn_kws, "the turns have keywords"
        with mem._store.read() as conn:
            # rows past CPython's small-int cache, as in any scope of a few hundred turns: a new object per call
            kwi = load_keywords(
                conn, sid, idx.dim, lambda mid: None if idx.msg_row(mid) is None else int(str(1000 + idx.msg_row(mid)))
            )
    for row, locals_ in kwi.turn_kws.items():
        assert len(locals_) >= 2
        objs = {id(r) for loc in locals_ for r in kwi.rows[loc] if r == row}
        assert len(objs) == 1  # one int object per turn, not one per posting
