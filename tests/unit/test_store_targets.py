"""What ``Memory(path)`` makes of a string: no password in any message, nothing created by a refusal.

Issue 29, items 4, 5 and 8: connection strings in any case or form keep their
passwords out of errors, tracebacks, ``repr`` and ``Stats.path``; a libpq
``key=value`` string is a PostgreSQL store, never a directory; odd paths
(``~nouser/x``, ``file:`` URIs) are refused clearly and create nothing; a
server error (a missing schema) is an :class:`sgmem.SgmemError` saying what to do.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

import sgmem
from sgmem.store.pgsql import redact

from .helpers import HashEmbedder

SECRET = "hunter2-Zq9"  # the password in every target below: it must never show


def _everything_said(err: BaseException) -> str:
    """Every text a caller could see of an error: message, repr and the formatted traceback (causes included)."""
    return str(err) + repr(err) + "".join(traceback.format_exception(err))


UNREACHABLE = [  # port 1 on this host refuses connections at once
    f"postgresql://me:{SECRET}@127.0.0.1:1/db",
    f"POSTGRESQL://me:{SECRET}@127.0.0.1:1/db",
    f"Postgres://me:{SECRET}@127.0.0.1:1/db",
    f"postgresql://me:pa/ss{SECRET}@127.0.0.1:1/db",
    f"postgresql://me:p@ss:{SECRET}@127.0.0.1:1/db",
    f"postgresql://me@127.0.0.1:1/db?password={SECRET}&connect_timeout=3",
    f"postgresql://127.0.0.1:1/db?user=me&password={quote(SECRET + '/x', safe='')}",
    f"host=127.0.0.1 port=1 user=me password={SECRET} dbname=db",
    f"host=127.0.0.1 port=1 user=me password='{SECRET} with space' dbname=db",
    f"POSTGRESQL://me:{SECRET}@[::1:1/db",  # malformed: the driver quotes it back
]


@pytest.mark.parametrize("target", UNREACHABLE)
def test_no_password_in_any_connection_error_and_nothing_on_disk(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sgmem.SgmemError) as err:
        sgmem.Memory(target, embedder=HashEmbedder())
    said = _everything_said(err.value)
    assert SECRET not in said and quote(SECRET, safe="") not in said, said
    assert "PostgreSQL" in str(err.value) or "libpq" in str(err.value), str(err.value)
    assert os.listdir(tmp_path) == [], "a connection string was taken for a directory"


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        (f"postgresql://me:pa/ss{SECRET}@db:5432/x", "postgresql://me:***@db:5432/x"),
        (f"postgresql://me:p@ss{SECRET}@db/x", "postgresql://me:***@db/x"),
        (
            f"postgresql://me@db/x?sslmode=require&password={SECRET}",
            "postgresql://me@db/x?sslmode=require&password=***",
        ),
        (f"host=db password={SECRET} dbname=x", "host=db password=*** dbname=x"),
        (f"host=db password = '{SECRET} \\' q' dbname=x", "host=db password = *** dbname=x"),
    ],
)
def test_redaction_hides_the_whole_password(target: str, shown: str) -> None:
    assert redact(target) == shown


ODD_PATHS = ["~nonexistentuser-sgmem/x", "file:/{tmp}/x.db", "file:x.db", "file:///{tmp}/x.db", "sqlite:x"]


@pytest.mark.parametrize("path", ODD_PATHS)
def test_odd_paths_are_refused_and_create_nothing(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = path.format(tmp=str(tmp_path).lstrip("/"))
    with pytest.raises(sgmem.InvalidInputError, match="path") as err:
        sgmem.Memory(path, embedder=HashEmbedder())
    assert "expected" in str(err.value)
    assert os.listdir(tmp_path) == []


def test_a_path_object_is_always_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The way to a directory whose name looks like a URI or a ~user: a pathlib.Path, as the errors say."""
    monkeypatch.chdir(tmp_path)
    with sgmem.Memory(Path("file:x"), embedder=HashEmbedder()) as mem:
        mem.add([{"role": "user", "content": "kept"}], scope="s", thread="t")
    assert (tmp_path / "file:x" / "sgmem.db").is_file()


# ------------------------------------------------------------ with a server


@pytest.mark.postgres
def test_urls_in_any_case_and_libpq_strings_open_the_server_store_without_showing_passwords(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the local socket the server ignores the password: the store opens, and it shows nowhere."""
    monkeypatch.chdir(tmp_path)
    fake = HashEmbedder()
    parts = urlsplit(pg_url)
    options = dict(p.split("=", 1) for p in parts.query.split("&"))
    from urllib.parse import unquote

    conninfo = (
        f"dbname={parts.path.lstrip('/')} host={unquote(options['host'])} password={SECRET} "
        f"options='{unquote(options['options'])}'"
    )
    targets = [
        pg_url.replace("postgresql://", "POSTGRESQL://", 1) + f"&password={SECRET}",
        conninfo,
    ]
    with sgmem.Memory(pg_url, embedder=fake) as mem:
        mem.add([{"role": "user", "content": "stored once"}], scope="s", thread="t")
    for target in targets:
        with sgmem.Memory(target, embedder=fake) as mem:
            assert [m.content for m in mem.messages(scope="s")] == ["stored once"], target
            shown = repr(mem) + str(mem.stats().path)
            assert SECRET not in shown and "***" in shown, shown
    assert os.listdir(tmp_path) == []


@pytest.mark.postgres
def test_a_missing_schema_is_a_store_error_that_says_what_to_do(pg_url: str) -> None:
    from tests.pg import server_url

    url = server_url()  # a search_path of one schema that does not exist (nothing to fall back on)
    url += ("&" if "?" in url else "?") + "options=" + quote("-csearch_path=no_such_schema_sgmem", safe="")
    with pytest.raises(sgmem.StoreError, match="CREATE SCHEMA") as err:
        sgmem.Memory(url, embedder=HashEmbedder())
    assert "search_path" in str(err.value)


@pytest.mark.postgres
def test_a_missing_first_schema_is_refused_not_replaced_by_the_next(pg_url: str) -> None:
    """``search_path=typo,public``: PostgreSQL would create the tables in ``public``; sgmem refuses, creating nothing."""
    import psycopg

    from tests.pg import server_url, with_schema

    def tables() -> int:
        with psycopg.connect(server_url()) as c:
            return int(c.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0])

    before = tables()
    with pytest.raises(sgmem.StoreError, match="CREATE SCHEMA") as err:
        sgmem.Memory(with_schema(server_url(), "no_such_schema_sgmem"), embedder=HashEmbedder())
    assert "no_such_schema_sgmem" in str(err.value)
    assert tables() == before, "sgmem's tables were created in the next schema of the search_path"


@pytest.mark.postgres
def test_every_server_error_is_an_sgmem_error(pg_url: str) -> None:
    """A statement the server refuses (here a table dropped by hand) is a StoreError, not a psycopg error."""
    import psycopg

    fake = HashEmbedder()
    with sgmem.Memory(pg_url, embedder=fake) as mem:
        mem.add([{"role": "user", "content": "before"}], scope="s", thread="t")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("DROP TABLE turn_edges")
        err: Any
        with pytest.raises(sgmem.StoreError) as err:
            mem.add([{"role": "user", "content": "after"}], scope="s", thread="t")
        assert not isinstance(err.value, psycopg.Error)
        assert [m.content for m in mem.messages(scope="s")] == ["before"]
