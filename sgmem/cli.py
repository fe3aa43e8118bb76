"""The ``sgmem`` command line: demo, ingest, search, context, stats, threads, messages, export, forget, eval,
calibrate, mcp.

Stores default to ``$SGMEM_PATH`` or ``./.sgmem`` (``--path``), or ``$SGMEM_STORE`` (``--store``); the scope
defaults to ``$SGMEM_SCOPE``. Every command calls :class:`sgmem.Memory`; the CLI holds no logic of its own
beyond reading files and printing.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from ._version import __version__
from .errors import InvalidInputError, LimitExceededError, NotFoundError, SgmemError
from .files import load_messages as _load_messages
from .validate import check_name, normalise_messages

__all__ = ["main", "neutralise"]

DEFAULT_PATH = ".sgmem"
#: The environment variable naming the scope when ``--scope`` is not given (every command).
SCOPE_ENV = "SGMEM_SCOPE"


def redact(url: str) -> str:
    from .targets import is_postgres_target
    from .targets import redact as _redact

    if not is_postgres_target(url):  # a directory: nothing to hide, and no psycopg import (0.2 s) to say so
        return url
    return _redact(url)


#: Messages per ``add_many`` call of ``sgmem ingest`` (whole threads are kept together): the progress bar
#: moves per batch, and one length-sorted embedding pass per batch costs little against one for the file.
INGEST_BATCH = 256

# the process's real stderr while main() runs: progress bars write to it directly (their carriage returns
# would be neutralised by the safe stream)
_raw_err: Any = None


def _progress_on(args: argparse.Namespace) -> bool:
    """Whether to show progress: on a terminal, without ``--quiet``."""
    stream = _raw_err or sys.stderr
    return not getattr(args, "quiet", False) and bool(getattr(stream, "isatty", lambda: False)())


def _bar(args: argparse.Namespace, total: int, desc: str, unit: str) -> Any:
    """A tqdm progress bar on the terminal (disabled when :func:`_progress_on` is false)."""
    from tqdm import tqdm

    return tqdm(
        total=total, desc=neutralise(desc), unit=unit, file=_raw_err or sys.stderr, disable=not _progress_on(args)
    )


def _notes(args: argparse.Namespace) -> Any:
    """A progress callback for long work: its lines go to stderr on a terminal, nowhere otherwise."""
    show = _progress_on(args)

    def note(text: str) -> None:
        if show:
            print(text, file=sys.stderr, flush=True)

    return note


def _load_model(args: argparse.Namespace, mem: Any) -> None:
    """Load the embedding model now, saying so on a terminal (it takes seconds and would look like a hang)."""
    if _progress_on(args):
        print("loading the embedding model...", end="", file=sys.stderr, flush=True)
        print(f" {mem.warmup():.1f} s", file=sys.stderr, flush=True)


def _batches(groups: list[tuple[Any, Any]], size: int) -> list[list[tuple[Any, Any]]]:
    out: list[list[tuple[Any, Any]]] = [[]]
    n = 0
    for g in groups:
        if n >= size:
            out.append([])
            n = 0
        out[-1].append(g)
        n += len(g[1])
    return [b for b in out if b]


def _adds(groups: list[tuple[Any, Any]], limits: Any) -> list[tuple[Any, Any]]:
    """Each thread as the adds that store it: one add when the thread is within one add's limits
    (``Limits.max_messages_per_add``, ``max_sentences_per_add``), else consecutive adds in order, each within
    them (a thread a long-running agent wrote over many adds comes back from its export).

    Raises:
        LimitExceededError: one message alone is over ``max_sentences_per_add`` (before anything is stored).
    """
    from .ingest import kept_spans

    cap_msgs, cap_sents = limits.max_messages_per_add, limits.max_sentences_per_add
    out: list[tuple[Any, Any]] = []
    for thread, msgs in groups:
        if not isinstance(msgs, list):
            out.append((thread, msgs))  # validation names it
            continue
        part: list[Any] = []
        n = 0
        for i, m in enumerate(msgs):
            text = m.get("content") if isinstance(m, dict) else None
            k = len(kept_spans(text)) if isinstance(text, str) and text.strip() else 1  # (else refused later)
            if k > cap_sents:
                raise LimitExceededError(
                    f"thread {thread!r} messages[{i}]", k, cap_sents, "sentences", "max_sentences_per_add"
                )
            if part and (len(part) >= cap_msgs or n + k > cap_sents):
                out.append((thread, part))
                part, n = [], 0
            part.append(m)
            n += k
        out.append((thread, part))
    return out


def _default_path() -> str:
    return os.environ.get("SGMEM_PATH", DEFAULT_PATH)


def _memory(path: str | None) -> Any:
    """The store at ``path`` as a one-shot command opens it: the bundled MiniLM run in NumPy
    (:mod:`sgmem.embed.numpy_bert`, the same vectors without importing PyTorch) and the lemma and token
    tables read from their decoded copies (:mod:`sgmem.tables`), so a command answers in about a second."""
    from . import tables
    from .embed.numpy_bert import numpy_minilm
    from .memory import Memory

    tables.enable()
    return Memory(path, embedder=numpy_minilm())


def _existing(path: str) -> Any:
    """The store at ``path`` for a command that only reads or deletes: one that does not exist is an error,
    and nothing is created (a mistyped ``--path`` must not leave an empty store and print nothing found)."""
    from .store import DB_FILENAME

    if "://" not in path and not (Path(path) / DB_FILENAME).is_file():
        raise NotFoundError(
            f"no sgmem store at {str(Path(path).resolve())!r} (no {DB_FILENAME} there). Check --path "
            "(default $SGMEM_PATH or ./.sgmem) or --store; `sgmem ingest` creates a store."
        )
    return _memory(path)


def _print_hit(i: int, hit: Any, out: Any) -> None:
    when = hit.at.strftime("%Y-%m-%d")
    text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
    print(f"  {i}. [{hit.score:.3f}] {when} {hit.speaker}: {text}", file=out)
    why = hit.why
    parts = []
    if why.get("sentence"):
        parts.append(f"best sentence: {why['sentence']!r}")
    if why.get("matched"):
        parts.append(f"matched words: {', '.join(why['matched'])}")
    if why.get("channels"):
        ch = why["channels"]
        parts.append("channels: " + ", ".join(f"{k} {v:.2f}" for k, v in ch.items() if v))
    if why.get("graph", {}).get("hop"):
        parts.append(f"reached by graph hop from {why['graph'].get('via_seed')!r}")
    if why.get("broad"):
        parts.append(
            f"a broad question about you: your statement, kept below the cutoff (relevance {hit.relevance:.3f})"
        )
    for p in parts:
        print(f"       why → {p}", file=out)
    print(f"       ids: {', '.join(hit.message_ids)} · thread {hit.thread}", file=out)


def cmd_demo(args: argparse.Namespace) -> int:
    """Ingest the bundled sample conversation and show searches with their ``why``."""
    data = json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))
    scope = data["scope"]
    path = args.path
    where = redact(path) if "://" in path else f"{Path(path).resolve()} (SQLite + FAISS, no server, no API key)"
    print(f"sgmem demo — store: {where}")
    t0 = time.perf_counter()
    with _memory(path) as mem:
        mem.delete(scope=scope)  # the demo starts from a clean scope each run
        n_msgs = n_sents = 0
        for th in data["threads"]:
            res = mem.add(th["messages"], scope=scope, thread=th["thread"], at=th["at"])
            n_msgs += res.messages
            n_sents += res.sentences
        print(
            f"ingested {n_msgs} messages / {n_sents} sentences in {len(data['threads'])} threads "
            f"({time.perf_counter() - t0:.1f}s, including model load)\n"
        )
        for q in data["queries"]:
            print(f"Q: {q}")
            for i, hit in enumerate(mem.search(q, scope=scope, k=args.k), 1):
                _print_hit(i, hit, sys.stdout)
            print()
        q = "Plan a weekend for Priya and her sister"
        print(f"Memory.context({q!r}, budget_tokens=250):\n")
        print(mem.context(q, scope=scope, budget_tokens=250))
        st = mem.stats(scope)
        s = st.scopes[0]
        print(
            f"\nstats: {s.messages} messages, {s.sentences} sentences, {s.similarity_edges} similarity edges, "
            f"{s.chronological_edges} chronological edges, embedder {st.embedder}"
        )
    return 0


def ingest_id(thread: str, position: int, message: dict[str, Any]) -> str:
    """The id ``sgmem ingest`` gives a message without one: a hash of its thread, its position in that thread
    in the file, its role, speaker and text. The same file ingested again yields the same ids, so what is
    already stored is recognised and skipped; a message appended to a thread gets a new one."""
    key = json.dumps([thread, position, message.get("role"), message.get("name"), message.get("content")])
    return "ingest-" + hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def _date_and_identify(groups: list[tuple[Any, Any]], file_at: datetime) -> int:
    """Give every message an id (:func:`ingest_id` when it has none) and a date: an undated message takes the
    previous message's date in its thread, the first one the file's (``--at`` or its modification time).

    Returns how many messages took the file's date.
    """
    from_file = 0
    for thread, msgs in groups:
        if not isinstance(msgs, list):
            continue  # validation names it
        last: Any = None
        for pos, m in enumerate(msgs):
            if not isinstance(m, dict):
                continue
            if m.get("id") is None and isinstance(thread, str):
                m["id"] = ingest_id(thread, pos, m)
            if m.get("at") is None:
                if last is None:
                    from_file += 1
                m["at"] = last if last is not None else file_at
            last = m["at"]
    return from_file


def _check_ingest(
    mem: Any, scope: str, groups: list[tuple[Any, Any]], edited: frozenset[str] = frozenset()
) -> tuple[list[tuple[Any, Any]], int]:
    """Validate a whole file before the first add, so a bad file stores nothing; leave out what is stored.

    Returns the groups still to add and how many messages were already stored (the same id, role and text).
    A stored id holding another message is an error, unless it is one of the ``edited`` ids (:func:`_edits`),
    which are left out too (they replace stored messages).
    """
    limits = mem.config.limits
    check_name(scope, "--scope", limits, new=True)
    now = datetime.now(timezone.utc)
    seen: set[str] = set()
    for thread, msgs in groups:
        check_name(thread, "thread", limits, new=True)
        ids = [m["id"] for m in normalise_messages(msgs, now, limits) if m["id"]]
        dup = seen.intersection(ids)
        if dup:
            raise InvalidInputError("messages[].id", sorted(dup)[:5], "ids used once in the file")
        seen.update(ids)
    stored = {m.id: m for m in mem.get(scope=scope, message_ids=sorted(seen))}
    clash = [
        m["id"]
        for _, msgs in groups
        for m in msgs
        if m["id"] in stored
        and m["id"] not in edited
        and (stored[m["id"]].content, stored[m["id"]].role) != (m["content"], m["role"])
    ]
    if clash:
        raise InvalidInputError(
            "messages[].id",
            clash[:5],
            f"ids that are not already stored in scope {scope!r} with another text",
            "Message ids are unique per scope; rename them in the file or delete the stored messages first.",
        )
    todo = [(t, [m for m in msgs if m["id"] not in stored and m["id"] not in edited]) for t, msgs in groups]
    return [(t, msgs) for t, msgs in todo if msgs], len(stored) - len(edited.intersection(stored))


def _given(groups: list[tuple[Any, Any]]) -> list[list[tuple[bool, bool]]]:
    """Whether each message of the file gave its own id and its own time (before :func:`_date_and_identify`)."""
    return [
        [(m.get("id") is not None, m.get("at") is not None) if isinstance(m, dict) else (False, False) for m in msgs]
        if isinstance(msgs, list)
        else []
        for _, msgs in groups
    ]


def _edits(
    mem: Any, scope: str, groups: list[tuple[Any, Any]], given: list[list[tuple[bool, bool]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """The file's edits of stored messages: ``thread → {stored id: the new version}``.

    A message is an edit of a stored one when it has the stored message's own id (one the file gives) with
    another text, role or speaker, or, without an id of its own, when it sits at the thread position the
    stored message was ingested from (its ``ingest-`` id is the hash of that position and its old text) with
    another text. The new version keeps the stored message's time unless the file gives one.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    known = set(mem.threads(scope=scope))
    for (thread, msgs), flags in zip(groups, given, strict=True):
        if thread not in known or not isinstance(msgs, list):
            continue  # a new thread has nothing to edit; a malformed group is named by the validation
        stored = mem.messages(scope=scope, thread=thread)
        by_id = {s.id: s for s in stored}
        in_file = {m.get("id") for m in msgs if isinstance(m, dict)}
        texts = {_said(m) for m in msgs if isinstance(m, dict)}
        said_before = {_said(s) for s in stored}
        found: dict[str, dict[str, Any]] = {}
        for pos, (m, (own_id, own_at)) in enumerate(zip(msgs, flags, strict=True)):
            if not isinstance(m, dict) or not isinstance(m.get("content"), str):
                continue  # the validation names it
            if own_id:
                old = by_id.get(m["id"])
                if old is None or (old.content, old.role, old.name) == (m["content"], m.get("role"), m.get("name")):
                    continue
            elif m["id"] in by_id:
                continue
            else:
                old = _ingested_at(thread, pos, stored)
                if old is None or old.id in in_file or old.id in found:
                    continue
                if _said(old) in texts or _said(m) in said_before:
                    continue  # a message moved to another position (one inserted or removed above it): no edit
            new = {k: m[k] for k in ("role", "content", "id") if k in m}
            new["name"] = m.get("name")
            new.update({k: m[k] for k in ("session", "metadata") if m.get(k) is not None})
            if own_at:
                new["at"] = m["at"]
            found[str(old.id)] = new
        if found:
            out[thread] = found
    return out


def _said(m: Any) -> tuple[Any, Any, Any]:
    """Who said what: a message's role, speaker and text (a stored :class:`Message` or a file's dict)."""
    if isinstance(m, dict):
        return m.get("role"), m.get("name"), m.get("content")
    return m.role, m.name, m.content


def _ingested_at(thread: str, position: int, stored: list[Any]) -> Any:
    """The stored message ``sgmem ingest`` took from ``position`` of ``thread`` (its id says so), or None."""

    def took(s: Any) -> bool:
        return bool(s.id) and s.id == ingest_id(
            thread, position, {"role": s.role, "name": s.name, "content": s.content}
        )

    if position < len(stored) and took(stored[position]):
        return stored[position]
    return next((s for s in stored if took(s)), None)


def cmd_ingest(args: argparse.Namespace) -> int:
    path = Path(args.file)
    groups = _load_messages(path, args.thread)
    from .validate import check_time

    file_at = check_time(args.at, "--at")
    how = f"--at {args.at}"
    if file_at is None:
        file_at = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        how = f"the file's modification time, {file_at:%Y-%m-%d %H:%M} UTC; set it with --at"
    given = _given(groups)
    from_file = _date_and_identify(groups, file_at)
    # a dry run on a store that does not exist yet compares with an empty one and creates nothing
    fresh = args.dry_run and "://" not in str(args.path) and not (Path(args.path) / "sgmem.db").is_file()
    with _memory(None if fresh else args.path) as mem:
        check_name(args.scope, "--scope", mem.config.limits, new=True)
        edits = _edits(mem, args.scope, groups, given)
        edited = frozenset(str(new["id"]) for found in edits.values() for new in found.values())
        todo, skipped = _check_ingest(mem, args.scope, _adds(groups, mem.config.limits), edited)
        if from_file:
            print(f"{from_file} threads start with an undated message: dated by {how}", file=sys.stderr)
        if args.dry_run:
            return _dry_run(mem, args, todo, edits, skipped)
        if todo or edits:
            _load_model(args, mem)
        total, lines = 0, []
        # an edited thread's new messages: its first add goes with the edit (one transaction), any further
        # adds of a thread longer than one add's limits follow it in order
        appended: dict[str, list[Any]] = {}
        rest = []
        for t, msgs in todo:
            if t in edits and t not in appended:
                appended[t] = msgs
            else:
                rest.append((t, msgs))
        todo = rest
        with _bar(args, sum(len(msgs) for _, msgs in todo), "ingest", "msg") as bar:
            for thread, found in edits.items():  # in place, the earlier texts kept, in one transaction each
                more = appended.get(thread, [])
                mem.edit(found, scope=args.scope, thread=thread, append=more)
                total += len(more)
                lines.append(
                    f"{thread}: {len(found)} edited message{'s' if len(found) != 1 else ''} replaced as new "
                    "versions, in place "
                    f"({', '.join(found)}; the earlier text: sgmem messages ID --versions), {len(more)} messages added"
                )
            # each batch's texts embedded in one length-sorted pass; one transaction per thread
            for batch in _batches(todo, INGEST_BATCH):
                for (thread, _), res in zip(batch, mem.add_many(batch, scope=args.scope), strict=True):
                    total += res.messages
                    lines.append(f"{thread}: {res.messages} messages, {res.sentences} sentences, {res.edges} edges")
                    bar.update(res.messages)
        for line in lines:
            print(line)
        n_edits = sum(len(found) for found in edits.values())
        notes = ([f"{n_edits} edited, replaced as new versions"] if n_edits else []) + (
            [f"{skipped} already stored, skipped"] if skipped else []
        )
        more = f" ({'; '.join(notes)})" if notes else ""
        print(f"ingested {total} messages into scope {args.scope!r} at {redact(str(args.path))}{more}")
    return 0


def _dry_run(
    mem: Any, args: argparse.Namespace, todo: list[tuple[Any, Any]], edits: dict[str, Any], skipped: int
) -> int:
    """``sgmem ingest --dry-run``: what the ingest would change, and nothing stored."""
    for thread, found in edits.items():
        old = {m.id: m for m in mem.get(scope=args.scope, message_ids=list(found))}
        for mid, new in found.items():
            print(f"{thread}: would replace {mid} (kept as an earlier version): {_one_line(old[mid].content, 60)!r}")
            print(f"{' ' * len(thread)}  with {new['id']}: {_one_line(new['content'], 60)!r}")
    for thread, msgs in todo:
        print(f"{thread}: would add {len(msgs)} messages")
    n_new = sum(len(msgs) for _, msgs in todo)
    n_edits = sum(len(found) for found in edits.values())
    print(
        f"dry run: {n_new} messages to add, {n_edits} to replace as new versions, {skipped} already stored, "
        f"in scope {args.scope!r} at {redact(str(args.path))}; nothing was stored"
    )
    return 0


def _nothing_found(mem: Any, scope: str, cut: Sequence[Any], min_score: float | None) -> str:
    """Why a search or context came back empty: an empty scope, or memories all below the relevance cutoff."""
    if cut:
        best = max(h.relevance for h in cut)
        if min_score is not None:
            why = f"the best at relevance {best:.3f} < {min_score:.3f}"
        else:  # the default cutoff weighs the best relevance and the best plain cosine together (Config.min_relevance)
            why = (
                f"the best at relevance {best:.3f}: the default cutoff found too little evidence (best relevance / "
                f"{mem.min_relevance:g} + best dense relevance / {mem.min_dense_relevance:g} under 2)"
            )
        return (
            f"nothing passed the relevance cutoff in scope {scope!r}: {len(cut)} memories ranked, {why}. "
            "Pass --min-score (0 shows them all)."
        )
    if mem.threads(scope=scope):
        return f"no memory of scope {scope!r} matched the query."
    scopes = mem.scopes()
    known = f"; scopes in this store: {', '.join(map(repr, scopes[:10]))}" if scopes else "; the store is empty"
    return f"scope {scope!r} holds no memories{known}."


def cmd_search(args: argparse.Namespace) -> int:
    with _existing(args.path) as mem:
        hits = mem.search(
            args.query, scope=args.scope, k=args.k, mode=args.mode, min_score=args.min_score, now=args.now
        )
        if args.json:
            print(_to_json([{**h.__dict__, "at": h.at.isoformat()} for h in hits]))
            return 0
        if not hits:
            cut = (
                []
                if args.min_score == 0
                else mem.search(args.query, scope=args.scope, k=args.k, mode=args.mode, min_score=0, now=args.now)
            )
            print(_nothing_found(mem, args.scope, cut, args.min_score))
        for i, hit in enumerate(hits, 1):
            _print_hit(i, hit, sys.stdout)
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    with _existing(args.path) as mem:
        trace = mem.context_trace(
            args.query,
            scope=args.scope,
            budget_tokens=args.budget,
            mode=args.mode,
            min_score=args.min_score,
            now=args.now,
        )
        if trace.text:
            print(trace.text)
        else:  # the block is empty: say why on stderr, so that stdout stays the block
            print(
                f"sgmem: empty context: {_nothing_found(mem, args.scope, trace.cut, args.min_score)}", file=sys.stderr
            )
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with _existing(args.path) as mem:
        st = mem.stats(args.scope)
        print(f"store {st.path}: schema {st.schema_version}, embedder {st.embedder} (dim {st.dim})")
        for s in st.scopes:
            print(
                f"  {s.scope}: {s.threads} threads, {s.sessions} sessions, {s.messages} messages, "
                f"{s.sentences} sentences, {s.similarity_edges} similarity + {s.chronological_edges} "
                f"chronological edges, {s.tokens} tokens"
            )
        if not st.scopes:
            print("  (empty)")
    return 0


def _one_line(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def cmd_threads(args: argparse.Namespace) -> int:
    """The scope's threads with their message counts and first and last dates."""
    with _existing(args.path) as mem:
        names = mem.threads(scope=args.scope)
        if not names:
            print(_nothing_found(mem, args.scope, [], None))
        for name in names:
            msgs = mem.messages(scope=args.scope, thread=name)
            first, last = (msgs[0].at, msgs[-1].at) if msgs else (None, None)
            span = f"{first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M}" if first and last else ""
            print(f"{name}\t{len(msgs)} messages\t{span}")
    return 0


def cmd_messages(args: argparse.Namespace) -> int:
    """List a scope's (or a thread's) messages, or show the ones named by id in full."""
    if args.versions and not args.ids:
        raise InvalidInputError("--versions", True, "message ids to show every text of (sgmem messages ID --versions)")
    with _existing(args.path) as mem:
        if args.versions:
            return _print_versions(mem, args)
        if args.ids:
            msgs = mem.get(scope=args.scope, message_ids=args.ids)
            missing = [i for i in args.ids if i not in {m.id for m in msgs}]
            if missing:
                print(f"sgmem: not in scope {args.scope!r}: {', '.join(missing[:20])}", file=sys.stderr)
        else:
            msgs = mem.messages(scope=args.scope, thread=args.thread, limit=args.limit)
            if not msgs:
                print(_nothing_found(mem, args.scope, [], None))
            elif args.limit is not None and len(msgs) == args.limit:
                total = len(mem.messages(scope=args.scope, thread=args.thread))
                if total > len(msgs):  # say which part of the list this is (stderr: stdout stays the list)
                    print(
                        f"sgmem: the {len(msgs)} most recent of {total} messages, oldest first (--limit {args.limit})",
                        file=sys.stderr,
                    )
        if args.json:
            print(_to_json([m.to_dict() for m in msgs]))
        elif args.ids:
            for m in msgs:
                print(f"id: {m.id}\nthread: {m.thread}\nat: {m.at.isoformat() if m.at else ''}")
                print(f"role: {m.role}" + (f"\nname: {m.name}" if m.name else "") + f"\n\n{m.content}\n")
        else:
            for m in msgs:
                when = f"{m.at:%Y-%m-%d %H:%M}" if m.at else "-"
                print(f"{m.id}\t{when}\t{m.thread}\t{m.name or m.role}: {_one_line(m.content)}")
        if args.ids and len(msgs) < len(args.ids):
            return 1
    return 0


def _print_versions(mem: Any, args: argparse.Namespace) -> int:
    """``sgmem messages ID... --versions``: every text of each message, oldest first."""
    missing, shown = [], []
    for mid in args.ids:
        try:
            shown.append(mem.versions(mid, scope=args.scope))
        except NotFoundError:
            missing.append(mid)
    if args.json:
        rows = [
            {**v.__dict__, "at": v.at.isoformat(), "replaced_at": v.replaced_at and v.replaced_at.isoformat()}
            for vs in shown
            for v in vs
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for vs in shown:
            for v in vs:
                state = f"replaced {v.replaced_at:%Y-%m-%d %H:%M}" if v.replaced_at else "current"
                print(f"{v.message_id} version {v.version} ({state}; id then: {v.id}; said {v.at:%Y-%m-%d %H:%M})")
                print(f"role: {v.role}" + (f"\nname: {v.name}" if v.name else "") + f"\n\n{v.content}\n")
    if missing:
        print(f"sgmem: not in scope {args.scope!r}: {', '.join(missing[:20])}", file=sys.stderr)
        return 1
    return 0


def export_lines(mem: Any, scope: str, thread: str | None = None) -> list[str]:
    """A scope's (or one thread's) messages as JSONL lines in the format ``sgmem ingest`` reads.

    One object per message, in the order they were added: ``thread``, ``id``, ``role``, ``name``,
    ``content``, ``at``, ``session``, ``metadata``. ASCII-escaped, so the file passes through
    any terminal or tool unchanged; ingesting it into another store and exporting again gives the same lines.
    """
    lines = []
    for m in mem.messages(scope=scope, thread=thread):
        d = m.to_dict()
        row = {"thread": d.pop("thread"), **d}
        lines.append(json.dumps(row, ensure_ascii=True, sort_keys=False))
    return lines


def cmd_export(args: argparse.Namespace) -> int:
    """Write a scope's messages as JSONL (stdout or ``--out``)."""
    with _existing(args.path) as mem:
        lines = export_lines(mem, args.scope, args.thread)
        if not lines:
            raise NotFoundError(f"nothing to export: {_nothing_found(mem, args.scope, [], None)}")
        text = "".join(line + "\n" for line in lines)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
            print(f"exported {len(lines)} messages of scope {args.scope!r} to {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Delete messages by id, a thread, or a whole scope (asks first unless ``--yes``), and print the receipt."""
    chosen = sum(1 for x in (args.ids, args.thread, args.all) if x)
    if chosen != 1:
        raise InvalidInputError(
            "forget", "ids" if chosen > 1 else None, "exactly one of: message ids, --thread T, or --all"
        )
    with _existing(args.path) as mem:
        if args.all and not args.yes:
            what = f"every memory of scope {args.scope!r} ({len(mem.threads(scope=args.scope))} threads)"
            if not sys.stdin.isatty():
                raise InvalidInputError(
                    "forget --all",
                    "no confirmation (there is no terminal to ask on)",
                    f"--yes to delete {what}",
                    "Nothing was deleted. Add --yes, or run it on a terminal to be asked first.",
                )
            answer = input(f"Delete {what}? This cannot be undone. [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing deleted")
                return 1
        receipt = mem.delete(scope=args.scope, thread=args.thread, message_ids=args.ids or None)
        print(
            f"deleted {receipt.messages} messages, {receipt.sentences} sentences, {receipt.edges} edges, "
            f"{receipt.vectors} vectors, {receipt.derived} generated memories"
            + (f"; threads emptied: {', '.join(receipt.threads)}" if receipt.threads else "")
            + ("" if receipt.scrubbed else "; the deleted text is not yet overwritten on disk (retried later)")
        )
        if not receipt.messages:
            print(f"sgmem: nothing matched in scope {args.scope!r}{_what_is_there(mem, args)}", file=sys.stderr)
            return 1
    return 0


def _what_is_there(mem: Any, args: argparse.Namespace) -> str:
    """Why ``forget`` matched nothing: the scope's threads (the likely one first) or how to find message ids."""
    import difflib

    threads = mem.threads(scope=args.scope)
    if not threads:
        return f": {_nothing_found(mem, args.scope, [], None)}"
    if args.thread is not None:
        close = difflib.get_close_matches(args.thread, threads, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        shown = ", ".join(map(repr, threads[:20])) + (f" and {len(threads) - 20} more" if len(threads) > 20 else "")
        return f": no thread {args.thread!r}{hint} Its threads: {shown}"
    return ": no message has these ids (`sgmem messages --scope S` lists them, `sgmem search` shows a hit's ids)"


def cmd_eval(args: argparse.Namespace) -> int:
    from .embed import default_embedder
    from .eval import CachingEmbedder, evaluate, render_report
    from .eval.relevance import DEFAULT_GRID

    if not Path(args.file).is_file():  # before loading the model
        raise InvalidInputError("file", args.file, "an existing LoCoMo JSON file")
    embedder: Any = default_embedder()
    if args.cache:
        embedder = CachingEmbedder(embedder, args.cache)
    if args.cutoffs:
        from .config import MIN_RELEVANCE, Config
        from .eval.answers import render_cutoffs, sweep_cutoffs
        from .eval.locomo import load_locomo

        default = MIN_RELEVANCE.get(embedder.name, 0.0)
        sweep = sweep_cutoffs(load_locomo(args.file, args.limit), embedder, progress=_notes(args))
        return _report_eval(args, embedder, render_cutoffs(sweep, default, Config().relative_relevance))
    if args.chat:
        from .eval.chat import evaluate_chat, render_chat
        from .eval.locomo import load_locomo

        res = evaluate_chat(load_locomo(args.file, args.limit), embedder, progress=_notes(args))
        return _report_eval(args, embedder, render_chat(res))
    if args.loo:
        report = _loo_report(args, embedder)
        print(report)
        if args.out:
            Path(args.out).write_text(report + "\n", encoding="utf-8")
        return 0
    systems: list[tuple[Any, ...]] = [("sgmem hybrid", "hybrid"), ("BM25 turns", "bm25"), ("dense sentences", "vector")]
    if args.pyramid:
        import dataclasses

        from .config import Config

        base = Config()
        no_pyr = base.with_(hybrid=dataclasses.replace(base.hybrid, w_pyramid=0.0))
        systems[1:1] = [("sgmem hybrid, no pyramid channel", "hybrid", no_pyr), ("sgmem pyramid", "pyramid")]
    if args.units:
        from .config import Config

        systems.insert(1, ("sgmem hybrid, exchange unit", "hybrid", Config(memory_unit="exchange")))
    if args.speaker_match:
        import dataclasses

        from .config import Config

        spk = Config().with_(hybrid=dataclasses.replace(Config().hybrid, speaker_match=1.0))
        systems.insert(1, ("sgmem hybrid, speaker_match=1", "hybrid", spk))
    config = None
    if args.knn_index or args.knn_rule:
        import dataclasses

        from .config import Config

        base = Config()
        graph = dataclasses.replace(base.graph, knn_index=args.knn_index or base.graph.knn_index)
        graph = dataclasses.replace(graph, knn_rule=args.knn_rule or graph.knn_rule)
        config = base.with_(graph=graph)
        systems.append(("sgmem graph (SGMem)", "graph"))
    rep = evaluate(
        args.file,
        systems=systems,
        config=config,
        embedder=embedder,
        limit=args.limit,
        budgets=tuple(args.budgets),
        relevance=DEFAULT_GRID if args.relevance else (),
        progress=_notes(args),
    )
    return _report_eval(args, embedder, render_report(rep))


def cmd_eval_longmemeval(args: argparse.Namespace) -> int:
    """``sgmem eval longmemeval FILE``: LongMemEval's retrieval metrics for sgmem and the baselines."""
    from .embed import default_embedder
    from .eval import CachingEmbedder
    from .eval.longmemeval import evaluate_longmemeval, load_longmemeval, render_longmemeval

    questions = load_longmemeval(args.file, limit=args.limit, per_type=args.per_type, seed=args.seed)
    embedder: Any = default_embedder()
    if args.cache:
        embedder = CachingEmbedder(embedder, args.cache)
    protocols = ("user", "all") if args.protocol == "both" else (args.protocol,)
    parts = []
    for protocol in protocols:
        rep = evaluate_longmemeval(
            questions,
            protocol=protocol,
            embedder=embedder,
            progress=_notes(args),
            path=str(args.file),
        )
        parts.append(render_longmemeval(rep))
        if len(protocols) > 1 and protocol != protocols[-1]:
            print(parts[-1], file=sys.stderr)  # a long run shows each protocol's figures as they are done
            if args.cache:
                embedder.save()
    return _report_eval(args, embedder, "\n".join(parts))


def cmd_eval_small(args: argparse.Namespace) -> int:
    """``sgmem eval small``: the defaults on small memories (the chat suite, LongMemEval's evidence sessions)."""
    from .embed import default_embedder
    from .eval import CachingEmbedder
    from .eval.oracle import default_longmemeval_path
    from .eval.pool import load_pool
    from .eval.small import run_small
    from .eval.small_report import render_small
    from .eval.suite import FOLDS

    if args.chats < 1:
        raise InvalidInputError("--chats", args.chats, "a number of chats of at least 1")
    bad = [f for f in args.folds or [] if not 0 <= f < FOLDS]
    if bad:
        raise InvalidInputError("--folds", bad, f"fold numbers from 0 to {FOLDS - 1}")
    pool = None if args.pool == "none" else args.pool
    lme = None if args.longmemeval is None else (
        default_longmemeval_path() if args.longmemeval == "default" else Path(args.longmemeval)
    )  # fmt: skip
    if pool is None and lme is None:
        raise InvalidInputError("--pool", "none", "a pool, or --longmemeval, to have something to measure")
    if pool is not None:
        load_pool(pool)  # a bad pool is reported before the model loads
    if lme is not None and not lme.is_file():
        raise InvalidInputError("--longmemeval", str(lme), "an existing LongMemEval JSON file (.json or .json.gz)")
    embedder: Any = default_embedder()
    if args.cache != "none":
        embedder = CachingEmbedder(embedder, Path(args.cache).expanduser())
    raw = run_small(
        pool=pool,
        longmemeval=lme,
        chats=args.chats,
        seed=args.seed,
        folds=args.folds,
        embedder=embedder,
        bm25_variants=args.bm25_variants,
        progress=_notes(args),
    )
    if args.raw:
        Path(args.raw).write_text(json.dumps(raw, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return _report_eval(args, embedder, render_small(raw, failures=args.failures))


def _report_eval(args: argparse.Namespace, embedder: Any, report: str) -> int:
    """Keep the embedding cache, print an evaluation's report and write it to ``--out``."""
    from .eval import CachingEmbedder

    if isinstance(embedder, CachingEmbedder):
        embedder.save()
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 0


def _loo_report(args: argparse.Namespace, embedder: Any) -> str:
    """``sgmem eval locomo --loo``: the dev-tuned settings, chosen leave-one-conversation-out."""
    from .eval import CachingEmbedder
    from .eval.locomo import load_locomo
    from .eval.loo import (
        CONTEXT_GRID,
        TUNED_GRID,
        apply_overrides,
        context_metric,
        gate_loo,
        loo,
        prepare,
        recall_metric,
        render_gate_loo,
        render_loo,
    )

    progress = _notes(args)

    convs = load_locomo(args.file, args.limit)
    parts = [f"LoCoMo leave-one-conversation-out — {args.file}: {len(convs)} conversations"]
    with prepare(convs, embedder, progress=progress) as prep:
        if isinstance(embedder, CachingEmbedder):
            embedder.save()
        # the memory unit and the speaker match (off by default) are chosen per fold like the weights
        grid = {**TUNED_GRID, "memory_unit": ["exchange"], "hybrid.speaker_match": [0.0, 0.5, 1.0, 2.0]}
        ret = loo(prep, grid, recall_metric(), progress=progress)
        parts += ["", render_loo(ret, "Retrieval weights (HybridConfig) and memory unit, by recall@10")]
        # the digest is chosen per fold on top of the retrieval setting that fold chose
        budget = args.budgets[0]
        bases = {f.held_out: apply_overrides(prep.config, f.chosen) for f in ret.folds}
        metric, cache = context_metric(budget), {}  # type: ignore[var-annotated]
        for select, how in ((0, "fragments"), (1, "whole turns")):
            ctx = loo(prep, CONTEXT_GRID, metric, base=bases, select=select, cache=cache, progress=progress)
            title = f"Context digest (context_turn_tokens), by evidence inside {budget} tokens counting {how}"
            parts += ["", render_loo(ctx, title)]
    parts += ["", render_gate_loo(gate_loo(args.file, embedder, limit=args.limit))]
    if isinstance(embedder, CachingEmbedder):
        embedder.save()
    return "\n".join(parts)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Print the portable gate's τ_noop for a corpus (ALGORITHMS §2.7)."""
    from .embed import default_embedder
    from .eval.corpus import calibrate_corpus

    if not Path(args.corpus).is_file():  # before loading the model
        raise InvalidInputError("corpus", args.corpus, "an existing .txt, .json or .jsonl file")
    if not 0.0 < args.quantile < 1.0:
        raise InvalidInputError("--quantile", args.quantile, "a number in (0, 1), e.g. 0.8")
    embedder: Any = default_embedder()
    if args.cache:
        from .eval import CachingEmbedder

        embedder = CachingEmbedder(embedder, args.cache)
    try:
        cal = calibrate_corpus(args.corpus, embedder, args.quantile, tuple(args.roles.split(",")))
    except ValueError as exc:
        raise InvalidInputError("corpus", args.corpus, "a corpus with at least two candidates", str(exc)) from None
    if hasattr(embedder, "save"):
        embedder.save()
    if args.json:
        print(json.dumps(cal.__dict__, indent=2))
        return 0
    print(f"tau_noop = {cal.tau_noop:.4f}  (p{round(cal.quantile * 100)} of s_vMF over {cal.candidates} candidates)")
    print("score quantiles: " + ", ".join(f"{k} {v:.4f}" for k, v in cal.quantiles.items()))
    print(f"skips {cal.skip_rate:.1%} of this corpus. Use it with:")
    print(f'  sgmem.Config(gate=sgmem.GateConfig(mode="binary", tau_noop={cal.tau_noop:.4f}))')
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one store and scope over the Model Context Protocol (:mod:`sgmem.mcp`)."""
    from .mcp import main as mcp_main

    return mcp_main(args)


def cmd_ui(args: argparse.Namespace) -> int:
    """Serve the memory inspector, a local web page over one store (:mod:`sgmem.ui`)."""
    from .ui import main as ui_main

    return ui_main(args)


def build_parser() -> argparse.ArgumentParser:
    from .config import MODES

    p = argparse.ArgumentParser(prog="sgmem", description="Long-term memory for LLM agents (no server, no LLM needed).")
    p.add_argument("--version", action="version", version=f"sgmem {__version__}", help="print the version and exit")
    p.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = p.add_subparsers(dest="command", required=True)

    def with_path(sp: argparse.ArgumentParser, default: str | None = None) -> None:
        sp.add_argument(
            "--path", default=default or _default_path(), help="store directory (default $SGMEM_PATH or ./.sgmem)"
        )
        sp.add_argument(
            "--store",
            default=os.environ.get("SGMEM_STORE") or None,
            metavar="URL",
            help="a shared PostgreSQL store, postgresql://user@host/db (default $SGMEM_STORE); overrides --path",
        )

    def with_scope(sp: argparse.ArgumentParser, what: str = "whose memory to use") -> None:
        env = os.environ.get(SCOPE_ENV) or None
        sp.add_argument("--scope", default=env, required=env is None, help=f"{what} (default ${SCOPE_ENV})")

    def with_search(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--mode", default=None, choices=MODES, help="retrieval mode (default: the store's, hybrid)")
        sp.add_argument(
            "--min-score",
            type=float,
            default=None,
            metavar="X",
            help="leave out memories whose relevance (0..1) is below X; 0 keeps all "
            "(default: the embedder's calibrated cutoff, 0.15 with a dense half of 0.45 for MiniLM)",
        )
        sp.add_argument(
            "--now",
            default=None,
            metavar="WHEN",
            help="the moment of asking, ISO-8601 (e.g. 2024-03-14T09:00:00Z): 'last week' or 'three days ago' "
            "in the query is relative to it (default: the clock)",
        )

    d = sub.add_parser("demo", help="ingest a bundled sample conversation and run searches")
    with_path(d, default=os.environ.get("SGMEM_PATH", ".sgmem-demo"))
    d.add_argument("--k", type=int, default=3, help="hits per search (3)")
    d.set_defaults(func=cmd_demo)

    i = sub.add_parser(
        "ingest",
        help="add messages from a JSON/JSONL file (messages already stored are skipped, edited ones replaced)",
        description="Add messages from a file. A message keeps its own id; one without gets a hash of its "
        "thread, position, role, speaker and text, so ingesting a file again stores nothing twice. A message "
        "whose text changed (same id, or same thread position) replaces the stored one in place as a new "
        "version; the earlier text stays readable (sgmem messages ID --versions). An undated "
        "message takes the date of the message before it in its thread, the first one --at or the file's "
        "modification time.",
    )
    i.add_argument("file", help='a JSON list of messages, {thread: [messages]}, {"threads": [...]} or JSONL')
    with_scope(i, "the scope to add to")
    i.add_argument("--thread", default=None, help="thread for files without thread names (default 'default')")
    i.add_argument(
        "--at",
        default=None,
        metavar="ISO-8601",
        help="date of a thread's first message when it has none (default: the file's modification time)",
    )
    i.add_argument("--quiet", "-q", action="store_true", help="no progress on the terminal")
    i.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would be added and which stored messages an edited file would replace; store nothing",
    )
    with_path(i)
    i.set_defaults(func=cmd_ingest)

    s = sub.add_parser("search", help="search a scope")
    s.add_argument("query", help="what to look for")
    with_scope(s, "the scope to search")
    s.add_argument("--k", type=int, default=5, help="how many hits (5)")
    with_search(s)
    s.add_argument("--json", action="store_true", help="print hits as JSON")
    with_path(s)
    s.set_defaults(func=cmd_search)

    c = sub.add_parser("context", help="print the budgeted context block for a query")
    c.add_argument("query", help="the question or message the block is for")
    with_scope(c, "the scope to recall from")
    c.add_argument("--budget", type=int, default=1000, help="the most tokens (cl100k_base) the block may take (1000)")
    with_search(c)
    with_path(c)
    c.set_defaults(func=cmd_context)

    st = sub.add_parser("stats", help="counts per scope")
    st.add_argument(
        "--scope", default=os.environ.get(SCOPE_ENV) or None, help=f"one scope (default ${SCOPE_ENV}, else all)"
    )
    with_path(st)
    st.set_defaults(func=cmd_stats)

    th = sub.add_parser("threads", help="list a scope's threads with their message counts and dates")
    with_scope(th)
    with_path(th)
    th.set_defaults(func=cmd_threads)

    ms = sub.add_parser("messages", help="list a scope's messages with ids and dates, or show some by id")
    ms.add_argument("ids", nargs="*", metavar="ID", help="show these messages in full (default: list them all)")
    with_scope(ms)
    ms.add_argument("--thread", default=None, help="only this thread")
    ms.add_argument(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="only the N most recent messages, listed oldest first (stderr says how many there are)",
    )
    ms.add_argument("--json", action="store_true", help="print the messages as JSON")
    ms.add_argument(
        "--versions", action="store_true", help="with ids: every text each message had (edits keep the earlier ones)"
    )
    with_path(ms)
    ms.set_defaults(func=cmd_messages)

    ex = sub.add_parser("export", help="write a scope's messages as JSONL that `sgmem ingest` reads back")
    with_scope(ex, "the scope to export")
    ex.add_argument("--thread", default=None, help="only this thread")
    ex.add_argument("--out", "-o", default=None, metavar="FILE", help="write to FILE (default: stdout)")
    with_path(ex)
    ex.set_defaults(func=cmd_export)

    fg = sub.add_parser(
        "forget", help="delete messages by id, a thread, or a whole scope, with everything derived from them"
    )
    fg.add_argument("ids", nargs="*", metavar="ID", help="the message ids to delete")
    with_scope(fg, "the scope to delete from")
    fg.add_argument("--thread", default=None, help="delete this whole thread")
    fg.add_argument("--all", action="store_true", help="delete the whole scope (asks first unless --yes)")
    fg.add_argument("--yes", "-y", action="store_true", help="do not ask before deleting a whole scope")
    with_path(fg)
    fg.set_defaults(func=cmd_forget)

    e = sub.add_parser("eval", help="evaluate retrieval on a benchmark")
    esub = e.add_subparsers(dest="benchmark", required=True)
    lo = esub.add_parser("locomo", help="LoCoMo evidence recall@k with baselines, no LLM")
    lo.add_argument("file", help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo-dev.json)")
    lo.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    lo.add_argument("--budgets", type=int, nargs="+", default=[1000], help="context budgets to measure")
    lo.add_argument("--cache", default=None, help="directory for an embedding cache (faster re-runs)")
    lo.add_argument("--out", default=None, help="also write the Markdown report here")
    lo.add_argument(
        "--pyramid",
        action="store_true",
        help="also run mode='pyramid' (MGRetrieval) and the hybrid without its pyramid channel",
    )
    lo.add_argument(
        "--units",
        action="store_true",
        help="also run the hybrid with the exchange memory unit (Config.memory_unit='exchange': "
        "a message and its reply per hit) beside the default turn unit",
    )
    lo.add_argument(
        "--speaker-match",
        action="store_true",
        help="also run the hybrid with HybridConfig.speaker_match=1 (a speaker's name in the question "
        "matches the turns that speaker said)",
    )
    lo.add_argument(
        "--loo",
        action="store_true",
        help="the dev-tuned settings (hybrid weights, context digest, gate tau_noop) chosen "
        "leave-one-conversation-out: held-out figures next to in-sample ones",
    )
    lo.add_argument(
        "--chat",
        action="store_true",
        help="LoCoMo inside a chat: the clean, echo (each question asked before, unanswered) and answered "
        "conditions side by side, against BM25, dense and their reciprocal rank fusion; the dialogue-act "
        "settings chosen leave-one-conversation-out",
    )
    lo.add_argument(
        "--cutoffs",
        action="store_true",
        help="the relevance cutoff (min_score) on answer-bearing hits: the bundled question -> answer pairs and "
        "LoCoMo's evidence kept, unrelated questions' contexts emptied, per threshold",
    )
    lo.add_argument(
        "--relevance",
        action="store_true",
        help="also sweep the relevance cutoff (min_score): evidence kept vs unrelated questions emptied, "
        "in-sample and leave-one-conversation-out",
    )
    lo.add_argument(
        "--knn-index",
        choices=["auto", "exact", "hnsw"],
        default=None,
        help="build the kNN similarity edges this way (GraphConfig.knn_index) and also run mode='graph'",
    )
    lo.add_argument(
        "--knn-rule",
        choices=["knn", "earlier"],
        default=None,
        help="link sentences by this rule (GraphConfig.knn_rule) and also run mode='graph'",
    )
    lo.add_argument("--quiet", "-q", action="store_true", help="no progress lines on the terminal")
    lo.set_defaults(func=cmd_eval)
    lme = esub.add_parser(
        "longmemeval",
        help="LongMemEval turn and session retrieval metrics with baselines, no LLM",
        description="Each question's haystack in a fresh store; sgmem, BM25, dense and their RRF rank the same turns.",
    )
    lme.add_argument("file", help="LongMemEval JSON, official format, .json or .json.gz")
    lme.add_argument(
        "--protocol",
        choices=["user", "all", "both"],
        default="both",
        help="store the user's turns only (the paper's setting), every turn of both roles, or both (default)",
    )
    lme.add_argument("--per-type", type=int, default=None, help="at most N questions of each type (seed 0)")
    lme.add_argument(
        "--seed", type=int, nargs="+", default=[0], help="the --per-type draw's seed; several: the union of draws"
    )
    lme.add_argument("--limit", type=int, default=None, help="only the first N questions")
    lme.add_argument("--cache", default=None, help="directory for an embedding cache (faster re-runs)")
    lme.add_argument("--out", default=None, help="also write the Markdown report here")
    lme.add_argument("--quiet", "-q", action="store_true", help="no progress lines on the terminal")
    lme.set_defaults(func=cmd_eval_longmemeval)
    sm = esub.add_parser(
        "small",
        help="the defaults on small memories: generated personal-assistant chats and LongMemEval's evidence "
        "sessions; P@1, answer inside the default context, unrelated questions emptied, against baselines",
        description="Each chat in a fresh Memory() at the defaults (search's k and cutoff, context's budget, now= "
        "the question's date); dense sentences, BM25, their RRF and the RRF with sgmem's role prior rank the "
        "same turns.",
    )
    sm.add_argument(
        "--pool", default="build", help="wording pool: build (default), report, a pool file's path, or none"
    )
    sm.add_argument(
        "--longmemeval",
        nargs="?",
        const="default",
        default=None,
        metavar="PATH",
        help="also LongMemEval reduced to each question's evidence sessions (no PATH: ../shared/data/longmemeval/)",
    )
    sm.add_argument("--chats", type=int, default=100, help="chats composed from the pool (100)")
    sm.add_argument("--seed", type=int, default=0, help="the suite's seed (0)")
    sm.add_argument("--folds", type=int, nargs="+", default=None, help="score only these question folds (0-4)")
    sm.add_argument(
        "--cache",
        default=str(Path("~/.cache/sgmem/eval")),
        help="embedding cache directory, so reruns are fast (~/.cache/sgmem/eval); none: no cache",
    )
    sm.add_argument("--bm25-variants", action="store_true", help="also report every bm25s variant's P@1")
    sm.add_argument("--failures", type=int, default=20, help="list sgmem's N worst misses (not for the report pool)")
    sm.add_argument("--raw", default=None, help="also write the per-question results (JSON) here")
    sm.add_argument("--out", default=None, help="also write the Markdown report here")
    sm.add_argument("--quiet", "-q", action="store_true", help="no progress lines on the terminal")
    sm.set_defaults(func=cmd_eval_small)

    cal = sub.add_parser("calibrate", help="calibrate the portable novelty gate's tau_noop on a corpus")
    cal.add_argument("corpus", help="a .txt (one memory per line), messages .json/.jsonl, or LoCoMo .json file")
    cal.add_argument("--quantile", type=float, default=0.8, help="skip the candidates above this quantile (0.8)")
    cal.add_argument("--roles", default="user", help="roles whose turns give candidates, comma-separated (user)")
    cal.add_argument("--cache", default=None, help="directory for an embedding cache")
    cal.add_argument("--json", action="store_true", help="print the result as JSON")
    cal.set_defaults(func=cmd_calibrate)

    from .mcp import add_arguments as mcp_arguments  # no SDK import until the command runs

    m = sub.add_parser("mcp", help="serve one scope's memory to MCP clients (stdio, or streamable HTTP)")
    mcp_arguments(m)
    with_path(m)
    m.set_defaults(func=cmd_mcp)

    from .ui import add_arguments as ui_arguments  # no Starlette import until the command runs

    u = sub.add_parser("ui", help="a memory inspector in the browser (local, read-only unless --write)")
    ui_arguments(u)
    with_path(u)
    u.set_defaults(func=cmd_ui)
    for command in {*sub.choices.values(), esub.choices["locomo"], esub.choices["longmemeval"]}:
        # after the command too (sgmem search Q --debug); SUPPRESS keeps a --debug given before it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    return p


DEBUG_HELP = "log what is stored, recalled, cut and injected, and why (the sgmem logger at DEBUG), on stderr"


@contextlib.contextmanager
def _debug_logging(on: bool) -> Iterator[None]:
    """``--debug``: the ``sgmem`` logger's DEBUG lines on stderr while the command runs (silent by default)."""
    if not on:
        yield
        return
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    log = logging.getLogger("sgmem")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides that reorder what a
# terminal shows: stored text printed raw could move the cursor, retitle the window or hide a line
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def neutralise(text: str) -> str:
    """``text`` with terminal control and escape sequences shown as ``\\x1b``-style escapes, not obeyed."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _to_json(data: Any) -> str:
    """``data`` as indented JSON, readable (non-ASCII text as it is) and still safe on a terminal: the
    characters :func:`neutralise` would rewrite are written as JSON's ``\\uXXXX`` escapes, so the output parses
    back to the same text (``\\x92`` as text would not be JSON)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    # JSON itself escapes C0 controls; what is left of _UNSAFE can only be inside a string, where an escape is valid
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _SafeStream:
    """A text stream that neutralises control characters in everything written to it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(neutralise(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sgmem`` command.

    Everything printed goes through :func:`neutralise`: memories are user text,
    and an escape sequence in one must not act on the terminal.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    if getattr(args, "store", None):
        args.path = args.store  # sgmem.Memory takes a directory or a postgresql:// URL
    global _raw_err
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _SafeStream(out), _SafeStream(err)  # type: ignore[assignment]
    _raw_err = err
    try:
        with _debug_logging(bool(getattr(args, "debug", False))):
            return _run(args)
    finally:
        sys.stdout, sys.stderr = out, err
        _raw_err = None


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except SgmemError as exc:
        print(f"sgmem: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"sgmem: error: {exc.filename}: no such file", file=sys.stderr)
        return 2
    except OSError as exc:  # a directory given as a file, no permission, disk full...
        print(f"sgmem: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
