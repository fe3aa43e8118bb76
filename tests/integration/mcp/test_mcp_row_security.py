"""``sgmem mcp`` on a PostgreSQL store with row security, signed form, as an ordinary role would serve it."""

from __future__ import annotations

import os
import subprocess

import pytest

pytest.importorskip("mcp")

import sgmem  # noqa: E402
from sgmem.saved import SCOPE_KEY_ENV  # noqa: E402
from tests.integration.mcp.client import OFFLINE, PYTHON, ROOT, McpClient, server_params  # noqa: E402
from tests.unit.test_postgres_security import SIGNED, Role, _grant, app_role  # noqa: E402, F401  # the fixture

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

KEY = SIGNED.pg_scope_key
assert KEY is not None


def _mcp(url: str, env: dict[str, str]) -> McpClient:
    clean = {k: v for k, v in os.environ.items() if k not in ("SGMEM_SCOPE", "SGMEM_PATH", "SGMEM_STORE")}
    params = server_params(["-m", "sgmem", "mcp", "--store", url, "--scope", "alice"], {**clean, **env})
    return McpClient(params)


def test_mcp_serves_a_signed_row_security_store_by_its_environment(
    pg_url: str,
    embedder: sgmem.Embedder,
    app_role: Role,  # noqa: F811  # the imported fixture
) -> None:
    config = SIGNED.with_(min_relevance=None)
    with sgmem.Memory(pg_url, embedder=embedder, config=config) as owner:  # the tables' owner sets the form up
        owner.add({"role": "user", "content": "Alice keeps a red bicycle in the hall."}, scope="alice", thread="t")
        owner.add({"role": "user", "content": "Bob owns a blue canoe."}, scope="bob", thread="t")
    _grant(pg_url, app_role)
    client = _mcp(app_role.url, {SCOPE_KEY_ENV: KEY})
    try:
        found = client.ok("recall", {"query": "Where does Alice keep her bicycle?"})["memories"]
        assert [m["text"] for m in found] == ["Alice keeps a red bicycle in the hall."]
        assert client.ok("remember", {"text": "Alice's bicycle lock code is 4312."})["stored"]
    finally:
        client.close()
    with sgmem.Memory(pg_url, embedder=embedder, config=config) as owner:
        assert "Alice's bicycle lock code is 4312." in {m.content for m in owner.messages(scope="alice")}
        assert [m.content for m in owner.messages(scope="bob")] == ["Bob owns a blue canoe."]


def test_row_security_options_need_a_postgresql_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for extra, env in ((["--row-security"], {}), ([], {"SGMEM_PG_ROW_SECURITY": "1"}), ([], {SCOPE_KEY_ENV: KEY})):
        res = subprocess.run(
            [PYTHON, "-m", "sgmem", "mcp", "--scope", "a", "--path", str(tmp_path / "s"), *extra],
            env={**os.environ, **OFFLINE, **env},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert res.returncode == 2 and "PostgreSQL" in res.stderr and "Traceback" not in res.stderr
        assert KEY not in res.stderr and not (tmp_path / "s").exists()
