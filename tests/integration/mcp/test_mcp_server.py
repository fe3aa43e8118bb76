"""``sgmem mcp`` through the MCP SDK's own client over stdio, on SQLite and on PostgreSQL.

Per backend, two server processes (scope ``alice``) share one store for the
whole module, and a third serves scope ``bob`` of the same store: tests are
ordered only by what each writes (distinct texts), never by each other's
results. The servers run the small test embedder (``server.py``);
``test_mcp_cli.py`` runs the real command with the default MiniLM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mcp")

import sgmem  # noqa: E402
from sgmem.tools import TOOL_NAMES  # noqa: E402
from tests.integration.mcp.client import McpClient, test_server  # noqa: E402
from tests.integration.mcp.server import EMBEDDER  # noqa: E402
from tests.unit.helpers import HashEmbedder  # noqa: E402

pytestmark = pytest.mark.integration


class Servers:
    """Two servers of scope ``alice`` and one of ``bob`` on one store, and a direct reader of that store."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.alice = McpClient(test_server(target, "alice"))
        self.alice2 = McpClient(test_server(target, env={"SGMEM_SCOPE": "alice"}))  # the scope from the environment
        self.bob = McpClient(test_server(target, "bob"))
        self.memory = sgmem.Memory(target, embedder=HashEmbedder(**EMBEDDER))  # type: ignore[arg-type]

    def stored(self) -> dict[str, list[tuple[str | None, str, str | None]]]:
        """Every message of the store, per scope (what a user could observe), read directly."""
        return {s: [(m.id, m.content, m.thread) for m in self.memory.messages(scope=s)] for s in self.memory.scopes()}

    def close(self) -> None:
        for c in (self.alice, self.alice2, self.bob):
            c.close()
        self.memory.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    if request.param == "postgres":
        from tests.pg import schema_on, server_url

        with schema_on(server_url()) as url:
            s = Servers(url)
            try:
                yield s
            finally:
                s.close()
    else:
        s = Servers(str(tmp_path_factory.mktemp("mcp") / "store"))
        try:
            yield s
        finally:
            s.close()


def _texts(result: dict[str, Any]) -> list[str]:
    return [m["text"] for m in result["memories"]]


def test_initialise_and_list_the_five_tools_none_with_a_scope(servers: Servers) -> None:
    assert servers.alice.init.serverInfo.name == "sgmem"
    assert "recall" in (servers.alice.init.instructions or "")
    tools = {t.name: t for t in servers.alice.list_tools().tools}
    assert sorted(tools) == sorted(TOOL_NAMES)
    for t in tools.values():
        assert t.description
        assert "scope" not in t.inputSchema.get("properties", {}), t.name
    assert tools["recall"].annotations.readOnlyHint is True
    assert tools["forget"].annotations.destructiveHint is True
    assert tools["recall"].inputSchema["required"] == ["query"]


def test_remember_then_recall_context_and_list_threads(servers: Servers) -> None:
    stored = servers.alice.ok("remember", {"text": "Alice adopted a grey cat named Miso."})
    assert stored["thread"] == "memories" and stored["stored"] and stored["when"]
    servers.alice.ok("remember", {"text": "Alice trains for the Berlin marathon.", "thread": "running"})

    found = servers.alice.ok("recall", {"query": "cat named Miso", "k": 3})
    top = found["memories"][0]
    assert top["text"] == "Alice adopted a grey cat named Miso."
    assert top["message_ids"] == [stored["stored"]]
    assert top["who"] == "memory" and top["thread"] == "memories" and top["when"] == stored["when"]
    assert "miso" in top["why"].lower()  # why it matched: the best sentence and the matched words

    block = servers.alice.ok("context", {"query": "cat named Miso", "budget_tokens": 200})["context"]
    assert "Miso" in block and "memory:" in block
    assert servers.alice.ok("list_threads")["threads"][:2] == ["memories", "running"]


def test_a_second_server_process_sees_the_first_ones_writes(servers: Servers) -> None:
    stored = servers.alice.ok("remember", {"text": "The spare key is under the blue flowerpot."})
    found = servers.alice2.ok("recall", {"query": "spare key flowerpot"})
    assert found["memories"][0]["message_ids"] == [stored["stored"]]
    # and the second one's delete reaches the first
    assert servers.alice2.ok("forget", {"message_ids": [stored["stored"]]})["forgot"] == 1
    assert "The spare key is under the blue flowerpot." not in _texts(
        servers.alice.ok("recall", {"query": "spare key flowerpot"})
    )


def test_forget_by_id_and_by_thread(servers: Servers) -> None:
    a = servers.alice.ok("remember", {"text": "Alice's dentist is Dr Okafor.", "thread": "health"})
    b = servers.alice.ok("remember", {"text": "Alice is allergic to penicillin.", "thread": "health"})
    assert servers.alice.ok("forget", {"message_ids": [a["stored"]]}) == {"forgot": 1, "message_ids": [a["stored"]]}
    left = [m[0] for m in servers.stored()["alice"]]
    assert a["stored"] not in left and b["stored"] in left
    assert servers.alice.ok("forget", {"thread": "health"}) == {"forgot": 1, "thread": "health"}
    assert "health" not in servers.alice.ok("list_threads")["threads"]


BAD_CALLS = [
    ("remember", {}, "text"),
    ("remember", {"text": ""}, "non-blank"),
    ("remember", {"text": "   "}, "non-blank"),
    ("remember", {"text": "ok", "thread": ""}, "thread"),
    ("remember", {"text": "x" * 200_001}, "max_message_chars"),
    ("recall", {}, "query"),
    ("recall", {"query": ""}, "non-blank"),
    ("recall", {"query": "cat", "k": 0}, "k"),
    ("recall", {"query": "cat", "k": 10_000}, "k"),
    ("recall", {"query": "cat", "k": "many"}, "k"),
    ("context", {"query": "cat", "budget_tokens": 0}, "budget_tokens"),
    ("context", {"query": "  "}, "non-blank"),
    ("forget", {}, "message_ids"),
    ("forget", {"message_ids": []}, "message_ids"),
    ("forget", {"message_ids": ["no-such-id"]}, "no-such-id"),
    ("forget", {"thread": "no-such-thread"}, "no-such-thread"),
    ("forget", {"message_ids": ["x"], "thread": "memories"}, "both message_ids and thread"),
    ("forget", {"message_ids": "abc"}, "message_ids"),
]


@pytest.mark.parametrize(
    ("tool", "args", "named"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)]
)
def test_bad_input_is_a_clear_tool_error_and_changes_nothing(
    servers: Servers, tool: str, args: dict[str, Any], named: str
) -> None:
    servers.alice.ok("remember", {"text": "A memory that bad calls must leave alone."})
    before = servers.stored()
    message = servers.alice.error(tool, args)
    assert named in message, message
    assert servers.stored() == before


def test_forget_with_one_unknown_id_deletes_none_of_them(servers: Servers) -> None:
    kept = servers.alice.ok("remember", {"text": "Alice's locker number is 112."})
    before = servers.stored()
    message = servers.alice.error("forget", {"message_ids": [kept["stored"], "no-such-id"]})
    assert "no-such-id" in message and "nothing was deleted" in message
    assert servers.stored() == before


def test_a_scope_in_the_arguments_cannot_reach_another_scope(servers: Servers) -> None:
    secret = "Bob's bank password is pumpernickel."
    servers.bob.ok("remember", {"text": secret})
    assert secret in _texts(servers.bob.ok("recall", {"query": "Bob bank password"}))
    before = servers.stored()
    for args in (
        {"query": "Bob bank password", "scope": "bob"},
        {"query": "Bob bank password", "scope": "bob", "k": 50},
    ):
        res = servers.alice.call("recall", args)
        assert secret not in str(res.content) and secret not in str(res.structuredContent)
    res = servers.alice.call("context", {"query": "Bob bank password", "scope": "bob"})
    assert "pumpernickel" not in str(res.content)
    res = servers.alice.call("list_threads", {"scope": "bob"})
    bob_id = servers.stored()["bob"][0][0]
    servers.alice.call("forget", {"message_ids": [bob_id], "scope": "bob"})  # not alice's: refused, nothing deleted
    servers.alice.call("remember", {"text": "planted", "scope": "bob"})  # lands in alice's scope, if anywhere
    after = servers.stored()
    assert after["bob"] == before["bob"]
    assert all(m[1] != "planted" for m in after["bob"])


def test_forget_with_100000_unknown_ids_or_a_dict_is_refused_in_a_short_message(servers: Servers) -> None:
    kept = servers.alice.ok("remember", {"text": "Alice's bike lock code is in her notes."})["stored"]
    before = servers.stored()
    too_many = servers.alice.error("forget", {"message_ids": [kept] + [f"unknown-{i}" for i in range(100_000)]})
    assert "max_ids_per_call" in too_many and len(too_many) < 1000, too_many[:2000]
    unknown = servers.alice.error("forget", {"message_ids": [kept] + [f"unknown-{i}" for i in range(5_000)]})
    assert "5000 of the 5001" in unknown and len(unknown) < 1000, unknown[:2000]
    as_dict = servers.alice.error("forget", {"message_ids": {kept: "delete"}})
    assert "message_ids" in as_dict and len(as_dict) < 1000, as_dict
    assert servers.stored() == before
