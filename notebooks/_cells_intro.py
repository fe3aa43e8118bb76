"""Cells of notebooks 01-03: quickstart, LangChain agent, LlamaIndex (see build.py)."""

from __future__ import annotations

from _cells import Cell, code, md

# ---------------------------------------------------------------------------
QUICKSTART: list[Cell] = [
    md("""
# sgmem quickstart

sgmem is long-term memory for LLM agents: every message is stored verbatim in an
embedded store (SQLite + FAISS, no server, no API key), split into sentences,
linked into a sentence graph, and retrieved with dense, lexical, graph and
conversation-structure signals together.

This notebook adds a multi-session conversation, searches it, builds a prompt
block within a token budget, replays and deletes. It runs offline on a CPU in a
few seconds. `preload=True` loads the bundled MiniLM model and the tokenizer
when the memory is created (a second or two on an idle CPU), so no later call
pays for it; `mem.warmup()` does the same on demand.
"""),
    code("""
import tempfile
from pathlib import Path

import sgmem

workdir = Path(tempfile.mkdtemp(prefix="sgmem-quickstart-"))
mem = sgmem.Memory(workdir / "memory", preload=True)   # a directory; sgmem.Memory() alone keeps everything in RAM
mem
"""),
    md("""
## Add a conversation

A **scope** is whose memory it is (scopes never see each other); a **thread** is
one conversation. Messages are dicts with `role` and `content`, optionally a
speaker `name`, your own `id`, a time `at` and `metadata`. One `add` is one
transaction.
"""),
    code("""
sessions = {
    "2024-03-04-moving": ("2024-03-04T19:12:00Z", [
        {"role": "user", "name": "Priya", "content": "I just moved to Leeds for a job at a robotics start-up called Arkwright Labs."},
        {"role": "assistant", "content": "Congratulations! What will you work on?"},
        {"role": "user", "name": "Priya", "content": "Motion planning for warehouse robots. My manager is Tomasz."},
        {"role": "assistant", "content": "That sounds like a great fit."},
    ]),
    "2024-03-12-running": ("2024-03-12T07:45:00Z", [
        {"role": "user", "name": "Priya", "content": "I signed up for the Leeds half marathon on 19 May. My longest run so far is 12 km."},
        {"role": "assistant", "content": "Nine weeks is enough. Add one kilometre to your long run each week."},
        {"role": "user", "name": "Priya", "content": "My knee hurt after the last run, though. I'm a bit worried."},
    ]),
    "2024-03-25-food": ("2024-03-25T12:30:00Z", [
        {"role": "user", "name": "Priya", "content": "I'm vegetarian and I'm trying to eat more protein for the training."},
        {"role": "assistant", "content": "Lentils, tofu, eggs and Greek yoghurt are easy wins."},
        {"role": "user", "name": "Priya", "content": "Tofu scrambles it is. My sister Anjali visits on Saturday, she loves spicy food."},
    ]),
}
for thread, (at, messages) in sessions.items():
    result = mem.add(messages, scope="priya", thread=thread, at=at)
    print(f"{thread}: {result.messages} messages, {result.sentences} sentences, {result.edges} graph edges, "
          f"{result.timings_ms['total']:.0f} ms")
"""),
    md("""
## Search

`search` returns hits, best first. Each hit carries the message text, its
thread and time, the ids of its source messages and **why** it was found.
"""),
    code("""
hits = mem.search("Who is Priya's manager?", scope="priya", k=3)
for hit in hits:
    print(f"{hit.score:.2f}  [{hit.thread}] {hit.speaker}: {hit.text}")

top = hits[0]
assert "Tomasz" in top.text
print()
print("best sentence:", top.why["sentence"])
print("matched words:", top.why["matched"])
print("channel scores:", top.why["channels"])
"""),
    md("""
Every retrieval mode runs over the same store: `hybrid` (the default), `vector`
(dense baseline), `graph` (SGMem as published), `bm25` and `pyramid` (the
keyword pyramid, MGRetrieval), `sgrm` (segment graph); `entity` needs the
opt-in entity layer (notebook 04). `benchmarks/RESULTS.md` compares them on LoCoMo.
"""),
    code("""
question = "What is worrying Priya about the race?"
for mode in [m for m in sgmem.MODES if m != "entity"]:  # entity: the opt-in layer is off here
    best = mem.search(question, scope="priya", k=1, mode=mode)
    print(f"{mode:>8}: {best[0].text if best else '-'}")
"""),
    md("""
## What a score means, and the relevance cutoff

`hit.score` orders one result list (hybrid sums several channels, so it can
pass 2). `hit.relevance` is the same measure in every mode, in [0, 1]: how close
the query is to the hit's best sentence and to the whole turn. `search` and
`context` drop hits below `min_score` (default 0.3, `Config.min_relevance`), so
a question the memory knows nothing about gets nothing; `min_score=0` returns
the least bad matches anyway.
"""),
    code("""
for question in ("Who is Priya's manager?", "How do I change a car's timing belt?"):
    hits = mem.search(question, scope="priya", k=3)
    print(f"{question!r}: {[(round(h.relevance, 2), h.text[:40]) for h in hits]}")
    print("   with min_score=0:", [round(h.relevance, 2) for h in mem.search(question, scope="priya", k=3, min_score=0)])
assert mem.search("How do I change a car's timing belt?", scope="priya") == []
"""),
    md("""
## A prompt block within a token budget

`context` returns the memories relevant to a query as a chronological, dated,
speaker-labelled block whose exact token count (tiktoken `cl100k_base`) never
exceeds the budget. Put it in your system prompt.
"""),
    code("""
from sgmem.text import count_tokens

block = mem.context("Plan a dinner for Priya's sister", scope="priya", budget_tokens=120)
print(block)
print()
print(count_tokens(block), "tokens (budget 120)")
assert count_tokens(block) <= 120 and "Anjali" in block
"""),
    md("""
## Replay, list, count

Raw messages are the system of record: `messages` replays them exactly, in
order (metadata included).
"""),
    code("""
for m in mem.messages(scope="priya", thread="2024-03-12-running"):
    print(m.at.date(), f"{m.name or m.role}:", m.content)

print(mem.threads(scope="priya"))
stats = mem.stats("priya").scopes[0]
print(f"{stats.messages} messages, {stats.sentences} sentences, {stats.similarity_edges} similarity edges")
"""),
    md("""
Every call has an async twin (`aadd`, `asearch`, `acontext`, `amessages`,
`adelete`, `astats`) that runs in a worker thread:
"""),
    code("""
hits = await mem.asearch("Where does Priya work?", scope="priya", k=1)
hits[0].text
"""),
    md("""
## Delete

Deleting a thread (or given messages, or a whole scope) removes everything
derived from it too — sentences, graph edges, vectors, index caches, generated
facts — and returns a receipt.
"""),
    code("""
receipt = mem.delete(scope="priya", thread="2024-03-12-running")
print(receipt)

left = mem.search("half marathon knee", scope="priya", k=5)
assert not any("knee" in h.text for h in left)
print([h.text for h in left])
"""),
    code("""
mem.close()   # or use `with sgmem.Memory(path) as mem:`
"""),
]

# ---------------------------------------------------------------------------
LANGCHAIN: list[Cell] = [
    md("""
# A LangChain agent with sgmem memory

`SGMemMiddleware` gives a `create_agent` agent long-term memory: before each
model call it appends what sgmem recalls for the latest user message to the
system message, and after the run it stores the new user and assistant
messages. `SGMemStore` is a LangGraph store kept in sgmem; with
`recall_in_chat=True` its items live in the user's scope, so what tools save
there is recalled in chat too (by default store items stay out of chat recall).

This notebook runs offline with a **fake chat model** that answers from a
script and records what it was sent, so we can see the memories arrive.
"""),
    code("""
from dataclasses import dataclass

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

import sgmem
from langchain_sgmem import SGMemMiddleware, SGMemStore
"""),
    md("""
## The model

A scripted fake: it replies with the next message of `script` (default
"Noted!") and keeps every input in `seen`.
"""),
    code("""
class ScriptedChatModel(GenericFakeChatModel):
    \"\"\"A fake chat model that answers from a script and records its inputs.\"\"\"

    script: list[AIMessage] = []
    seen: list[list[BaseMessage]] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        self.messages = iter([self.script.pop(0) if self.script else AIMessage("Noted!")])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def bind_tools(self, tools, **kwargs):
        return self


model = ScriptedChatModel(messages=iter([]))
"""),
    md("""
To use a real model instead, replace the cell above with (any provider
LangChain supports; it needs that provider's package and API key):
"""),
    code("""
# from langchain.chat_models import init_chat_model
# model = init_chat_model("openai:gpt-4.1-mini")
"""),
    md("""
## Memory, store, tool, agent

The run's `context` names the user (`scope`); the checkpointer's `thread_id`
names the conversation. The tool saves a preference in the LangGraph store
under the user's namespace `(scope,)`, which is the same sgmem scope.
"""),
    code("""
mem = sgmem.Memory(preload=True)   # in RAM; sgmem.Memory("./memory") persists; preload: the model loads now
store = SGMemStore(mem, index={"fields": ["text"]}, recall_in_chat=True)


@dataclass
class Context:
    scope: str


@tool
def remember_preference(key: str, preference: str, runtime: ToolRuntime[Context]) -> str:
    \"\"\"Save a lasting preference of the user.\"\"\"
    runtime.store.put((runtime.context.scope,), key, {"text": preference})
    return f"saved {key}"


agent = create_agent(
    model,
    tools=[remember_preference],
    system_prompt="You are a helpful assistant. Be brief.",
    middleware=[SGMemMiddleware(mem, budget_tokens=300)],
    store=store,
    checkpointer=InMemorySaver(),
    context_schema=Context,
)


def chat(text: str, thread: str, scope: str = "alice") -> str:
    out = agent.invoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context=Context(scope),
    )
    return out["messages"][-1].text
"""),
    md("""
## Monday: tell the agent things
"""),
    code("""
model.script = [AIMessage("Miso is a lovely name for a cat!")]
print(chat("I adopted a grey cat named Miso last spring.", thread="monday"))

model.script = [
    AIMessage("", tool_calls=[{"name": "remember_preference", "id": "call-1",
                               "args": {"key": "diet", "preference": "Alice is vegetarian."}}]),
    AIMessage("Got it: no meat in your recipes."),
]
print(chat("Please remember that I'm vegetarian.", thread="monday"))
print(store.get(("alice",), "diet").value)
"""),
    md("""
## Friday: a new conversation

The new thread starts empty, but the model's system message now carries what
sgmem recalled from Monday — the chat and the stored preference. (Only what is
relevant to the question comes back: a bare "any dinner idea?" is too far from
"I'm vegetarian" for the default relevance cutoff; see the quickstart.)
"""),
    code("""
model.script = [AIMessage("Your cat is called Miso. How about a spicy lentil curry?")]
print(chat("What is my cat called? And what could I cook for dinner, given my diet?", thread="friday"))

system_message = model.seen[-1][0].text
print()
print(system_message)
assert "Miso" in system_message and "vegetarian" in system_message
"""),
    md("""
Everything the agent said and heard is in sgmem, exactly, per thread:
"""),
    code("""
for m in mem.messages(scope="alice"):
    print(f"[{m.thread}] {m.role}: {m.content}")
"""),
    md("""
The store searches by meaning, as LangGraph's own stores do (each indexed
field embedded alone; the score is a cosine, 1.0 for identical text):
"""),
    code("""
for item in store.search(("alice",), query="food preferences", limit=2):
    print(item.key, item.value, round(item.score, 3))
"""),
    md("""
## Scopes never mix

Another user asks the same question and gets no memory of Alice.
"""),
    code("""
model.script = [AIMessage("I don't know yet - tell me!")]
print(chat("What is my cat called?", thread="first-chat", scope="bob"))
assert "Miso" not in model.seen[-1][0].text
print(model.seen[-1][0].text)
"""),
]

# ---------------------------------------------------------------------------
LLAMA_INDEX: list[Cell] = [
    md("""
# LlamaIndex chat engines and agents with sgmem memory

`SGMemMemory` is a LlamaIndex memory (`memory=` of chat engines, `FunctionAgent`
and `AgentWorkflow` runs): it returns the thread's recent messages plus a system
message with what sgmem recalls from every earlier thread of the user's scope.
`SGMemMemoryBlock` plugs sgmem into LlamaIndex's own `Memory`, and
`SGMemRetriever` is a retriever over a scope.

It runs offline with LlamaIndex's `MockLLM` family; swap in any real LLM.
"""),
    code("""
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall, MockLLMWithChatMemoryOfLastCall
from llama_index.core.memory import Memory as LlamaMemory
from llama_index.core.tools import FunctionTool

import sgmem
from llama_index_sgmem import SGMemMemory, SGMemMemoryBlock, SGMemRetriever

mem = sgmem.Memory(preload=True)   # sgmem.Memory("./memory") persists across runs; preload: the model loads now
"""),
    md("""
With a real model, e.g. (needs `llama-index-llms-openai` and an API key):
"""),
    code("""
# from llama_index.llms.openai import OpenAI
# llm = OpenAI(model="gpt-4.1-mini")
"""),
    md("""
## A chat engine on Monday

`MockLLM(max_tokens=8)` answers "text text …"; what matters is what sgmem
stores and recalls. The engine writes both turns of each exchange to sgmem.
"""),
    code("""
monday = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="monday")
engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=8), memory=monday,
                                        system_prompt="You are a helpful assistant.")
engine.chat("I adopted a grey cat named Miso last spring.")
engine.chat("I also started pottery classes on Thursdays.")

for m in mem.messages(scope="alice", thread="monday"):
    print(f"{m.role}: {m.content}")
"""),
    md("""
## Friday: a new thread recalls Monday

`MockLLMWithChatMemoryOfLastCall` keeps the messages it was sent.
"""),
    code("""
llm = MockLLMWithChatMemoryOfLastCall(max_tokens=8, is_chat_model=True)
friday = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="friday")
SimpleChatEngine.from_defaults(llm=llm, memory=friday, system_prompt="You are a helpful assistant.").chat(
    "What is my cat called?"
)
for m in llm.last_chat_messages:
    print(f"--- {m.role.value}\\n{m.content}")
assert any(m.role.value == "system" and "Miso" in (m.content or "") for m in llm.last_chat_messages)
"""),
    md("""
## An agent

A `FunctionAgent` run with `memory=SGMemMemory(...)`: the recalled memories reach
the LLM, and the run's messages (tool calls included) are stored.
"""),
    code("""
def what_time_is_it() -> str:
    \"\"\"Tell the current time.\"\"\"
    return "It is noon."


agent_llm = MockFunctionCallingLLMWithChatMemoryOfLastCall()
agent = FunctionAgent(name="helper", description="Helps the user.", llm=agent_llm,
                      tools=[FunctionTool.from_defaults(fn=what_time_is_it)],
                      system_prompt="You are a helpful assistant.")
saturday = SGMemMemory.from_defaults(memory=mem, scope="alice", thread="saturday")
answer = await agent.run(user_msg="When are my pottery classes?", memory=saturday)

for m in agent_llm.last_chat_messages:
    print(f"--- {m.role.value}\\n{m.content}")
assert "pottery" in "".join(m.content or "" for m in agent_llm.last_chat_messages if m.role.value == "system")
print([m.role for m in mem.messages(scope="alice", thread="saturday")])
"""),
    md("""
## sgmem inside LlamaIndex's `Memory`

`SGMemMemoryBlock` is a long-term block: LlamaIndex keeps the short-term queue,
sgmem stores what is flushed and recalls across threads.
"""),
    code("""
block = SGMemMemoryBlock(memory=mem, scope="alice")
llama_memory = LlamaMemory.from_defaults(session_id="sunday", memory_blocks=[block], token_limit=2000)
llama_memory.put(ChatMessage(role="user", content="Do I have any pets?"))
first = llama_memory.get()[0]
print(first.role.value)
print(first.content)
assert "Miso" in first.content
"""),
    md("""
## A retriever over the scope
"""),
    code("""
for node in SGMemRetriever(memory=mem, scope="alice", k=2).retrieve("hobbies"):
    print(round(node.score, 3), node.node.get_content())
"""),
]
