"""Cells of notebook 05: an agent that manages its own memory through tools (LangChain, LangMem, LlamaIndex, MCP)."""

from __future__ import annotations

from _cells import Cell, code, md

AGENT_TOOLS: list[Cell] = [
    md("""
# Memory an agent manages itself: tools and MCP

Instead of (or next to) memory injected before every model call, an agent can
call tools to **remember**, **recall**, get a **context** block, **forget**,
and **list threads**. sgmem offers the same five tools everywhere:

| where | what |
|---|---|
| LangChain / LangGraph | `langchain_sgmem.create_memory_tools(mem)` — and LangMem's own tools run on `SGMemStore` |
| LlamaIndex | `llama_index_sgmem.SGMemToolSpec(mem, scope=...)` for `FunctionAgent` / `ReActAgent` |
| any MCP client | `sgmem mcp --path ./memory --scope alice` |

The **scope** (whose memory) is always the operator's: bound at construction,
taken from the run's config or context, or fixed by the server's flag. No tool
has a scope argument, so the model cannot read another user's memory.

Everything runs offline with **scripted fake models** that call the tools.
"""),
    code("""
import os
import tempfile

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage

import sgmem
from langchain_sgmem import SGMemStore, create_memory_tools


class ScriptedChatModel(GenericFakeChatModel):
    \"\"\"A fake chat model that makes the scripted (tool) calls, then answers "Done.".\"\"\"

    script: list[AIMessage] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.messages = iter([self.script.pop(0) if self.script else AIMessage("Done.")])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def bind_tools(self, tools, **kwargs):
        return self


def calls(*steps):
    \"\"\"One model turn per (tool, arguments).\"\"\"
    return [
        AIMessage("", tool_calls=[{"name": n, "args": a, "id": f"call-{i}", "type": "tool_call"}])
        for i, (n, a) in enumerate(steps)
    ]


model = ScriptedChatModel(messages=iter([]))
mem = sgmem.Memory(preload=True)   # in RAM; sgmem.Memory("./memory") persists
"""),
    md("""
## sgmem's LangChain tools

`create_memory_tools(mem)` reads the scope from each run (`context={"scope": ...}`
here, or `config={"configurable": {"scope": ...}}`). The model saves two notes
in one conversation…
"""),
    code("""
agent = create_agent(model, tools=create_memory_tools(mem))


def run(*steps, scope):
    model.script = calls(*steps)
    out = agent.invoke({"messages": [{"role": "user", "content": "..."}]}, context={"scope": scope})
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


for m in run(
    ("remember", {"text": "Priya is vegetarian and allergic to peanuts."}),
    ("remember", {"text": "Priya's sister Maya visits Leeds in June.", "thread": "family"}),
    scope="priya",
):
    print(m.content)
"""),
    md("""
…and recalls them in another. Each memory comes with when it was said, who
said it (`memory`: a note the agent saved), its thread, its id (for `forget`)
and **why** it matched.
"""),
    code("""
[found] = run(("recall", {"query": "What can Priya not eat?", "k": 2}), scope="priya")
print(found.content)
top = found.artifact["memories"][0]          # the structured result rides along as the artifact
assert "peanuts" in top["text"] and top["who"] == "memory"
"""),
    md("""
Another user's run sees nothing of Priya's — even when the model tries to
name her scope in its arguments (arguments a tool does not have are dropped):
"""),
    code("""
[other] = run(("recall", {"query": "What can Priya not eat?", "scope": "priya"}), scope="tomasz")
print(other.content)
assert "peanuts" not in other.content
"""),
    md("""
Bad calls come back to the model as an error message it can act on, and
change nothing stored:
"""),
    code("""
before = mem.messages(scope="priya")
[bad] = run(("forget", {"message_ids": ["no-such-id"]}), scope="priya")
print(bad.status, "·", bad.content)
assert bad.status == "error" and mem.messages(scope="priya") == before

[listed] = run(("list_threads", {}), scope="priya")
print("threads:", listed.content)
"""),
    md("""
## LangMem's tools on sgmem

LangMem's `create_manage_memory_tool` / `create_search_memory_tool` use the
agent's LangGraph store: give it an `SGMemStore` and the memories are sgmem
records (durable, per namespace, deleted for good). The user comes from the
run's config, as LangMem documents.
"""),
    code("""
from langmem import create_manage_memory_tool, create_search_memory_tool

namespace = ("memories", "{langgraph_user_id}")
lm_agent = create_agent(
    model,
    tools=[create_manage_memory_tool(namespace=namespace), create_search_memory_tool(namespace)],
    store=SGMemStore(mem),
)
model.script = calls(
    ("manage_memory", {"content": "Priya prefers morning meetings.", "action": "create"}),
    ("search_memory", {"query": "When does Priya like to meet?", "limit": 1}),
)
out = lm_agent.invoke({"messages": [{"role": "user", "content": "..."}]}, {"configurable": {"langgraph_user_id": "priya"}})
for m in out["messages"]:
    if isinstance(m, ToolMessage):
        print(m.content[:160])
assert "morning meetings" in out["messages"][-2].content
"""),
    md("""
## LlamaIndex: `SGMemToolSpec`

One spec per user (the scope is fixed at construction); its tools go to a
`FunctionAgent` or a `ReActAgent`. The mock model below calls `recall`.
"""),
    code("""
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM

from llama_index_sgmem import SGMemToolSpec

replies = [
    ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="1", tool_name="recall", tool_kwargs={"query": "Maya's visit"})])
]
llm = MockFunctionCallingLLM(
    response_generator=lambda messages, **kw: replies.pop(0) if replies else ChatMessage(role="assistant", content="Done.")
)
li_agent = FunctionAgent(tools=SGMemToolSpec(mem, scope="priya").to_tool_list(), llm=llm)
handler = li_agent.run("When does Maya visit?")
results = [ev.tool_output.content async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
await handler
print(results[0])
assert "June" in results[0]
"""),
    md("""
## MCP: one memory for every MCP client

`sgmem mcp` serves one store (a directory or a `postgresql://` URL) and one
scope over stdio (or `--transport streamable-http`). The model loads once at
start, so each tool call costs milliseconds. Register it in an MCP client's
configuration, e.g.:

```json
{
  "mcpServers": {
    "sgmem": {
      "command": "/home/priya/sgmem/.venv/bin/python",
      "args": ["-m", "sgmem", "mcp", "--path", "/home/priya/.sgmem", "--scope", "priya"]
    }
  }
}
```

with the full path of the Python where sgmem is installed: a client starts
the server without your shell's venv or `PATH`
([docs/tools-and-mcp.md](../docs/tools-and-mcp.md#mcp)).

Here the MCP SDK's own client starts the server on a fresh store and calls
its tools (the server loads MiniLM once, so this cell takes a few seconds):
"""),
    code("""
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

store_dir = tempfile.mkdtemp()
params = StdioServerParameters(
    command=sys.executable,
    args=["-m", "sgmem.cli", "mcp", "--path", store_dir, "--scope", "priya"],
    env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
)
with open(os.devnull, "w") as quiet:   # the server's log
    async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print([t.name for t in (await session.list_tools()).tools])
        await session.call_tool("remember", {"text": "Priya's manager is Tomasz."})
        res = await session.call_tool("recall", {"query": "Who is Priya's manager?"})
        print(res.structuredContent["memories"][0]["text"])
        bad = await session.call_tool("recall", {"query": ""})
        print("error:", bad.isError, bad.content[0].text)
assert res.structuredContent["memories"][0]["text"] == "Priya's manager is Tomasz."
"""),
    code("""
mem.close()
"""),
]
