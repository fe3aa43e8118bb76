"""The inspector on a PostgreSQL store with row security, as an ordinary app role opens it (signed form)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

import sgmem  # noqa: E402
from sgmem.saved import SCOPE_KEY_ENV  # noqa: E402
from sgmem.ui import create_app, open_memory  # noqa: E402
from sgmem.ui.guard import allowed_hosts  # noqa: E402
from tests.unit.helpers import HashEmbedder  # noqa: E402
from tests.unit.test_postgres_security import ALICE, BOB, KEY, SIGNED, Role, _fill, _grant, app_role  # noqa: E402, F401

pytestmark = pytest.mark.postgres


def test_row_security_opens_one_scope_as_the_app_does(
    pg_url: str,
    app_role: Role,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = HashEmbedder()
    _fill(pg_url, fake, SIGNED)  # as the tables' owner: the signed policies and two scopes
    _grant(pg_url, app_role)
    with pytest.raises(sgmem.InvalidInputError, match="--scope"):
        open_memory(app_role.url, scope=None, write=False, row_security=True, embedder=fake)
    monkeypatch.delenv(SCOPE_KEY_ENV, raising=False)
    with pytest.raises(sgmem.StoreError, match="signed"):  # without the key the app role reads nothing
        open_memory(app_role.url, scope="alice", write=False, row_security=True, embedder=fake)
    monkeypatch.setenv(SCOPE_KEY_ENV, KEY)
    with open_memory(app_role.url, scope="alice", write=False, row_security=True, embedder=fake) as mem:
        hosts = allowed_hosts("127.0.0.1", 8765)
        client = TestClient(create_app(mem, hosts=hosts, scope="alice"), base_url="http://127.0.0.1:8765")
        home = client.get("/").text
        assert "alice" in home and "bob" not in home
        thread = client.get("/thread", params={"s": "alice", "t": "t"}).text
        assert all(t in thread for t in ALICE) and not any(t in thread for t in BOB)
        assert client.get("/thread", params={"s": "bob", "t": "t"}).status_code == 404
