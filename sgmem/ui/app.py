"""The inspector's pages: a thin adapter from HTTP to :class:`sgmem.Memory` (no retrieval of its own).

Read pages (always): the scopes with their counts, a scope's threads on a
timeline, a thread's messages with each sentence's dialogue act, a search
with every hit's relevance against the cutoff and its channels, the context
block a model would receive, a message's neighbourhood in the sentence
graph, and a generated memory's versions. Write routes
(forget a message, a thread or a scope) exist only in an app made with
``write=True``, and each needs the run's token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DependencyError, SgmemError

try:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
    from starlette.templating import Jinja2Templates
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise DependencyError('sgmem ui needs Starlette, uvicorn and Jinja2: pip install "sgmem[ui]"') from exc

from ..config import MODES
from ..text.acts import ACT_NAMES, act_of
from ..text.segment import sentence_spans
from ..text.tokens import count_tokens
from .graph import layout
from .guard import TOKEN_HEADER, HostOriginGuard, token_ok

if TYPE_CHECKING:
    from ..memory import Memory
    from ..types import Hit

__all__ = ["create_app"]

_HERE = Path(__file__).parent
#: Kinds a search may ask for: the mode's own hits, or those plus generated memory.
_KINDS = {"turns": None, "all": ["chunk", "summary", "fact", "insight"]}
_SECURITY_HEADERS = {
    # no script, no frame, nothing from elsewhere: the page is plain HTML and one stylesheet
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    # "same-origin", not "no-referrer": with no referrer a browser sends "Origin: null" on the page's own
    # forms, which the Origin check must refuse (a sandboxed frame of any site sends the same)
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _sentences(content: str, acts: dict[int, int] | None = None) -> list[tuple[str, str | None]]:
    """``content`` as pieces ``(text, act)``: each sentence with its dialogue act, the gaps between with ``None``.

    The sentences are the ones the index stores (:func:`sgmem.text.segment.sentence_spans`) and ``acts`` the
    acts ranking weighs them by, by position (as stored and resolved in the exchange); a sentence the index
    does not hold (a punctuation-only fragment) gets the word rules' act (:func:`sgmem.text.acts.act_of`).
    The pieces join back to ``content``.
    """
    acts = acts or {}
    out: list[tuple[str, str | None]] = []
    at = 0
    for j, (start, end) in enumerate(sentence_spans(content)):
        if start > at:
            out.append((content[at:start], None))
        act = acts.get(j)
        out.append((content[start:end], ACT_NAMES[act if act is not None else act_of(content[start:end])]))
        at = end
    if at < len(content):
        out.append((content[at:], None))
    return out


def _highlight(text: str, sentence: str | None) -> tuple[str, str, str]:
    """``text`` split around the first occurrence of ``sentence`` (the hit's why sentence)."""
    if sentence and (i := text.find(sentence)) >= 0:
        return text[:i], sentence, text[i + len(sentence) :]
    return text, "", ""


def _float(value: str | None, name: str) -> float | None:
    if value is None or value.strip() == "":
        return None
    try:
        return float(value)
    except ValueError:
        raise _Refused(400, f"{name} must be a number, got {value!r}") from None


def _int(value: str | None, name: str, default: int) -> int:
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise _Refused(400, f"{name} must be a whole number, got {value!r}") from None


def create_app(
    memory: Memory,
    *,
    hosts: frozenset[str] | set[str],
    scope: str | None = None,
    write: bool = False,
    token: str | None = None,
) -> Starlette:
    """The inspector as an ASGI app over ``memory``.

    Args:
        memory: the open store; the caller owns it (and closes it).
        hosts: the ``Host`` values to answer (:func:`sgmem.ui.guard.allowed_hosts`); any other Host,
            or an ``Origin`` not among them, gets 403.
        scope: serve only this scope (the others are not listed and answer 404).
        write: add the forget routes; without it the app has no route that changes the store.
        token: the write token every write must carry (form field ``token`` or header ``X-Sgmem-Token``);
            required with ``write``.
    """
    if write and not token:
        raise ValueError("create_app(write=True) needs the run's token")
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    templates.env.globals.update(modes=MODES, write=write, pinned=scope, acts=ACT_NAMES)

    def page(request: Request, name: str, status: int = 200, **ctx: Any) -> Response:
        resp = templates.TemplateResponse(request, name, ctx, status_code=status)
        resp.headers.update(_SECURITY_HEADERS)
        return resp

    def view(fn: Callable[[Request], Response]) -> Callable[[Request], Response]:
        """A sync endpoint (run in Starlette's thread pool) whose refusals and bad input render as a page."""

        def endpoint(request: Request) -> Response:
            try:
                return fn(request)
            except _Refused as exc:
                return page(request, "error.html", exc.status, message=exc.message)
            except SgmemError as exc:
                return page(request, "error.html", 400, message=str(exc))

        return endpoint

    def scope_arg(request: Request, params: Any = None) -> str:
        name = (params or request.query_params).get("s")
        if not name:
            raise _Refused(400, "no scope given (?s=NAME)")
        if scope is not None and name != scope:
            raise _Refused(404, "this server serves one scope only")
        return str(name)

    def scopes_page(request: Request) -> Response:
        stats = memory.stats(scope) if scope is not None else memory.stats()
        return page(request, "scopes.html", stats=stats)

    def scope_page(request: Request) -> Response:
        s = scope_arg(request)
        threads: dict[str, dict[str, Any]] = {}
        for m in memory.messages(scope=s):
            t = threads.setdefault(str(m.thread), {"name": m.thread, "first": m.at, "last": m.at, "messages": 0})
            t["messages"] += 1
            if m.at is not None:
                t["first"] = min(t["first"], m.at) if t["first"] else m.at
                t["last"] = max(t["last"], m.at) if t["last"] else m.at
        stats = memory.stats(s).scopes
        timeline = sorted(threads.values(), key=lambda t: (t["first"] is None, t["first"]))
        return page(request, "scope.html", scope=s, threads=timeline, stats=stats[0] if stats else None)

    def thread_page(request: Request) -> Response:
        s = scope_arg(request)
        thread = request.query_params.get("t") or ""
        msgs = memory.messages(scope=s, thread=thread) if thread else []
        acts = memory._sentence_acts(scope=s, thread=thread) if msgs else {}
        rows = [{"m": m, "pieces": _sentences(m.content, acts.get(m.id or ""))} for m in msgs]
        return page(request, "thread.html", scope=s, thread=thread, rows=rows, focus=request.query_params.get("m"))

    def search_args(request: Request) -> dict[str, Any]:
        q = request.query_params
        mode = q.get("mode") or None
        if mode is not None and mode not in MODES:
            raise _Refused(400, f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        return {
            "query": q.get("q", ""),
            "mode": mode,
            "min_score": _float(q.get("min_score"), "min_score"),
            "k": _int(q.get("k"), "k", 10),
            "kinds": q.get("kinds") if q.get("kinds") in _KINDS else "turns",
            "budget": _int(q.get("budget"), "budget", 1000),
        }

    def search_page(request: Request) -> Response:
        s = scope_arg(request)
        a = search_args(request)
        hits: list[Hit] = []
        cutoff = None
        if a["query"].strip():
            hits = memory.search(
                a["query"], scope=s, k=a["k"], mode=a["mode"], min_score=a["min_score"], kinds=_KINDS[a["kinds"]]
            )
            cutoff = a["min_score"]
            if cutoff is None:  # the default cutoff, as search applied it to the turns' relevance
                turn_rel = [h.relevance for h in hits if h.memory_id is None]
                # the query passed the cutoff when a hit came back on its own (not kept for a broad question)
                passed = any(h.memory_id is None and not h.why.get("broad") for h in hits)
                cutoff = memory._default_floor(turn_rel, memory.min_relevance, passed)
        view = _arrange(hits, a["k"], lambda ids: memory.get(scope=s, message_ids=ids))
        return page(request, "search.html", scope=s, a=a, cutoff=cutoff, searched=bool(a["query"].strip()), **view)

    def context_page(request: Request) -> Response:
        s = scope_arg(request)
        a = search_args(request)
        text = ""
        if a["query"].strip():
            text = memory.context(
                a["query"], scope=s, budget_tokens=a["budget"], mode=a["mode"], min_score=a["min_score"]
            )
        return page(request, "context.html", scope=s, a=a, text=text, tokens=count_tokens(text))

    def memory_page(request: Request) -> Response:
        s = scope_arg(request)
        mid = request.query_params.get("id") or ""
        versions = memory.history(mid, scope=s)
        sources = {m.id: m for m in memory.get(scope=s, message_ids=[i for v in versions for i in v.message_ids])}
        return page(request, "memory.html", scope=s, memory_id=mid, versions=versions, sources=sources)

    def graph_page(request: Request) -> Response:
        s = scope_arg(request)
        mid = request.query_params.get("m") or ""
        if not mid:
            raise _Refused(400, "no message given (?m=ID, an id from a search hit or a thread)")
        links = memory.neighbours(mid, scope=s, limit=_int(request.query_params.get("limit"), "limit", 8))
        found = memory.get(scope=s, message_ids=[mid])
        return page(
            request,
            "graph.html",
            scope=s,
            message_id=mid,
            message=found[0] if found else None,
            links=links,
            g=layout(links),
        )

    routes: list[Any] = [
        Route("/", view(scopes_page)),
        Route("/scope", view(scope_page)),
        Route("/thread", view(thread_page)),
        Route("/search", view(search_page)),
        Route("/context", view(context_page)),
        Route("/memory", view(memory_page)),
        Route("/graph", view(graph_page)),
        Mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static"),
    ]

    if write:

        def forget(request: Request) -> Response:
            form = _run_sync_form(request)
            given = request.headers.get(TOKEN_HEADER) or form.get("token")
            if not token_ok(token, given):
                raise _Refused(403, "this write needs the token printed in the terminal that started sgmem ui")
            s = scope_arg(request, form)
            ids = [str(i) for i in form.getlist("message_id") if i]
            thread = form.get("thread") or None
            if not ids and thread is None and form.get("confirm") != s:
                return page(request, "confirm.html", scope=s, typed=form.get("confirm"))
            receipt = memory.delete(scope=s, thread=thread, message_ids=ids or None)
            what = (
                f"message{'s' if len(ids) > 1 else ''} {', '.join(ids)}"
                if ids
                else f"thread {thread}"
                if thread
                else f"scope {s}"
            )
            return page(
                request,
                "receipt.html",
                scope=s,
                thread=thread,
                what=what,
                receipt=dataclasses.asdict(receipt),
                total=receipt.total,
                scrubbed=receipt.scrubbed,
            )

        routes.append(Route("/forget", view(forget), methods=["POST"]))

    return Starlette(routes=routes, middleware=[Middleware(HostOriginGuard, hosts=hosts)])


def _run_sync_form(request: Request) -> Any:
    """The request's form, read from a sync endpoint (Starlette's reader is async; the endpoint runs in a thread)."""
    from anyio.from_thread import run

    async def read() -> Any:
        return await request.form()

    return run(read)


def _channel_values(hit: Hit) -> dict[str, float]:
    chans = (hit.why or {}).get("channels") or {}
    return {k: float(v) for k, v in chans.items() if isinstance(v, (int, float))}


def _channels(hit: Hit, scale: float) -> list[tuple[str, float, float]]:
    """``(channel, score, bar length)`` for each channel of ``hit.why``, largest first; every bar of the page is
    on one ``scale`` (a lexical 0.5 is half a bar on every hit, not a full one where it is the hit's largest)."""
    vals = _channel_values(hit)
    return [(k, v, min(1.0, abs(v) / scale)) for k, v in sorted(vals.items(), key=lambda kv: -abs(kv[1]))]


def _order(hits: list[Hit]) -> str:
    """The measure the hits come ordered by: ``"relevance"`` when it never rises down the list, else ``"score"``
    when that never rises (the ranking score orders them), else ``"rank"`` (neither: search's order as it is)."""
    for measure in ("relevance", "score"):
        vals = [float(getattr(h, measure)) for h in hits]
        if all(a >= b - 1e-9 for a, b in zip(vals, vals[1:], strict=False)):
            return measure
    return "rank"


def _arrange(hits: list[Hit], k: int, sources: Callable[[list[str]], list[Any]]) -> dict[str, Any]:
    """The search page's entries: the turns (or chunks) in the order search returned them, each with the
    generated memories (facts, summaries, insights) made from it; a generated memory none of whose source turns
    is a hit is an entry of its own, with its source turns, while fewer than ``k`` entries are shown."""
    turns = [h for h in hits if h.memory_id is None]
    made = [h for h in hits if h.memory_id is not None]
    order = _order(turns)
    scale = max([1.0, *(abs(v) for h in hits for v in _channel_values(h).values())])
    top_score = max((h.score for h in turns), default=0.0) or 1.0

    def entry(h: Hit) -> dict[str, Any]:
        return {
            "hit": h,
            "parts": _highlight(h.text, (h.why or {}).get("sentence")),
            "channels": _channels(h, scale),
            "gauge": h.relevance if order != "score" else max(0.0, h.score) / top_score,
            "generated": [],
            "sources": [],
        }

    entries = [entry(h) for h in turns[:k]]
    alone: list[dict[str, Any]] = []
    left_out = 0
    for g in made:
        home = next((e for e in entries if set(g.message_ids) & set(e["hit"].message_ids)), None)
        if home is not None:
            home["generated"].append(g)
        elif len(entries) + len(alone) < k:
            e = entry(g)
            e["gauge"] = g.relevance
            e["sources"] = sources(list(g.message_ids)) if g.message_ids else []
            alone.append(e)
        else:
            left_out += 1
    return {
        "hits": entries,
        "alone": alone,
        "left_out": left_out,
        "order": order,
        "broad": any((h.why or {}).get("broad") for h in turns),
        "n_generated": sum(len(e["generated"]) for e in entries) + len(alone),
    }
