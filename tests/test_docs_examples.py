"""Every example in README.md and docs/*.md runs, every relative link resolves, every knob is documented.

How the examples are run (the conventions a docs writer follows):

- Each ```python block runs alone, in a fresh namespace, with a fresh temporary
  directory as the working directory (so ``sgmem.Memory("./memory")`` starts
  empty). Its output is captured; a raised exception fails its test. The default
  MiniLM embedder is process-wide (:func:`sgmem.embed.default_embedder`), so it
  loads once for the whole file.
- A line ending in ``# your model here`` is the user's choice of LLM (it needs a
  provider package and an API key). The test drops every such line and binds
  the variable the last one assigns to the offline fake docs/README.md names
  ("Running the examples without an API key", whose block defines them): for a
  LangChain block its ``FakeToolChatModel`` (a ``GenericFakeChatModel`` that
  accepts tools), recording what it is sent; for a LlamaIndex block ``MockLLM``
  (``MockFunctionCallingLLM`` for agents), as LlamaIndex's subclasses that keep
  the messages of their last call.
- A line ending in ``# your database here`` assigns a PostgreSQL URL: the test
  points it at a fresh schema on ``SGMEM_TEST_PG_URL`` (the block skips without a
  server, and fails in CI, as every PostgreSQL test does; see tests/pg.py).
- ```python no-run marks a block that is deliberately not run (a sketch needing
  hardware or a service the tests do not have); they are counted, and the count
  must stay small.
- ```json file=NAME (or any language with ``file=NAME``) is written to NAME in
  the temporary directory of every block of the same page before it runs.
- Every ``sgmem ...`` command in a ```bash block must parse with the real
  command-line parser (subcommands and flags exist); in a ```bash run block
  each line is such a command and is run in-process (``sgmem.cli.main``) in one
  temporary directory, in order, and must exit 0.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import io
import itertools
import json
import os
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sgmem

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MODEL_MARK = "# your model here"
DB_MARK = "# your database here"
#: Blocks deliberately not run; keep this small (each one is an example nobody checks).
MAX_NO_RUN = 3

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    flags: tuple[str, ...]
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def flag(self, name: str) -> str | None:
        for f in self.flags:
            if f == name:
                return f
            if f.startswith(name + "="):
                return f.split("=", 1)[1]
        return None


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        info = m.group(1).split()
        lang, flags = (info[0], tuple(info[1:])) if info else ("", ())
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, lang, flags, m.group(2)))
    return out


ALL = [b for p in PAGES for b in _blocks(p)]
PYTHON = [b for b in ALL if b.lang == "python" and b.flag("no-run") is None]
NO_RUN = [b for b in ALL if b.lang == "python" and b.flag("no-run") is not None]
BASH = [b for b in ALL if b.lang in ("bash", "sh", "shell")]


def test_the_pages_hold_examples() -> None:
    assert (ROOT / "docs" / "README.md").exists()
    assert len(PAGES) >= 10, [p.name for p in PAGES]
    assert len(PYTHON) >= 20, "the docs lost their runnable examples"


def test_few_examples_are_left_unrun() -> None:
    assert len(NO_RUN) <= MAX_NO_RUN, [b.id for b in NO_RUN]


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    assert not re.search(r"\b[Ii]ssue \d+|\bsession \d+", "\n".join(lines))


def test_no_issue_or_session_numbers_in_user_docs() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found = re.findall(r"\b(?:[Ii]ssue|[Ss]ession|pass) \d+\b|\bissue-\d+", text)
        assert not found, f"{page.name}: {found}"


def test_the_readme_headline_figures_are_the_results_files() -> None:
    """Each figure of the README's headline table (sgmem, baseline, ratio) is in the Summary of the generated
    benchmarks/RESULTS.md: rerunning the benchmarks and forgetting the README fails here."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- headline figures", 1)[1].split("\n\n", 1)[0]
    rows = [r for r in block.splitlines() if r.startswith("| ") and "**" in r]
    assert len(rows) == 3, rows
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    summary = results.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for row in rows:
        figures = re.findall(r"\d+\.\d+(?= ?[%×])", row)
        assert len(figures) == 3, row
        line = next((s for s in summary.splitlines() if all(f in s for f in figures)), None)
        assert line is not None, f"README figures {figures} are not one line of RESULTS.md's Summary"


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    """.ci/run runs the README's test command verbatim: the two must not drift apart."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marker = next(i for i, line in enumerate(ci) if "the README's test command, verbatim" in line)
    command = ci[marker + 1].strip()
    readme = [b.code.strip() for b in _blocks(ROOT / "README.md") if b.lang == "bash"]
    assert command in readme, command
    assert any(c.endswith(".venv/bin/sgmem demo") for c in readme)


# --------------------------------------------------------------------------- fakes


@functools.lru_cache(maxsize=1)
def _documented_fakes() -> dict[str, Any]:
    """The fakes docs/README.md tells a reader to use ("Running the examples without an API key"), from its block."""
    block = next(b for b in _blocks(ROOT / "docs" / "README.md") if "class FakeToolChatModel" in b.code)
    namespace: dict[str, Any] = {"__name__": "docs_fakes"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(block.code, block.id, "exec"), namespace)  # noqa: S102 - the docs' own example
    return namespace


def _langchain_fake() -> Any:
    """The documented ``FakeToolChatModel``, recording every input (``calls``)."""
    from langchain_core.messages import BaseMessage
    from pydantic import Field

    documented = _documented_fakes()["FakeToolChatModel"]

    class RecordingChatModel(documented):  # type: ignore[misc, valid-type]
        calls: list[list[BaseMessage]] = Field(default_factory=list)

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            self.calls.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)

    return RecordingChatModel(messages=itertools.repeat("Noted."))


def _llama_index_fake(code: str) -> Any:
    """The documented LlamaIndex fake (``MockFunctionCallingLLM`` for an agent, else ``MockLLM(max_tokens=8)``),
    as LlamaIndex's own subclass that keeps the messages of its last call."""
    from llama_index.core.llms import MockLLM
    from llama_index.core.llms.mock import (
        MockFunctionCallingLLM,
        MockFunctionCallingLLMWithChatMemoryOfLastCall,
        MockLLMWithChatMemoryOfLastCall,
    )

    fakes = _documented_fakes()
    assert type(fakes["agent_llm"]) is MockFunctionCallingLLM and type(fakes["llm"]) is MockLLM
    assert issubclass(MockFunctionCallingLLMWithChatMemoryOfLastCall, MockFunctionCallingLLM)
    assert issubclass(MockLLMWithChatMemoryOfLastCall, MockLLM)
    if re.search(r"FunctionAgent|ReActAgent|AgentWorkflow", code):
        return MockFunctionCallingLLMWithChatMemoryOfLastCall()
    return MockLLMWithChatMemoryOfLastCall(max_tokens=fakes["llm"].max_tokens)


def _fake_model(code: str) -> Any:
    if "llama_index" in code:
        return _llama_index_fake(code)
    if "langchain" in code:
        return _langchain_fake()
    raise AssertionError(f"{MODEL_MARK!r} in a block that imports neither LangChain nor LlamaIndex")


def _assigned(line: str) -> str:
    """The name a ``# your model here`` line assigns."""
    target = line.split("=", 1)[0].strip() if "=" in line else ""
    assert target.isidentifier(), f"a {MODEL_MARK!r} line must import or assign a name: {line!r}"
    return target


def _prepare(block: Block, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """The code to run and its namespace, with the model and database lines substituted."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    lines = block.code.splitlines()
    marked = [ln for ln in lines if ln.rstrip().endswith(MODEL_MARK)]
    if marked:
        assignments = [ln for ln in marked if not re.match(r"\s*(from|import)\s", ln)]
        assert assignments, f"{block.id}: no {MODEL_MARK!r} line assigns the model"
        namespace[_assigned(assignments[-1])] = _fake_model(block.code)
        lines = [ln for ln in lines if not ln.rstrip().endswith(MODEL_MARK)]
    db = [i for i, ln in enumerate(lines) if ln.rstrip().endswith(DB_MARK)]
    if db:
        url = request.getfixturevalue("pg_url")
        for i in db:
            name = lines[i].split("=", 1)[0].strip()
            assert name.isidentifier(), f"{block.id}: a {DB_MARK!r} line must assign a name"
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = f"{indent}{name} = {url!r}"
    return "\n".join(lines) + "\n", namespace


@contextlib.contextmanager
def _inside(tmp: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(tmp)
    try:
        yield
    finally:
        os.chdir(old)


def _write_files(page: Path, where: Path) -> None:
    for b in _blocks(page):
        name = b.flag("file")
        if name:
            (where / name).write_text(b.code, encoding="utf-8")


#: What a user would notice beyond "it ran": checks on a few blocks, by page and a line of the block.
CHECKS: dict[tuple[str, str], Callable[[dict[str, Any], str], None]] = {}


def _check(page: str, needle: str) -> Callable[[Callable[[dict[str, Any], str], None]], Any]:
    def register(fn: Callable[[dict[str, Any], str], None]) -> Any:
        CHECKS[(page, needle)] = fn
        return fn

    return register


@_check("README.md", "def engine(thread")
def _llama_index_recalls(ns: dict[str, Any], out: str) -> None:
    sent = ns["llm"].last_chat_messages
    system = "\n".join(m.content or "" for m in sent if m.role.value == "system")
    assert "Miso" in system, "the second chat engine's LLM did not receive Monday's memory"


@_check("README.md", "SGMemMiddleware(mem")
def _langchain_recalls(ns: dict[str, Any], out: str) -> None:
    last = ns["model"].calls[-1]
    assert last[0].type == "system" and "Miso" in last[0].text, "the agent's model did not receive Monday's memory"


@_check("README.md", 'mem.search("Who is Priya')
def _quickstart_finds(ns: dict[str, Any], out: str) -> None:
    assert "My manager is Tomasz" in out


@_check("docs/chat.md", "flat bicycle tyre")
def _unrelated_question_gets_nothing(ns: dict[str, Any], out: str) -> None:
    lines = out.splitlines()
    assert lines[1:3] == ["[]", "True"], "an unrelated question got memories despite the default cutoff"
    assert lines[4] == "1", "min_score=0 did not switch the cutoff off"


@_check("docs/chat.md", "Our new dog is called Pepper")
def _statement_outranks_question_and_non_answer(ns: dict[str, Any], out: str) -> None:
    assert out.startswith("Our new dog is called Pepper"), out


@_check("docs/generated-memory.md", "again = mem.add")
def _gate_skips_the_repeat(ns: dict[str, Any], out: str) -> None:
    assert out.splitlines()[0] == "1 1", "the novelty gate did not skip a repeated fact"


@_check("docs/privacy.md", "X1234567")
def _forgetting_empties_the_store(ns: dict[str, Any], out: str) -> None:
    assert out.splitlines()[-1] == "[]"
    assert "X1234567" not in "".join(p.read_bytes().decode("latin-1") for p in Path("memory").glob("sgmem.db*"))


@_check("docs/tools-and-mcp.md", "create_memory_tools(mem)")
def _langchain_tools_store_and_recall(ns: dict[str, Any], out: str) -> None:
    assert "vegetarian" in out.splitlines()[-1], out


@_check("docs/tools-and-mcp.md", "agent = FunctionAgent(tools=spec.to_tool_list()")
def _llama_index_agent_calls_the_tools(ns: dict[str, Any], out: str) -> None:
    assert "Tool calls complete." in out, "the LlamaIndex agent did not call sgmem's tools"
    assert "list_threads" in {t.metadata.name for t in ns["spec"].to_tool_list()}


@_check("docs/tools-and-mcp.md", "agent = create_agent(model, tools=tools)")
def _langchain_agent_runs_with_the_tools_bound(ns: dict[str, Any], out: str) -> None:
    assert ns["model"].calls, "the LangChain agent never called its model"


@_check("docs/frameworks.md", "SGMemMemoryBlock(memory=mem")
def _llama_index_block_recalls(ns: dict[str, Any], out: str) -> None:
    system = "\n".join(m.content or "" for m in ns["llm"].last_chat_messages if m.role.value == "system")
    assert "pottery classes on Thursdays" in system, "the memory block did not bring Monday's message to the agent"


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_example_runs(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    code, namespace = _prepare(block, request)
    _write_files(block.page, tmp_path)
    out = io.StringIO()
    with _inside(tmp_path):
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, block.id, "exec"), namespace)  # noqa: S102 - the docs' own examples
            for (page, needle), check in CHECKS.items():
                if block.page == ROOT / page and needle in block.code:
                    check(namespace, out.getvalue())
        finally:  # close what the example left open (a script would exit), inside its directory
            for value in list(namespace.values()):
                if isinstance(value, sgmem.Memory):
                    value.close()


def test_the_documented_fakes_run_agents_with_tools(tmp_path: Path) -> None:
    """The friction: the fakes a reader reached for (``GenericFakeChatModel``, ``MockLLM``) refuse tools; the ones
    docs/README.md names run a LangChain agent and a LlamaIndex agent with sgmem's tools."""
    import asyncio

    from langchain.agents import create_agent
    from llama_index.core.agent.workflow import FunctionAgent

    from langchain_sgmem import create_memory_tools
    from llama_index_sgmem import SGMemToolSpec

    fakes = _documented_fakes()
    with sgmem.Memory(tmp_path / "memory") as mem:
        agent = create_agent(fakes["model"], tools=create_memory_tools(mem, scope="alice"))
        out = agent.invoke({"messages": [{"role": "user", "content": "Remember that I'm vegetarian."}]})
        assert out["messages"][-1].content == "Noted."
        spec = SGMemToolSpec(mem, scope="alice")

        async def run() -> Any:
            return await FunctionAgent(tools=spec.to_tool_list(), llm=fakes["agent_llm"]).run("Hi")

        assert "Tool calls complete." in str(asyncio.run(run()))


def test_every_check_finds_its_block() -> None:
    for page, needle in CHECKS:
        assert any(b.page == ROOT / page and needle in b.code for b in PYTHON), (page, needle)


# --------------------------------------------------------------------------- shell


def _sgmem_commands(block: Block) -> list[list[str]]:
    """Every ``sgmem`` command of a shell block, as argv (after ``sgmem``)."""
    commands = []
    for line in block.code.splitlines():
        for part in re.split(r"&&|\|\||;", line):
            words = shlex.split(part, comments=True)
            if words and Path(words[0]).name == "sgmem":
                commands.append(words[1:])
    return commands


def test_every_shell_command_parses() -> None:
    from sgmem.cli import build_parser

    parser = build_parser()
    seen = 0
    for block in BASH:
        for argv in _sgmem_commands(block):
            seen += 1
            try:
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    parser.parse_args(argv)
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise AssertionError(f"{block.id}: sgmem {shlex.join(argv)}: {err.getvalue()}") from None
    assert seen >= 10


RUN_BASH = [b for b in BASH if b.flag("run") is not None]


@pytest.mark.parametrize("block", RUN_BASH, ids=[b.id for b in RUN_BASH])
def test_shell_example_runs(block: Block, tmp_path: Path) -> None:
    from sgmem.cli import main

    lines = [ln for ln in block.code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    commands = _sgmem_commands(block)
    assert len(commands) == len(lines), f"{block.id}: a 'bash run' block holds only sgmem commands"
    _write_files(block.page, tmp_path)
    with _inside(tmp_path), contextlib.redirect_stdout(io.StringIO()):
        for argv in commands:
            assert main(argv) == 0, f"{block.id}: sgmem {shlex.join(argv)} failed"


def test_shell_examples_are_run() -> None:
    assert RUN_BASH, "at least the command-line page runs its commands"


def test_every_json_example_parses() -> None:
    blocks = [b for b in ALL if b.lang == "json"]
    assert blocks
    for block in blocks:
        json.loads(block.code)


# --------------------------------------------------------------------------- links


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_anchor(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?)\s*$", text, re.M)}


def test_every_relative_link_resolves() -> None:
    bad = []
    for page in PAGES:
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                bad.append(f"{page.name}: {target} (no such heading)")
    assert not bad, bad


def test_every_docs_page_is_linked_from_the_readme_and_the_index() -> None:
    for index in (ROOT / "README.md", ROOT / "docs" / "README.md"):
        text = index.read_text(encoding="utf-8")
        for page in (ROOT / "docs").glob("*.md"):
            if page != index:
                rel = os.path.relpath(page, index.parent)
                assert f"({rel})" in text or f"({rel}#" in text, f"{index.relative_to(ROOT)} does not link {rel}"


# --------------------------------------------------------------------------- configuration

CONFIGS = [
    sgmem.Config,
    sgmem.HybridConfig,
    sgmem.GraphConfig,
    sgmem.SGRMConfig,
    sgmem.PyramidConfig,
    sgmem.GateConfig,
    sgmem.DerivedConfig,
    sgmem.EntityConfig,
    sgmem.Limits,
]


def _documented() -> dict[str, dict[str, str]]:
    """``{class name: {knob: default as written}}`` from docs/configuration.md's tables."""
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{2,3} .*`(\w+)`", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\| `(\w+)` \| `([^`]*)` \|", line)
        if m and section:
            out.setdefault(section, {})[m.group(1)] = m.group(2)
    return out


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc,operator]


def test_every_config_knob_is_documented_with_its_default() -> None:
    documented = _documented()
    names = {c.__name__: c for c in CONFIGS}
    for cls in CONFIGS:
        rows = documented.get(cls.__name__, {})
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(rows) == set(fields), (
            f"docs/configuration.md, {cls.__name__}: missing {sorted(set(fields) - set(rows))}, "
            f"not a knob {sorted(set(rows) - set(fields))}"
        )
        for name, written in rows.items():
            value = eval(written, {"__builtins__": {}}, names)  # noqa: S307 - literals and Config() calls
            assert value == _default(fields[name]), (
                f"{cls.__name__}.{name}: documented {written}, is {_default(fields[name])!r}"
            )


def test_documented_defaults_are_literals() -> None:
    for rows in _documented().values():
        for written in rows.values():
            tree = ast.parse(written, mode="eval")
            assert all(not isinstance(n, ast.Attribute) for n in ast.walk(tree)), written
