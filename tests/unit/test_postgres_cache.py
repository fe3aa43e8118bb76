"""A PostgreSQL host's own saved indexes (``Config.pg_cache_dir``): cold scopes from local files, never stale.

A host that serves many users meets scopes it does not hold in memory all
the time. With ``pg_cache_dir`` it saves a scope's index on its own disk when
the scope leaves its memory cache and at close, and loads a cold scope from
those files, checked against the server and brought up to date with what
other hosts added since. Another host's delete must never be served from
them: the scope is rebuilt from the server and the files go.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sgmem

from .helpers import HashEmbedder

pytestmark = pytest.mark.postgres

# the statement that rebuilds a scope's index from the server (sgmem.retrieval.loading), and the one that
# appends rows added since (sgmem.retrieval.refresh)
REBUILD = "SELECT id, ext_id, thread, session, round_id, at_ts, tokens, COALESCE(name, role), terms, role FROM messages"
APPEND = "FROM messages WHERE scope_id = %s AND id > %s ORDER BY id"


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    import psycopg

    seen: list[str] = []
    execute = psycopg.Cursor.execute

    def record(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(" ".join(str(query).split()))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", record)
    yield seen


def _config(cache: Path | None, **kw: Any) -> sgmem.Config:
    return sgmem.Config(min_relevance=0.0, pg_cache_dir=None if cache is None else str(cache), **kw)


def _host(url: str, cache: Path | None, **kw: Any) -> sgmem.Memory:
    return sgmem.Memory(url, embedder=HashEmbedder(dim=32), config=_config(cache, **kw))


def _fill(mem: sgmem.Memory, scope: str = "alice", n: int = 30) -> None:
    for i in range(n):
        mem.add(
            [{"role": "user", "content": f"Note {i}: the parcel for order {i} went to depot {i % 7}.", "id": f"n{i}"}],
            scope=scope,
            thread="t",
        )


def _files(cache: Path) -> list[Path]:
    return sorted(cache.glob("store-*/scope-*.json"))


def test_a_cold_scope_is_loaded_from_the_hosts_files_and_the_rows_added_since(
    pg_url: str, tmp_path: Path, statements: list[str]
) -> None:
    with _host(pg_url, tmp_path) as a:
        _fill(a)
    assert len(_files(tmp_path)) == 1, "the host saved the scope's index at close"
    with _host(pg_url, None) as b:  # another host (no local cache) adds
        b.add(
            [{"role": "user", "content": "The kayak arrived at the lighthouse.", "id": "k"}], scope="alice", thread="t"
        )
    statements.clear()
    with _host(pg_url, tmp_path) as a2:  # the first host, restarted: the scope is cold
        hits = a2.search("kayak lighthouse", scope="alice", mode="bm25")
        assert hits[0].message_ids == ("k",)
        assert len(a2.messages(scope="alice")) == 31
        hybrid = a2.search("parcel depot 3", scope="alice")
        assert hybrid and all(h.message_ids for h in hybrid)
    assert not any(REBUILD in s for s in statements), "the scope was rebuilt from the server"
    assert any(APPEND in s for s in statements), "the rows another host added were read"


def test_another_hosts_delete_is_never_served_from_the_files(
    pg_url: str, tmp_path: Path, statements: list[str]
) -> None:
    with _host(pg_url, tmp_path) as a:
        _fill(a)
        before = {h.message_ids for h in a.search("parcel order 4 depot", scope="alice", mode="bm25", k=30)}
    assert ("n4",) in before
    (meta,) = _files(tmp_path)
    with _host(pg_url, None) as b:
        b.delete(scope="alice", message_ids=["n4"])
        b.add([{"role": "user", "content": "A new note about order 99.", "id": "n99"}], scope="alice", thread="t")
    statements.clear()
    with _host(pg_url, tmp_path) as a2:
        got = {h.message_ids for h in a2.search("parcel order 4 depot", scope="alice", mode="bm25", k=30)}
        assert ("n4",) not in got and ("n3",) in got
        assert [m.id for m in a2.messages(scope="alice")][-1] == "n99"
        # the files that held the deleted message went as soon as the host saw the delete
        assert not meta.exists() or b'"generation"' in meta.read_bytes()
        assert any(REBUILD in s for s in statements), "rebuilt from the server"
    # saved again at close, from what the server holds now
    with _host(pg_url, tmp_path) as a3:
        assert ("n4",) not in {h.message_ids for h in a3.search("parcel order 4", scope="alice", mode="bm25", k=30)}


def test_a_scope_leaving_the_memory_cache_is_saved_and_loaded_back(
    pg_url: str, tmp_path: Path, statements: list[str]
) -> None:
    with _host(pg_url, tmp_path, cache_bytes=1) as host:  # holds one scope at a time
        _fill(host, "alice", 12)
        assert _files(tmp_path) == []
        _fill(host, "bob", 12)  # alice leaves the cache: saved
        assert len(_files(tmp_path)) == 1
        statements.clear()
        assert host.search("parcel order 5", scope="alice", mode="bm25")[0].message_ids == ("n5",)
        assert not any(REBUILD in s for s in statements), "alice came back from her files"


def test_a_host_writes_no_file_without_a_cache_dir(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with _host(pg_url, None, cache_bytes=1) as host:
        _fill(host, "alice", 3)
        _fill(host, "bob", 3)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(sgmem.SgmemError, match="pg_cache_dir"):
        sgmem.Config(pg_cache_dir="")
