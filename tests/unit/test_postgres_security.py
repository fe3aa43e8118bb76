"""Row security on a PostgreSQL store, as an ordinary role would meet it (issue 29, item 1).

Each test logs in as a fresh ordinary role with a password over TCP (the
superuser the suite connects as bypasses row security): every table holding a
scope's rows shows nothing without a scope, a pooled connection keeps no scope
after ``close()``, threads of one ``Memory`` each read their own scope, and under
the signed form (``Config.pg_scope_key``) a client that sets ``sgmem.scope``
itself still reads nothing.
"""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest

import sgmem
from sgmem.store.postgres import scope_token
from tests.pg import makes_its_own_tables

from .helpers import HashEmbedder

pytestmark = pytest.mark.postgres

PLAIN = sgmem.Config(pg_row_security=True, min_relevance=0)
KEY = "a-test-scope-key-" + "x" * 16
SIGNED = PLAIN.with_(pg_scope_key=KEY)
ALICE = ["alice keeps a red bicycle", "alice grows tomatoes"]
BOB = ["bob owns a blue canoe", "bob plays the cello"]
# tables that hold no scope's rows (the schema's bookkeeping and the signed form's keys, which no role but the
# owner reads: tested apart)
UNSCOPED = {"meta", "migrations", "sgmem_scope_keys"}


@dataclass
class Role:
    """An ordinary login role and the URLs it connects with (TCP, password)."""

    name: str
    password: str
    url: str  # postgresql://role:pw@127.0.0.1:port/db?options=-csearch_path...

    def connect(self):  # type: ignore[no-untyped-def]
        import psycopg

        return psycopg.connect(self.url, autocommit=True)


def _schema(pg_url: str) -> str:
    return parse_qs(urlsplit(pg_url).query)["options"][0].split("=", 1)[1].split(",")[0]


@pytest.fixture
def fake() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def app_role(pg_url: str) -> Iterator[Role]:
    """A LOGIN role with a password and plain table grants on the test schema (granted when ``grant()`` runs)."""
    import psycopg

    name = f"sgmem_app_{uuid.uuid4().hex[:10]}"
    password = secrets.token_hex(12)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
        db = admin.execute("SELECT current_database()").fetchone()[0]
        port = admin.execute("SHOW port").fetchone()[0]
    query = "&".join(p for p in urlsplit(pg_url).query.split("&") if p.startswith("options="))  # no socket host
    role = Role(name, password, f"postgresql://{name}:{password}@127.0.0.1:{port}/{db}?{query}")
    try:
        yield role
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{name}"')
            admin.execute(f'DROP ROLE "{name}"')


def _grant(pg_url: str, role: Role) -> None:
    """What a DBA typically grants an app role: everything on every table of the schema (the keys table too)."""
    import psycopg

    schema = _schema(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role.name}"')
        admin.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA "{schema}" TO "{role.name}"')
        admin.execute(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role.name}"')


def _fill(url: str, fake: HashEmbedder, config: sgmem.Config) -> None:
    """As the tables' owner: two scopes, each with generated memory and a superseded version of it."""
    import psycopg

    with sgmem.Memory(url, embedder=fake, config=config) as mem:
        mem.add([{"role": "user", "content": t} for t in ALICE], scope="alice", thread="t")
        mem.add([{"role": "user", "content": t} for t in BOB], scope="bob", thread="t")
    with psycopg.connect(url, autocommit=True) as owner:  # a superseded version per fact (as a merge keeps one)
        owner.execute(
            "INSERT INTO derived_versions (scope_id, memory_id, version, text, vec, cause, at, recorded_at, sources) "
            "SELECT scope_id, id, 0, text || ' (old)', vec, 'add', at, at, '[]' FROM derived"
        )
        counts = owner.execute(
            "SELECT (SELECT COUNT(*) FROM derived_sources), (SELECT COUNT(*) FROM derived_versions)"
        ).fetchone()
    assert counts[0] > 0 and counts[1] > 0, "the owner's adds made generated memory with sources and versions"


def _tables(conn) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE' ORDER BY table_name"
        )
    ]


def _visible(conn) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Rows this connection sees in every table that holds scope rows."""
    return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in _tables(conn) if t not in UNSCOPED}


@makes_its_own_tables
@pytest.mark.parametrize("before", ["row security first", "partitions first"])
def test_a_partition_read_directly_shows_only_the_scope_set(
    pg_url: str, fake: HashEmbedder, app_role: Role, before: str
) -> None:
    """A store partitioned by scope (sgmem.store.partition): a client that reads a partition itself, not through
    its parent, still sees no scope's rows without sgmem.scope, and only that scope's with it."""
    from sgmem.store.partition import partition_by_scope

    if before == "partitions first":
        partition_by_scope(pg_url, partitions=4)
        _fill(pg_url, fake, PLAIN)
    else:  # the policies exist when the tables are partitioned: each partition gets them
        with sgmem.Memory(pg_url, embedder=fake, config=PLAIN):
            pass
        partition_by_scope(pg_url, partitions=4)
        _fill(pg_url, fake, PLAIN)
    _grant(pg_url, app_role)
    with app_role.connect() as c:
        parts = [t for t in _tables(c) if t.startswith("messages_p")]
        assert len(parts) == 4
        seen = _visible(c)
        assert seen == dict.fromkeys(seen, 0), f"rows visible with no sgmem.scope: {seen}"
        c.execute("SELECT set_config('sgmem.scope', 'bob', false)")
        texts = {r[0] for p in parts for r in c.execute(f'SELECT content FROM "{p}"')}
        assert texts == set(BOB)


def test_every_table_of_scope_rows_shows_nothing_without_a_scope(
    pg_url: str, fake: HashEmbedder, app_role: Role
) -> None:
    """derived_sources and derived_versions (the scope's memories' links and versions) are guarded like every
    other table."""
    _fill(pg_url, fake, PLAIN)
    _grant(pg_url, app_role)
    with app_role.connect() as c:
        seen = _visible(c)
        assert {"derived_sources", "derived_versions", "messages", "scopes"} <= set(seen)
        assert seen == dict.fromkeys(seen, 0), f"rows visible with no sgmem.scope: {seen}"
        c.execute("SELECT set_config('sgmem.scope', 'bob', false)")  # the plain form: bob's rows only
        bob_sources = c.execute(
            "SELECT COUNT(*) FROM derived_sources s JOIN derived d ON d.id = s.memory_id"
        ).fetchone()[0]
        assert c.execute("SELECT COUNT(*) FROM derived_sources").fetchone()[0] == bob_sources > 0
        assert {r[0] for r in c.execute("SELECT text FROM derived_versions")} <= {
            r[0] + " (old)" for r in c.execute("SELECT text FROM derived")
        }
        policies = {r[0] for r in c.execute("SELECT tablename FROM pg_policies WHERE schemaname = current_schema()")}
        assert set(_tables(c)) - UNSCOPED <= policies, "a table of scope rows has no policy"
    with sgmem.Memory(app_role.url, embedder=fake, config=PLAIN) as app:  # sgmem's own reads of them still work
        (alice,) = app.stats(scope="alice").scopes
        assert alice.messages == len(ALICE)
        mid = app._store.conn.execute("SELECT id, kind FROM derived LIMIT 1").fetchone()  # alice's (this thread's)
        history = app.history(f"{mid[1]}:{mid[0]}", scope="alice")
        assert history[0].text.endswith("(old)") and len(history) == 2


def test_a_pooled_connection_keeps_no_scope_after_close(pg_url: str, fake: HashEmbedder, app_role: Role) -> None:
    from psycopg_pool import ConnectionPool

    _fill(pg_url, fake, PLAIN)
    _grant(pg_url, app_role)
    with ConnectionPool(app_role.url, min_size=1, max_size=1, open=True) as pool:
        with sgmem.Memory(pool, embedder=fake, config=PLAIN) as mem:
            assert [m.content for m in mem.messages(scope="bob")] == BOB
            assert mem.scopes() == ["bob"]
        with pool.connection() as conn:  # the next borrower of the same connection
            conn.autocommit = True
            assert conn.execute("SELECT current_setting('sgmem.scope', true)").fetchone()[0] in (None, "")
            seen = _visible(conn)
            assert seen == dict.fromkeys(seen, 0), f"the next borrower read the last scope's rows: {seen}"


def test_threads_of_one_memory_each_read_their_own_scope(pg_url: str, fake: HashEmbedder, app_role: Role) -> None:
    """A thread's read never runs inside, nor changes the scope of, another thread's transaction."""
    _fill(pg_url, fake, PLAIN)
    _grant(pg_url, app_role)
    with sgmem.Memory(app_role.url, embedder=fake, config=PLAIN) as app:
        store = app._store
        alice = store.scope_id("alice")
        got: list[list[str]] = []
        other = threading.Thread(target=lambda: got.append([m.content for m in app.messages(scope="bob")]))
        with store.read():  # this thread's snapshot of alice, open while the other thread reads bob
            other.start()
            other.join(timeout=2.0)  # today it waits for this transaction; before the fix it ran inside it
            inside = [m.content for m in store.messages(alice, None, None)]
        other.join()
        assert inside == ALICE, "another thread's scope leaked into this thread's transaction"
        assert got == [BOB]

        failures: list[object] = []

        def probe(scope: str, want: list[str], word: str) -> None:  # reads of its scope, and writes to another
            own = f"{scope}-{threading.get_ident()}"
            added: list[str] = []
            for i in range(12):
                added.append(f"{own} wrote note {i}")
                app.add([{"role": "user", "content": added[-1]}], scope=own, thread="t")
                texts = [m.content for m in app.messages(scope=scope)]
                found = {h.text for h in app.search(word, scope=scope, k=5)}
                stats = app.stats(scope=scope).scopes
                mine = [m.content for m in app.messages(scope=own)]
                if texts != want or not found <= set(want) or not found or [s.messages for s in stats] != [2]:
                    failures.append((scope, texts, found, stats))
                    return
                if mine != added:
                    failures.append((own, mine))
                    return

        runs = [
            threading.Thread(target=probe, args=(s, w, q))
            for s, w, q in (("alice", ALICE, "bicycle"), ("bob", BOB, "canoe")) * 2
        ]
        for t in runs:
            t.start()
        for t in runs:
            t.join()
        assert failures == []


def test_the_signed_form_stops_a_client_that_sets_the_scope_itself(
    pg_url: str, fake: HashEmbedder, app_role: Role
) -> None:
    _fill(pg_url, fake, PLAIN)
    _grant(pg_url, app_role)
    with app_role.connect() as c:  # the plain form trusts the setting: this is the hole the signed form closes
        c.execute("SELECT set_config('sgmem.scope', 'bob', false)")
        assert {r[0] for r in c.execute("SELECT content FROM messages")} == set(BOB)
    with pytest.raises(sgmem.StoreError, match="tables' owner"):  # an app role cannot switch the policies
        sgmem.Memory(app_role.url, embedder=fake, config=SIGNED)
    with sgmem.Memory(pg_url, embedder=fake, config=SIGNED):  # the owner, with the key: the policies switch
        pass
    _grant(pg_url, app_role)  # a DBA's GRANT ALL ON ALL TABLES now covers the keys table too
    with app_role.connect() as c:
        forged = secrets.token_hex(32) + ":bob"
        for value in ("bob", forged, scope_token("another key of 16+ chars", "bob")):
            c.execute("SELECT set_config('sgmem.scope', %s, false)", (value,))
            seen = _visible(c)
            assert seen == dict.fromkeys(seen, 0), f"sgmem.scope={value!r} read {seen}"
        assert c.execute("SELECT COUNT(*) FROM sgmem_scope_keys").fetchone()[0] == 0, "the keys are readable"
        c.execute("SELECT set_config('sgmem.scope', %s, false)", (scope_token(KEY, "bob"),))
        assert {r[0] for r in c.execute("SELECT content FROM messages")} == set(BOB), "the key's token reads bob"
    with sgmem.Memory(app_role.url, embedder=fake, config=SIGNED) as app:
        assert [m.content for m in app.messages(scope="alice")] == ALICE
        assert {h.text for h in app.search("canoe", scope="bob", k=5)} <= set(BOB)
        app.add([{"role": "user", "content": "carol paints"}], scope="carol", thread="t")
        assert [m.content for m in app.messages(scope="carol")] == ["carol paints"]
        app.delete(scope="bob")
        assert app.messages(scope="bob") == []
    new_key = SIGNED.with_(pg_scope_key="the-next-scope-key-0001")
    for config, needle in ((new_key, "not the key"), (PLAIN, "signed")):
        with pytest.raises(sgmem.StoreError, match=needle):
            sgmem.Memory(app_role.url, embedder=fake, config=config)
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as owner:  # rotation, as docs/privacy.md says
        owner.execute("DELETE FROM sgmem_scope_keys")
    with sgmem.Memory(pg_url, embedder=fake, config=new_key):
        pass
    with pytest.raises(sgmem.StoreError, match="not the key"):
        sgmem.Memory(app_role.url, embedder=fake, config=SIGNED)
    with sgmem.Memory(app_role.url, embedder=fake, config=new_key) as app:
        assert [m.content for m in app.messages(scope="alice")] == ALICE


def test_a_table_row_security_cannot_guard_is_refused_at_opening(pg_url: str, fake: HashEmbedder) -> None:
    """A table with no scope_id and no known parent would be left readable: opening with row security refuses."""
    import psycopg

    with sgmem.Memory(pg_url, embedder=fake, config=PLAIN):
        pass
    with psycopg.connect(pg_url, autocommit=True) as owner:
        owner.execute("CREATE TABLE notes_added_later (id BIGINT PRIMARY KEY, text TEXT)")
    with pytest.raises(sgmem.StoreError, match="notes_added_later"):
        sgmem.Memory(pg_url, embedder=fake, config=PLAIN)


def test_a_scope_key_needs_row_security_and_stays_out_of_repr() -> None:
    with pytest.raises(sgmem.ConfigError, match="pg_row_security"):
        sgmem.Config(pg_scope_key=KEY)
    with pytest.raises(sgmem.ConfigError, match="16 characters"):
        sgmem.Config(pg_row_security=True, pg_scope_key="short")
    assert KEY not in repr(SIGNED)


ENTITY_TURNS = {
    s: [{"role": "user", "content": f"On Monday {s.title()} met Doctor Okafor{s} in Lisbon{s} with Marisol{s}."}]
    for s in ("alice", "bob", "carol")
}


def _entities_per_scope(mem: sgmem.Memory, scopes: tuple[str, ...]) -> None:
    for s in scopes:
        mem.add(ENTITY_TURNS[s], scope=s, thread="t")
    for s in scopes:
        hits = mem.search(f"Marisol{s}", scope=s, k=3, mode="entity")
        assert [h.text for h in hits][:1] == [ENTITY_TURNS[s][0]["content"]], (s, hits)


def test_every_scope_adds_entities_under_row_security(pg_url: str, fake: HashEmbedder, app_role: Role) -> None:
    """A writer sees only its scope's entities: ids it computed from them collided with other scopes' rows."""
    config = PLAIN.with_(entities=sgmem.EntityConfig(enabled=True))
    with sgmem.Memory(pg_url, embedder=fake, config=config):
        pass  # the owner sets up the tables and policies
    _grant(pg_url, app_role)
    with sgmem.Memory(app_role.url, embedder=fake, config=config) as mem:
        _entities_per_scope(mem, ("alice", "bob", "carol"))


@makes_its_own_tables  # an ordinary role creates them
def test_a_store_owned_by_an_ordinary_role_migrates_its_entity_ids_under_row_security(
    pg_url: str, fake: HashEmbedder, app_role: Role
) -> None:
    """The owner is subject to its forced policies: the migration still continues after every scope's ids."""
    import psycopg

    config = SIGNED.with_(entities=sgmem.EntityConfig(enabled=True))
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'GRANT USAGE, CREATE ON SCHEMA "{_schema(pg_url)}" TO "{app_role.name}"')
    with sgmem.Memory(app_role.url, embedder=fake, config=config) as mem:  # the role owns the tables
        _entities_per_scope(mem, ("alice", "bob"))
    with psycopg.connect(pg_url, autocommit=True) as admin:  # back to the schema before entity ids were drawn
        for table in ("entities", "entity_communities"):
            admin.execute(f"ALTER TABLE {table} ALTER COLUMN id DROP IDENTITY")
        admin.execute("DELETE FROM migrations WHERE name = '0009_entity_ids'")
    with sgmem.Memory(app_role.url, embedder=fake, config=config) as mem:
        _entities_per_scope(mem, ("carol",))
        for s in ("alice", "bob"):
            assert mem.search(f"Marisol{s}", scope=s, k=3, mode="entity")
    with psycopg.connect(pg_url, autocommit=True) as admin:
        forced = admin.execute(
            "SELECT bool_and(relforcerowsecurity) FROM pg_class WHERE oid IN ('entities'::regclass, "
            "'entity_communities'::regclass)"
        ).fetchone()[0]
    assert forced, "the migration left the entity tables' row security forced"


# scope names a client might guess; "alice" and "bob" hold rows (_fill)
GUESSES = ("alice", "bob", "carol", "admin", "default", "user-1")


def _old_scope_lock_keys(conn) -> set[int]:  # type: ignore[no-untyped-def]
    """``pg_locks.objid`` of the advisory keys anyone could compute from a scope name (hashtext, as before)."""
    return {int(conn.execute("SELECT hashtext(%s)", (f"sgmem.scope:{n}",)).fetchone()[0]) & 0xFFFFFFFF for n in GUESSES}


def test_pg_locks_shows_a_keyless_client_no_scope_a_host_writes(
    pg_url: str, fake: HashEmbedder, app_role: Role
) -> None:
    """While a host is inside a write of scope "alice", a client of the same role without the key reads pg_locks."""
    _fill(pg_url, fake, SIGNED)
    _grant(pg_url, app_role)
    with sgmem.Memory(app_role.url, embedder=fake, config=SIGNED) as mem, app_role.connect() as spy:
        store = mem._store
        writer = store._raw.execute("SELECT pg_backend_pid()").fetchone()[0]
        with store.write():
            assert store.scope_id("alice") is not None  # this host now holds alice's write lock
            locks = spy.execute("SELECT locktype, classid, objid, pid FROM pg_locks").fetchall()
            guessed = _old_scope_lock_keys(spy)
    assert any(pid == writer for *_, pid in locks), "the writer's locks are listed"
    advisory = [r for r in locks if r[0] == "advisory"]
    assert not [r for r in advisory if int(r[2]) in guessed], f"pg_locks names a guessed scope: {advisory}"
    assert not [r for r in advisory if r[3] == writer], f"the write holds an advisory lock: {advisory}"


def test_a_keyless_client_blocks_neither_a_scopes_writes_nor_the_opening(
    pg_url: str, fake: HashEmbedder, app_role: Role
) -> None:
    """A client of the app's role without the key takes every lock it can name; hosts open and write regardless."""
    _fill(pg_url, fake, SIGNED)
    _grant(pg_url, app_role)
    quick = SIGNED.with_(busy_timeout_s=2.0)  # a blocked host fails in 2 s with StoreBusyError
    with app_role.connect() as spy:
        spy.execute("SELECT pg_advisory_lock(%s, %s)", (0x53474D, 0))  # sgmem's schema lock without a key
        for key in _old_scope_lock_keys(spy):
            spy.execute("SELECT pg_advisory_lock(%s, %s)", (0x53474D, key - (1 << 32) if key >= 1 << 31 else key))
        spy.execute("BEGIN")
        for name in GUESSES:  # the scopes' rows: with the plain setting, or a forged token, it sees none to lock
            for setting in (name, "0" * 64 + ":" + name):
                spy.execute("SELECT set_config('sgmem.scope', %s, true)", (setting,))
                assert spy.execute("SELECT id FROM scopes FOR NO KEY UPDATE").fetchall() == []
        with sgmem.Memory(app_role.url, embedder=fake, config=quick) as mem:  # opening: no lock to wait for
            mem.add([{"role": "user", "content": "alice adopted a parrot"}], scope="alice", thread="t")
            mem.add([{"role": "user", "content": "carol is new here"}], scope="carol", thread="t")
            assert [m.content for m in mem.messages(scope="carol")] == ["carol is new here"]
            assert "alice adopted a parrot" in [m.content for m in mem.messages(scope="alice")]
        spy.execute("ROLLBACK")


def test_the_limit_a_client_that_may_write_a_table_can_lock_it_for_every_scope(
    pg_url: str, fake: HashEmbedder, app_role: Role
) -> None:
    """What PostgreSQL lets any role with write grants do (docs/postgres.md, "What the locks stop"): ``LOCK TABLE``
    stops every scope's writes while it lasts; writers fail after ``busy_timeout_s``, store nothing, reads go on."""
    _fill(pg_url, fake, SIGNED)
    _grant(pg_url, app_role)
    with sgmem.Memory(app_role.url, embedder=fake, config=SIGNED.with_(busy_timeout_s=1.0)) as mem:
        with app_role.connect() as spy:
            spy.execute("BEGIN")
            spy.execute("LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE")  # needs no key, only the grant
            with pytest.raises(sgmem.StoreBusyError, match="busy_timeout_s"):
                mem.add([{"role": "user", "content": "blocked while locked"}], scope="bob", thread="t")
            assert [m.content for m in mem.messages(scope="bob")] == BOB
            spy.execute("ROLLBACK")
        mem.add([{"role": "user", "content": "after the lock"}], scope="bob", thread="t")
        assert [m.content for m in mem.messages(scope="bob")] == [*BOB, "after the lock"]
