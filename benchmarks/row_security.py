"""What PostgreSQL row security costs: add, search and replay latency with no policy, the plain and the signed form.

``python -m benchmarks.row_security --url postgresql://...`` (a role that may
create schemas and roles, e.g. the tests' ``SGMEM_TEST_PG_URL``). In one run:
three schemas filled alike by the tables' owner (``scopes`` scopes of ``turns``
turns each, stand-in embedder): one without row security, one with
``Config(pg_row_security=True)`` and one with ``pg_scope_key`` as well. An
ordinary login role (password, TCP to 127.0.0.1, as an app host connects) then
times, interleaved round-robin over the three so that load drifts hit all
alike: ``add`` (one user + assistant exchange), ``search`` (hybrid, the scope's
index cached, so the store's share is the generation check and the texts) and
``messages`` (a replay of the scope, a pure store read). Reported: median ms
and the ratio to "none" in the same run. Not a timed test: a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

HERE = Path(__file__).resolve().parent
FORMS = ("none", "plain", "signed")
KEY = "benchmark-scope-key-" + "k" * 16


def _configs() -> dict[str, Any]:
    import sgmem

    base = sgmem.Config(min_relevance=0)
    return {
        "none": base,
        "plain": base.with_(pg_row_security=True),
        "signed": base.with_(pg_row_security=True, pg_scope_key=KEY),
    }


def _turn(scope: int, i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"In session {i} user {scope} talked about hobby {i % 7} and city {i % 5}."},
        {"role": "assistant", "content": f"Noted: hobby {i % 7}, city {i % 5}, turn {i}."},
    ]


def run(url: str, scopes: int = 8, turns: int = 30, rounds: int = 60) -> dict[str, Any]:
    """Fill three schemas, time the three forms as an ordinary role; medians and ratios to "none"."""
    import psycopg

    import sgmem
    from benchmarks.postgres import StandIn

    configs = _configs()
    embedder = StandIn()
    role, password = f"bench_app_{uuid.uuid4().hex[:8]}", secrets.token_hex(12)
    schemas = {form: f"bench_rls_{form}_{uuid.uuid4().hex[:8]}" for form in FORMS}
    with psycopg.connect(url, autocommit=True) as admin:
        db, port = admin.execute("SELECT current_database(), current_setting('port')").fetchall()[0]
        admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
        for schema in schemas.values():
            admin.execute(f'CREATE SCHEMA "{schema}"')

    def owner_url(schema: str) -> str:
        opt = quote(f"-csearch_path={schema},public", safe="")
        return f"{url}{'&' if '?' in url else '?'}options={opt}"

    def app_url(schema: str) -> str:
        opt = quote(f"-csearch_path={schema},public", safe="")
        return f"postgresql://{role}:{password}@127.0.0.1:{port}/{db}?options={opt}"

    times: dict[str, dict[str, list[float]]] = {f: {"add": [], "search": [], "messages": []} for f in FORMS}
    try:
        for form, schema in schemas.items():
            with sgmem.Memory(owner_url(schema), embedder=embedder, config=configs[form]) as mem:
                for s in range(scopes):
                    for i in range(turns):
                        mem.add(_turn(s, i), scope=f"user-{s}", thread="t")
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
                admin.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
                admin.execute(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}"')
        apps = {f: sgmem.Memory(app_url(schemas[f]), embedder=embedder, config=configs[f]) for f in FORMS}
        try:
            for f in FORMS:  # warm: each scope's index cached, as on a host serving them
                for s in range(scopes):
                    apps[f].search("hobby", scope=f"user-{s}", k=10)
            for r in range(rounds):
                scope = f"user-{r % scopes}"
                order = FORMS[r % 3 :] + FORMS[: r % 3]  # who goes first rotates
                for f in order:
                    mem = apps[f]
                    t0 = time.perf_counter()
                    mem.search(f"what about hobby {r % 7} in city {r % 5}", scope=scope, k=10)
                    t1 = time.perf_counter()
                    mem.messages(scope=scope, limit=20)
                    t2 = time.perf_counter()
                    mem.add(_turn(r % scopes, turns + r), scope=scope, thread="t")
                    t3 = time.perf_counter()
                    times[f]["search"].append(t1 - t0)
                    times[f]["messages"].append(t2 - t1)
                    times[f]["add"].append(t3 - t2)
        finally:
            for m in apps.values():
                m.close()
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            for schema in schemas.values():
                admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            admin.execute(f'DROP OWNED BY "{role}"')
            admin.execute(f'DROP ROLE "{role}"')
    out: dict[str, Any] = {"scopes": scopes, "turns": turns, "rounds": rounds, "load": os.getloadavg()[0]}
    for f in FORMS:
        out[f] = {op: statistics.median(v) * 1000 for op, v in times[f].items()}
    for f in ("plain", "signed"):
        out[f"{f}/none"] = {op: out[f][op] / out["none"][op] for op in out["none"]}
    out["signed/plain"] = {op: out["signed"][op] / out["plain"][op] for op in out["none"]}
    return out


def render(res: dict[str, Any]) -> str:
    ops = ("add", "search", "messages")
    lines = [
        f"row security cost: {res['scopes']} scopes x {res['turns']} turns, {res['rounds']} rounds "
        f"(load {res['load']:.1f}); median ms, as an ordinary role over TCP",
        "| form | " + " | ".join(ops) + " |",
        "|---|" + "---|" * len(ops),
    ]
    for f in FORMS:
        lines.append(f"| {f} | " + " | ".join(f"{res[f][op]:.2f}" for op in ops) + " |")
    for f in ("plain/none", "signed/none", "signed/plain"):
        lines.append(f"| {f} | " + " | ".join(f"{res[f][op]:.2f}x" for op in ops) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.row_security", description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("SGMEM_BENCH_PG_URL") or os.environ.get("SGMEM_TEST_PG_URL"))
    ap.add_argument("--scopes", type=int, default=8)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    if not args.url or not urlsplit(args.url).scheme:
        print("no server: pass --url postgresql://... (a role that may create schemas and roles)", file=sys.stderr)
        return 2
    res = run(args.url, args.scopes, args.turns, args.rounds)
    print(render(res))
    if args.json is not None:
        args.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
