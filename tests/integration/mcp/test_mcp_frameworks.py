"""``sgmem mcp`` through the frameworks' own MCP clients, each driving an agent with a fake tool-calling model.

LangChain: ``langchain-mcp-adapters`` loads the tools from an SDK session over
stdio into ``create_agent``. LlamaIndex: ``llama-index-tools-mcp``'s
``BasicMCPClient`` and ``McpToolSpec`` over streamable HTTP into a ``FunctionAgent``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.integration.mcp.client import http_server, test_server  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")]


async def test_a_langchain_agent_through_langchain_mcp_adapters(tmp_path: Path) -> None:
    pytest.importorskip("langchain_mcp_adapters")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_mcp_adapters.tools import load_mcp_tools

    from tests.integration.langchain.conftest import RecordingChatModel

    model = RecordingChatModel()
    model.script = [
        AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}])
        for i, (n, a) in enumerate(
            [
                ("remember", {"text": "Alice's sister Maya lives in Porto."}),
                ("recall", {"query": "Where does Maya live?"}),
                ("recall", {"query": ""}),
            ]
        )
    ]
    async with stdio_client(test_server(str(tmp_path / "store"), "alice")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await load_mcp_tools(session)
            assert sorted(t.name for t in tools) == ["context", "forget", "list_threads", "recall", "remember"]
            out = await create_agent(model, tools=tools).ainvoke({"messages": [{"role": "user", "content": "Go."}]})
    msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in msgs] == ["success", "success", "error"]
    assert "Maya lives in Porto" in str(msgs[1].content)
    assert "non-blank" in str(msgs[2].content)


async def test_a_llamaindex_agent_through_llama_index_tools_mcp(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.tools.mcp")
    from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
    from llama_index.core.base.llms.types import ToolCallBlock
    from llama_index.core.llms import ChatMessage
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

    steps = [
        ("remember", {"text": "Alice's sister Maya lives in Porto."}),
        ("recall", {"query": "Where does Maya live?"}),
        ("forget", {"thread": "no-such-thread"}),
    ]
    replies = [
        ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id=f"c{i}", tool_name=n, tool_kwargs=a)])
        for i, (n, a) in enumerate(steps)
    ]

    def model(messages: Any, **kwargs: Any) -> ChatMessage:
        return replies.pop(0) if replies else ChatMessage(role="assistant", content="Done.")

    with http_server(str(tmp_path / "store"), "alice") as url:
        tools = await McpToolSpec(client=BasicMCPClient(url)).to_tool_list_async()
        assert sorted(t.metadata.name for t in tools) == ["context", "forget", "list_threads", "recall", "remember"]
        agent = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=model))
        handler = agent.run("Go.")
        outputs = [ev.tool_output async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
        await handler
    assert not outputs[0].is_error and "Maya lives in Porto" in outputs[1].content
    assert "no-such-thread" in outputs[2].content and "nothing was deleted" in outputs[2].content
