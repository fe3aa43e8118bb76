"""What the inspector's search view costs over the ``Memory.search`` call it shows, measured in the same run.

The ``ui`` part of ``python -m benchmarks``; alone,
``python -m benchmarks.ui_latency [--rounds 20]``.

One store (the bundled demo conversation, default MiniLM) is served by the
real ``sgmem ui`` app under uvicorn on a local port; each of the demo's
questions is asked both ways, alternating, ``--rounds`` times: ``GET /search``
over HTTP (request, the search, the rendered page with every hit's channels)
and the same ``Memory.search`` call in this process, the baseline. Prints the
medians and the ratio view ÷ search (the target: at most 1.3).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from importlib import resources
from typing import Any

from .env import command_line, environment, render_environment

TITLE = "Memory inspector: the search view against the search it shows"
TARGET = 1.3


def _demo() -> dict[str, Any]:
    return json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(embedder: Any, rounds: int) -> dict[str, Any]:
    """Serve the demo store, time ``GET /search`` and ``Memory.search`` per question; returns the raw times (ms)."""
    import httpx
    import uvicorn

    import sgmem
    from sgmem.ui import create_app
    from sgmem.ui.guard import allowed_hosts

    demo = _demo()
    scope = demo["scope"]
    queries = list(demo["queries"])
    with sgmem.Memory(embedder=embedder) as mem:
        for t in demo["threads"]:
            mem.add(t["messages"], scope=scope, thread=t["thread"], at=t.get("at"))
        port = _free_port()
        app = create_app(mem, hosts=allowed_hosts("127.0.0.1", port))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        view_ms: list[float] = []
        search_ms: list[float] = []
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                for q in queries:  # warm both paths: the model, the scope's index, the templates
                    mem.search(q, scope=scope)
                    client.get("/search", params={"s": scope, "q": q}).raise_for_status()
                for i in range(rounds):
                    for j, q in enumerate(queries):
                        order = (0, 1) if (i + j) % 2 == 0 else (1, 0)
                        for which in order:
                            t = time.perf_counter()
                            if which == 0:
                                client.get("/search", params={"s": scope, "q": q}).raise_for_status()
                                view_ms.append((time.perf_counter() - t) * 1000)
                            else:
                                mem.search(q, scope=scope)
                                search_ms.append((time.perf_counter() - t) * 1000)
        finally:
            server.should_exit = True
            thread.join(10)
        stats = mem.stats(scope)
    return {
        "view_ms": view_ms,
        "search_ms": search_ms,
        "queries": len(queries),
        "rounds": rounds,
        "messages": stats.messages,
        "embedder": getattr(embedder, "name", type(embedder).__name__),
    }


def render(res: dict[str, Any]) -> str:
    """The medians and the ratio."""
    view, search = statistics.median(res["view_ms"]), statistics.median(res["search_ms"])
    ratio = view / search
    return "\n".join(
        [
            f"{res['queries']} questions × {res['rounds']} rounds on a {res['messages']}-message scope "
            f"({res['embedder']}), the two paths alternating.",
            "",
            "| what | median |",
            "|---|---|",
            f"| `GET /search` of `sgmem ui` (HTTP, search, rendered hits and channels) | {view:.1f} ms |",
            f"| baseline: the same `Memory.search` call in process | {search:.1f} ms |",
            f"| ratio view ÷ search (target ≤ {TARGET}) | **{ratio:.2f}** |",
        ]
    )


def summary_lines(raw: dict[str, Any]) -> list[str]:
    if "skipped" in raw:
        return []
    view, search = statistics.median(raw["view_ms"]), statistics.median(raw["search_ms"])
    return [
        f"- The `sgmem ui` search view: {view:.1f} ms vs the `Memory.search` call it shows {search:.1f} ms — "
        f"**{view / search:.2f}×** (target ≤ {TARGET})."
    ]


def run_part(ctx: Any) -> dict[str, Any]:
    try:
        import httpx  # noqa: F401
        import uvicorn  # noqa: F401

        import sgmem.ui.app  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"the ui extra is not installed ({exc})"}
    shared = ctx.embedder()
    # the model itself, not the evaluation's embedding cache: a user's query is embedded on every search
    return run(getattr(shared, "base", shared), 2 if ctx.args.smoke else 20)


def render_part(raw: dict[str, Any]) -> str:
    if "skipped" in raw:
        return f"Not run: {raw['skipped']}."
    return render(raw)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ui_latency", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20, help="times each question is asked each way (20)")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    from sgmem.embed import default_embedder

    env = environment()
    res = run(default_embedder(), args.rounds)
    print("\n".join([f"## {TITLE}", "", render_environment(env, command_line("benchmarks.ui_latency", argv)), ""]))
    print(render(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
