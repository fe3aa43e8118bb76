"""The MCP server's stderr stays quiet while it serves: no SDK line per tool call (the friction: the SDK logged
"Processing request of type CallToolRequest" at INFO for every call)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.integration.mcp.client import McpClient, test_server  # noqa: E402

pytestmark = pytest.mark.integration


def test_a_served_call_logs_nothing_on_stderr(tmp_path: Path) -> None:
    log = tmp_path / "server.err"
    client = McpClient(test_server(str(tmp_path / "store"), "alice"), errlog=log)
    try:
        client.ok("remember", {"text": "Alice's locker is number 12."})
        client.ok("recall", {"query": "locker"})
        client.ok("list_threads")
    finally:
        client.close()
    text = log.read_text(encoding="utf-8")
    assert "Processing request" not in text, text
    assert "INFO" not in text, text
