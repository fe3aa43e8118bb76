"""What a tool call of ``sgmem mcp`` costs once the server is up, against a cold ``sgmem search`` in the same run.

The ``mcp`` part of ``python -m benchmarks``; alone,
``python -m benchmarks.mcp_latency [--notes 30] [--calls 20] [--cli-runs 3]``.

One ``sgmem mcp`` server (the real command, default MiniLM, a fresh SQLite
store) is driven through the MCP SDK's own stdio client: its start-up (spawn
to ``initialize`` answered, the model load included), ``remember`` of the
notes (the bundled demo conversation's messages), the first ``recall`` and
``--calls`` more (the demo's questions, round robin), and ``context``. The
baseline is what a client without a resident server pays per lookup: a cold
``sgmem search`` process on the same store (``--cli-runs`` of them, after
the server has exited). Prints a Markdown section with medians, p90 and the
ratio cold CLI ÷ warm call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from .env import command_line, environment, render_environment

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
SCOPE = "bench"


def _demo() -> dict[str, Any]:
    return json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_args(store: Path) -> list[str]:
    """The server under test: ``sgmem mcp`` on ``store``, scope ``bench`` (arguments of ``python``)."""
    return ["-m", "sgmem.cli", "mcp", "--path", str(store), "--scope", SCOPE]


async def server_run(args: list[str], notes: list[str], queries: list[str], calls: int) -> dict[str, Any]:
    """Start ``python ARGS`` (an MCP server on stdio) and time its start-up and tool calls."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=args, env={**os.environ, **OFFLINE})
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["startup_s"] = time.perf_counter() - t0

            async def timed(name: str, args: dict[str, Any]) -> float:
                t = time.perf_counter()
                res = await session.call_tool(name, args)
                if res.isError:
                    raise RuntimeError(f"{name} failed: {res.content}")
                return (time.perf_counter() - t) * 1000

            out["remember_ms"] = [await timed("remember", {"text": n}) for n in notes]
            out["first_recall_ms"] = await timed("recall", {"query": queries[0]})
            out["recall_ms"] = [await timed("recall", {"query": queries[i % len(queries)]}) for i in range(calls)]
            out["context_ms"] = [
                await timed("context", {"query": queries[i % len(queries)]}) for i in range(max(3, calls // 4))
            ]
    return out


def _cold_cli(store: Path, query: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "sgmem.cli", "search", query, "--scope", SCOPE, "--path", str(store)],
            env={**os.environ, **OFFLINE},
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - t)
    return times


def run(notes_n: int, calls: int, cli_runs: int) -> dict[str, Any]:
    """Measure; returns the raw figures."""
    demo = _demo()
    texts = [m["content"] for t in demo["threads"] for m in t["messages"]]
    notes = [texts[i % len(texts)] for i in range(notes_n)]
    queries = list(demo["queries"])
    with tempfile.TemporaryDirectory(prefix="sgmem-mcp-bench-") as tmp:
        store = Path(tmp) / "store"
        res = asyncio.run(server_run(server_args(store), notes, queries, calls))
        res["cli_s"] = _cold_cli(store, queries[0], cli_runs)
    return res


TITLE = "MCP server: a tool call after start-up"

HOW = (
    "The real `sgmem mcp` (default MiniLM, a fresh SQLite store) driven by the MCP SDK's stdio client: notes "
    "remembered (the demo conversation's messages), then the demo's questions recalled. The baseline, in the "
    "same run and on the same store, is a cold `sgmem search` process: what a lookup costs without a resident "
    "server."
)


def render(res: dict[str, Any]) -> str:
    """The figures and the ratio to the cold CLI."""
    recall = statistics.median(res["recall_ms"])
    cli = statistics.median(res["cli_s"])
    lines = [
        "| what | time |",
        "|---|---|",
        f"| `sgmem mcp` start-up (spawn → `initialize` answered; model load included) | {res['startup_s']:.2f} s |",
        f"| `remember`, median of {len(res['remember_ms'])} | {statistics.median(res['remember_ms']):.1f} ms "
        f"(p90 {_p(res['remember_ms'], 0.9):.1f}) |",
        f"| first `recall` | {res['first_recall_ms']:.1f} ms |",
        f"| later `recall`, median of {len(res['recall_ms'])} | {recall:.1f} ms (p90 {_p(res['recall_ms'], 0.9):.1f}) |",
        f"| `context`, median of {len(res['context_ms'])} | {statistics.median(res['context_ms']):.1f} ms |",
        f"| baseline: cold `sgmem search` process, median of {len(res['cli_s'])} | {cli:.2f} s |",
        "",
        f"A `recall` through the running server costs {recall:.1f} ms: {cli * 1000 / recall:.0f}× less than a "
        f"cold `sgmem search` ({cli:.2f} s), which loads the model each time.",
    ]
    return "\n".join(lines)


def report(res: dict[str, Any], command: str, env: dict[str, Any]) -> str:
    """The Markdown section of ``python -m benchmarks.mcp_latency``: heading, environment, figures."""
    return "\n".join([f"## {TITLE}", "", render_environment(env, command), "", render(res)])


def run_part(ctx: Any) -> dict[str, Any]:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"the MCP SDK is not installed ({exc})"}
    return run(*((3, 3, 1) if ctx.args.smoke else (30, 20, 3)))


def render_part(raw: dict[str, Any]) -> str:
    if "skipped" in raw:
        return f"Not run: {raw['skipped']}."
    return HOW + "\n\n" + render(raw)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    if "skipped" in raw:
        return []
    recall, cli = statistics.median(raw["recall_ms"]), statistics.median(raw["cli_s"])
    return [f"- A `recall` tool call of a running `sgmem mcp`: {recall:.1f} ms vs a cold `sgmem search` process "
            f"{cli:.1f} s — **{cli * 1000 / recall:.0f}× faster**."]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.mcp_latency", description=__doc__.splitlines()[0])
    p.add_argument("--notes", type=int, default=30, help="notes remembered before the recalls (30)")
    p.add_argument("--calls", type=int, default=20, help="recall calls after the first (20)")
    p.add_argument("--cli-runs", type=int, default=3, help="cold sgmem search processes, the baseline (3)")
    p.add_argument("--json", default=None, help="also write the raw figures here")
    args = p.parse_args(argv)
    if min(args.notes, args.calls, args.cli_runs) < 1:
        p.error("--notes, --calls and --cli-runs must be >= 1")
    env = environment()
    res = run(args.notes, args.calls, args.cli_runs)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(report(res, command_line("benchmarks.mcp_latency", argv), env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
