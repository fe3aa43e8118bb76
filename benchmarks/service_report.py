"""The tables of the ``service`` part (:mod:`benchmarks.service`), from its raw results alone."""

from __future__ import annotations

from typing import Any

__all__ = ["render_part", "summary_lines"]

NAMES = {"postgres": "PostgreSQL", "sqlite": "embedded (SQLite)"}


def _f(x: Any, fmt: str = "{:.1f}") -> str:
    return "–" if x is None or x != x else fmt.format(x)


def _pair(r: dict[str, Any], key: str) -> str:
    return f"{_f(r.get(key + '_p50'))} / {_f(r.get(key + '_p95'))}"


def _by(rows: list[dict[str, Any]], backend: str, hosts: int) -> dict[str, Any] | None:
    """The run of ``backend`` with ``hosts`` hosts; several (capacity's two): their mean, figure by figure."""
    runs = [r for r in rows if r["backend"] == backend and r["hosts"] == hosts]
    if len(runs) < 2:
        return runs[0] if runs else None
    keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return {**runs[0], **{k: sum(float(r[k]) for r in runs) / len(runs) for k in keys}, "runs": len(runs)}


def capacity_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| hosts | PostgreSQL messages/s (per host) | embedded messages/s (per host) | **PostgreSQL ÷ embedded, per host** "
        "| add p50 / p95 ms, PostgreSQL | add p50 / p95 ms, embedded | load (PostgreSQL · embedded) |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in sorted({r["hosts"] for r in rows}):
        pg, lite = _by(rows, "postgres", n), _by(rows, "sqlite", n)
        ratio = f"**{pg['per_host'] / lite['per_host']:.2f}×**" if pg and lite else "–"
        lines.append(
            f"| {n} | {_f(pg and pg['messages_per_s'])} ({_f(pg and pg['per_host'])}) | "
            f"{_f(lite and lite['messages_per_s'])} ({_f(lite and lite['per_host'])}) | {ratio} | "
            f"{_pair({'x_p50': pg and pg['add_p50_ms'], 'x_p95': pg and pg['add_p95_ms']}, 'x')} | "
            f"{_pair({'x_p50': lite and lite['add_p50_ms'], 'x_p95': lite and lite['add_p95_ms']}, 'x')} | "
            f"{_f(pg and pg['load'], '{:.2f}')} · {_f(lite and lite['load'], '{:.2f}')} |"
        )
    return lines


def service_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| store | hosts | offered ops/s per host | messages/s written | add p50 / p95 ms | search p50 / p95 ms "
        "| cold-scope first search p50 / p95 ms | idle search p50 / p95 ms | **search p95 ÷ idle** | load (mixed · idle) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["hosts"], r["backend"] != "postgres")):
        ratio = r["mixed_search_p95"] / r["idle_search_p95"] if r.get("idle_search_p95") else float("nan")
        lines.append(
            f"| {NAMES[r['backend']]} | {r['hosts']} | {r['rate_per_host']:g} | {_f(r['mixed_messages_per_s'])} | "
            f"{_pair(r, 'mixed_add')} | {_pair(r, 'mixed_search')} | {_pair(r, 'mixed_cold')} | "
            f"{_pair(r, 'idle_search')} | **{_f(ratio, '{:.2f}')}×** | {r['mixed_load']:.2f} · {r['idle_load']:.2f} |"
        )
    return lines


def cold_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| store | a cold scope's index from | sentences | first query ms (median) | the same query, index in memory, ms "
        "| **first ÷ in memory** | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {NAMES[r['backend']]} | {r['source']} | {r['sentences']:,} | {r['cold_ms']:.1f} | {r['warm_ms']:.1f} | "
            f"**{r['ratio']:.2f}×** | {r['load']:.2f} |"
        )
    return lines


def parts_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| store | transaction | segment ms | plan ms (embedding, reads, keywords, gate) | graph ms | store ms "
        "(transaction, commit, caches) | add total ms | search ms | round trips per add | statements per add "
        "| round trips per search |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for label, v in r.items():
            if not isinstance(v, dict):
                continue
            lines.append(
                f"| {NAMES[r['backend']]} | {label} | {_f(v.get('segment_ms'), '{:.2f}')} | {_f(v.get('embed_ms'), '{:.2f}')} | "
                f"{_f(v.get('graph_ms'), '{:.2f}')} | {_f(v.get('store_ms'), '{:.2f}')} | {_f(v.get('total_ms'), '{:.2f}')} | "
                f"{_f(v.get('search_ms'), '{:.2f}')} | {_f(v.get('add_round_trips'))} | {_f(v.get('add_statements'))} | "
                f"{_f(v.get('search_round_trips'))} |"
            )
    return lines


def render_part(raw: dict[str, Any]) -> str:
    out: list[str] = []
    if raw.get("pg_skipped"):
        out += [f"PostgreSQL rows not run: {raw['pg_skipped']}.", ""]
    out += [
        "Each host is a process of its own with one `sgmem.Memory`; PostgreSQL is one server on this machine, "
        "reached over loopback (a fresh schema per run); the embedded store is one SQLite store on this "
        "machine's disk, shared by the hosts. Every PostgreSQL commit is flushed to disk "
        "(`synchronous_commit = on`); SQLite commits in WAL mode with `synchronous = NORMAL` (sgmem's setting), "
        "which does not flush each commit. Stand-in embedder (a hashed bag of words, 384 dimensions) unless "
        "said otherwise: the store's cost, not the model's.",
        "",
        "### Capacity: each host adds back to back to its own scopes",
        "",
        "One user turn and one assistant reply per add, 8 scopes per host, at most 300 adds or 15 s per host; "
        "each row is the mean of two runs per store, the stores in turn and then the other way round.",
        "",
        *capacity_table(raw.get("capacity", [])),
        "",
        "### Service: many scopes, mixed adds and searches at a fixed offered rate",
        "",
        "40 scopes of 6 exchanges, served by every host (each operation's scope drawn at random); per host one "
        "add and two searches per period, at the offered rate, for 12 s. Latency from each operation's "
        "scheduled time (queueing included). A cold-scope search is a host's first search of a scope it holds "
        "no index of; the other searches are counted apart. Idle: the same hosts, schedule and searches with "
        "the adds left out.",
        "",
        *service_table(raw.get("service", [])),
        "",
    ]
    if raw.get("minilm"):
        out += [
            "The same with MiniLM (all-MiniLM-L6-v2 on the CPU in every host: a user's cost), 20 scopes of 4 "
            "exchanges, 3 operations/s per host, 10 s:",
            "",
            *service_table(raw["minilm"]),
            "",
        ]
    out += [
        "### A cold scope",
        "",
        "One scope built by one host (its index saved: on PostgreSQL in that host's `Config.pg_cache_dir`, on "
        "the embedded store beside the database), then queried by another host process after every mode "
        "answered once on a small scope (the libraries loaded): the scope's first hybrid query, with its "
        "index dropped from memory before each of 5 repetitions, against the same query with the index in "
        "memory (medians).",
        "",
        *cold_table(raw.get("cold", [])),
        "",
        "### Part by part: where an add's and a search's time goes",
        "",
        "One host, 60 adds (one exchange each) and searches on ten warm scopes; medians of "
        "`AddResult.timings_ms` (plan: embedding, the reads before the transaction, keyword and gate "
        "planning; store: the transaction, its commit and the caches following it). Round trips and statements "
        "counted at the driver; the second PostgreSQL row switches the write transaction's pipeline off (one "
        "round trip per statement), the third leaves each commit unflushed (`synchronous_commit = off`, not "
        "sgmem's setting: the share of an add that durability takes); each add of the three in turn, in the same run.",
        "",
        *parts_table(raw.get("parts", [])),
    ]
    return "\n".join(out)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    cap = raw.get("capacity", [])
    ratios = []
    for n in sorted({r["hosts"] for r in cap}):
        pg, lite = _by(cap, "postgres", n), _by(cap, "sqlite", n)
        if pg and lite:
            ratios.append(f"{n} host{'s' if n > 1 else ''} {pg['per_host'] / lite['per_host']:.2f}×")
    if ratios:
        out.append("- PostgreSQL messages/s per host ÷ the embedded store's, same run: " + ", ".join(ratios) + ".")
    pg_rows = [r for r in raw.get("service", []) if r["backend"] == "postgres" and r.get("idle_search_p95")]
    if pg_rows:
        worst = max(pg_rows, key=lambda r: r["mixed_search_p95"] / r["idle_search_p95"])
        out.append(
            f"- PostgreSQL search p95 under mixed adds and searches ÷ idle: at most "
            f"**{worst['mixed_search_p95'] / worst['idle_search_p95']:.2f}×** ({worst['hosts']} hosts)."
        )
    cold = [r for r in raw.get("cold", []) if r["backend"] == "postgres" and r["source"] == "saved index"]
    if cold:
        r = cold[0]
        out.append(
            f"- A cold scope of {r['sentences']:,} sentences on a PostgreSQL host, from its saved index: first query "
            f"{r['cold_ms']:.0f} ms = **{r['ratio']:.1f}×** the same query in memory."
        )
    return out
