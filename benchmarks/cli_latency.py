"""What a cold ``sgmem search`` / ``context`` / ``ingest`` process costs on a warm store, against the same calls in
process, in the same run.

The ``cli`` part of ``python -m benchmarks``; alone, ``python -m benchmarks.cli_latency [--runs 5]``.

A store holds the bundled demo conversation (written in process with the
default PyTorch MiniLM). Then, on that store, in this order:

* **in process**: a :class:`sgmem.Memory` whose model is loaded runs each demo
  question through ``search`` (what an application pays per lookup once warm);
* **cold CLI**: a new ``python -m sgmem.cli search Q --json`` process per run,
  the demo's questions round robin; likewise ``context`` and an ``ingest`` of
  a file that adds one message;
* **cold process, PyTorch model**: the same search in a new process that opens
  ``sgmem.Memory(path)`` with the default embedder, which is what every
  ``sgmem search`` did before the command line ran the model in NumPy.

A command's first process on a machine also compiles sgmem's modules and
writes the decoded lemma and token tables (:mod:`sgmem.tables`); that first
run is reported on its own and the medians are over the later runs ("the
store is warm": its files and the tables are in the page cache). Each cold
search's hits (message ids, in order) are compared with the in-process hits
for the same question.
"""

from __future__ import annotations

import argparse
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

_TORCH_SEARCH = (
    "import json, sys, sgmem\n"
    "with sgmem.Memory(sys.argv[1]) as m:\n"
    "    print(json.dumps([list(h.message_ids) for h in m.search(sys.argv[2], scope=sys.argv[3], k=5)]))\n"
)


def _env(cache: Path) -> dict[str, str]:
    env = {**os.environ, **OFFLINE, "SGMEM_CACHE_DIR": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: compiled modules are kept between runs
    return env


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t, done.stdout


def run(runs: int) -> dict[str, Any]:
    """Measure; returns the raw figures."""
    import sgmem

    demo = json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))
    queries = list(demo["queries"])
    out: dict[str, Any] = {"runs": runs, "queries": len(queries)}
    with tempfile.TemporaryDirectory(prefix="sgmem-cli-bench-") as tmp:
        store, cache = Path(tmp) / "store", Path(tmp) / "tables"
        env = _env(cache)
        with sgmem.Memory(store) as mem:
            for th in demo["threads"]:
                mem.add(th["messages"], scope=SCOPE, thread=th["thread"], at=th["at"])
            out["messages"] = mem.stats(SCOPE).scopes[0].messages
            mem.warmup()
            mem.search(queries[0], scope=SCOPE, k=5)  # the first search builds the index: not a lookup's cost
            inproc, expected = [], {}
            for q in queries * max(1, runs):
                t = time.perf_counter()
                hits = mem.search(q, scope=SCOPE, k=5)
                inproc.append(time.perf_counter() - t)
                expected[q] = [list(h.message_ids) for h in hits]
        out["in_process_s"] = inproc

        def cli(command: str, q: str) -> list[str]:
            return ["-m", "sgmem.cli", command, q, "--scope", SCOPE, "--path", str(store)]

        first, _ = _timed([*cli("search", queries[0]), "--json"], env)
        out["first_search_s"] = first
        searches, same = [], 0
        for i in range(runs):
            q = queries[i % len(queries)]
            secs, text = _timed([*cli("search", q), "--json"], env)
            searches.append(secs)
            same += [list(h["message_ids"]) for h in json.loads(text)] == expected[q]
        out["cli_search_s"], out["same_hits"] = searches, same
        out["cli_context_s"] = [_timed(cli("context", queries[i % len(queries)]), env)[0] for i in range(runs)]
        ingest = []
        for i in range(runs):
            file = Path(tmp) / f"note-{i}.json"
            file.write_text(json.dumps([{"role": "user", "content": f"Note {i}: my locker code is {4100 + i}."}]))
            ingest.append(
                _timed(["-m", "sgmem.cli", "ingest", str(file), "--scope", SCOPE, "--path", str(store), "-q"], env)[0]
            )
        out["cli_ingest_s"] = ingest
        torch_runs, torch_same = [], 0
        for i in range(max(1, runs // 2)):
            q = queries[i % len(queries)]
            secs, text = _timed(["-c", _TORCH_SEARCH, str(store), q, SCOPE], env)
            torch_runs.append(secs)
            torch_same += json.loads(text) == expected[q]
        out["torch_search_s"], out["torch_same_hits"] = torch_runs, torch_same
    return out


TITLE = "Command line: a cold command on a warm store"

HOW = (
    "A store holding the bundled demo conversation. In the same run: each demo question searched in process "
    "(model loaded), then a new `sgmem search` process per question, then `sgmem context` and `sgmem ingest` "
    "(one new message each) processes, then the same search in a new process through the PyTorch model (what "
    "every command paid before it ran the model in NumPy). Medians over the runs after the first; the first "
    "run on a machine also compiles the modules and writes the decoded lemma and token tables."
)


def _med(values: list[float]) -> float:
    return statistics.median(values)


def render(res: dict[str, Any]) -> str:
    """The figures, the ratios and the hits' agreement."""
    inproc = _med(res["in_process_s"]) * 1000
    cli, torch = _med(res["cli_search_s"]), _med(res["torch_search_s"])
    n = len(res["cli_search_s"])
    lines = [
        "| what | time |",
        "|---|---|",
        f"| `search` in process (model loaded), median of {len(res['in_process_s'])} | {inproc:.1f} ms |",
        f"| cold `sgmem search` process, median of {n} | **{cli:.2f} s** |",
        f"| cold `sgmem context` process, median of {len(res['cli_context_s'])} | {_med(res['cli_context_s']):.2f} s |",
        f"| cold `sgmem ingest` of one new message, median of {len(res['cli_ingest_s'])} | "
        f"{_med(res['cli_ingest_s']):.2f} s |",
        f"| the first `sgmem search` on this machine (compiles, writes the tables) | {res['first_search_s']:.2f} s |",
        f"| baseline: the same search in a new process through the PyTorch model, median of "
        f"{len(res['torch_search_s'])} | {torch:.2f} s |",
        "",
        f"A cold `sgmem search` takes {cli:.2f} s, {cli * 1000 / inproc:.0f}× the same search in process "
        f"({inproc:.1f} ms) and {torch / cli:.1f}× faster than a cold process through the PyTorch model "
        f"({torch:.2f} s). Same hits as in process: {res['same_hits']} of {n} cold searches "
        f"({res['torch_same_hits']} of {len(res['torch_search_s'])} through PyTorch).",
    ]
    return "\n".join(lines)


def report(res: dict[str, Any], command: str, env: dict[str, Any]) -> str:
    """The Markdown section of ``python -m benchmarks.cli_latency``: heading, environment, figures."""
    return "\n".join([f"## {TITLE}", "", render_environment(env, command), "", render(res)])


def run_part(ctx: Any) -> dict[str, Any]:
    return run(2 if ctx.args.smoke else 9)


def render_part(raw: dict[str, Any]) -> str:
    return HOW + "\n\n" + render(raw)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    cli, inproc = _med(raw["cli_search_s"]), _med(raw["in_process_s"]) * 1000
    torch = _med(raw["torch_search_s"])
    return [
        f"- A cold `sgmem search` process on a warm store: {cli:.2f} s vs {inproc:.1f} ms in process "
        f"({cli * 1000 / inproc:.0f}×), same hits in {raw['same_hits']} of {len(raw['cli_search_s'])}; "
        f"{torch:.2f} s through the PyTorch model — **{torch / cli:.1f}× faster**."
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cli_latency", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=9, help="cold processes per command (9)")
    p.add_argument("--json", default=None, help="also write the raw figures here")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")
    env = environment()
    res = run(args.runs)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1), encoding="utf-8")
    print(report(res, command_line("benchmarks.cli_latency", argv), env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
