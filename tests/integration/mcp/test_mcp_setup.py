"""``sgmem mcp`` as set up from the docs: the client JSON as written, the server's version and ready line,
HTTP requests checked for Host, Origin and a bearer token, bad options refused before the model loads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import httpx  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402
from mcp.client.stdio import get_default_environment  # noqa: E402

import sgmem  # noqa: E402
from sgmem.mcp import TOKEN_ENV  # noqa: E402
from tests.integration.mcp.client import OFFLINE, PYTHON, ROOT, McpClient, http_server, test_server  # noqa: E402

pytestmark = pytest.mark.integration

DOCS = ROOT / "docs" / "tools-and-mcp.md"
#: Where the docs' example has the README's clone (with its .venv) and the user's store.
DOCS_CLONE = "/home/alice/sgmem"
DOCS_STORE = "/home/alice/.sgmem"

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _docs_client_json() -> dict[str, object]:
    blocks = re.findall(r"```json\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    configs = [json.loads(b) for b in blocks if "mcpServers" in b]
    assert len(configs) == 1, "one client configuration in the MCP docs"
    return configs[0]["mcpServers"]["sgmem"]  # type: ignore[no-any-return,index]


@pytest.mark.slow
def test_the_docs_client_json_starts_the_server_and_lists_the_tools(tmp_path: Path) -> None:
    entry = _docs_client_json()
    command, args = str(entry["command"]), [str(a) for a in entry["args"]]  # type: ignore[union-attr]
    # the README's install is a clone with its .venv: here, this interpreter's environment and this checkout
    assert command.startswith(DOCS_CLONE + "/.venv/bin/"), command
    command = command.replace(DOCS_CLONE + "/.venv", sys.prefix)
    args = [a.replace(DOCS_STORE, str(tmp_path / "store")) for a in args]
    # a client starts it with its own small environment, not the shell's (no activated venv, no PATH to it)
    params = StdioServerParameters(command=command, args=args, env={**get_default_environment(), **OFFLINE}, cwd=ROOT)
    errlog = tmp_path / "stderr.txt"
    client = McpClient(params, errlog=errlog)
    try:
        assert client.init.serverInfo.name == "sgmem"
        assert client.init.serverInfo.version == sgmem.__version__
        assert sorted(t.name for t in client.list_tools().tools) == [
            "context",
            "forget",
            "list_threads",
            "recall",
            "remember",
        ]
    finally:
        client.close()
    err = errlog.read_text(encoding="utf-8")
    assert f"sgmem {sgmem.__version__} mcp: serving scope 'alice'" in err and "ready" in err
    assert "Could not load library" not in err and "ModuleNotFoundError" not in err and "Traceback" not in err


def test_the_server_reports_sgmems_version(tmp_path: Path) -> None:
    client = McpClient(test_server(str(tmp_path / "store"), "alice"))
    try:
        assert client.init.serverInfo.version == sgmem.__version__
    finally:
        client.close()


def test_http_on_any_address_checks_host_origin_and_the_token(tmp_path: Path) -> None:
    token = "correct horse battery staple"
    auth = {"authorization": f"Bearer {token}"}
    with http_server(str(tmp_path / "store"), "alice", "--host", "0.0.0.0", env={TOKEN_ENV: token}) as url:
        port = url.split(":")[2].split("/")[0]
        with httpx.Client(timeout=30) as http:

            def post(**headers: str) -> int:
                return http.post(url, json=INIT, headers={**ACCEPT, **headers}).status_code

            assert post(**auth) == 200
            assert post(**auth, host="evil.example") == 403  # DNS rebinding: another name for this address
            assert post(**auth, host=f"evil.example:{port}") == 403
            assert post(**auth, origin="http://evil.example") == 403
            assert post(**auth, host=f"127.0.0.1:{int(port) + 1}") == 403
            assert post() == 401
            assert post(authorization="Bearer wrong") == 401
            assert post(authorization=token) == 401
            assert post(**auth, origin=f"http://localhost:{port}") == 200
    # a name of the machine's own is let in when the operator names it
    with http_server(
        str(tmp_path / "store"), "alice", "--host", "0.0.0.0", "--allow-host", "mem.lan", env={TOKEN_ENV: token}
    ) as url:
        port = url.split(":")[2].split("/")[0]
        got = httpx.post(url, json=INIT, headers={**ACCEPT, **auth, "host": f"mem.lan:{port}"}, timeout=30)
        assert got.status_code == 200


def test_loopback_http_refuses_another_host_too(tmp_path: Path) -> None:
    with http_server(str(tmp_path / "store"), "alice") as url:
        assert httpx.post(url, json=INIT, headers={**ACCEPT, "host": "evil.example"}, timeout=30).status_code in (
            403,
            421,
        )
        assert httpx.post(url, json=INIT, headers=ACCEPT, timeout=30).status_code == 200


def _sgmem(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SGMEM_SCOPE", "SGMEM_PATH", "SGMEM_STORE", TOKEN_ENV)}
    return subprocess.run(
        [PYTHON, "-m", "sgmem", *args],
        env={**clean, **OFFLINE, **(env or {})},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--transport", "streamable-http", "--host", "0.0.0.0"], TOKEN_ENV),
        (["--transport", "streamable-http", "--host", "192.0.2.7"], TOKEN_ENV),
        (["--transport", "streamable-http", "--port", "99999"], "--port"),
        (["--transport", "streamable-http", "--port", "0"], "--port"),
    ],
)
def test_bad_http_options_are_refused_before_the_model_loads(tmp_path: Path, options: list[str], named: str) -> None:
    store = tmp_path / "store"
    res = _sgmem("mcp", "--scope", "alice", "--path", str(store), *options)
    assert res.returncode == 2 and res.stderr.startswith("sgmem: error:") and named in res.stderr
    assert "Traceback" not in res.stderr and not store.exists()
