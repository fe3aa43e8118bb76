"""Does a SQL statement read or write one scope only? PostgreSQL's own parser (pglast) says.

A store sharded by scope (tables partitioned by hash of ``scope_id``, or
distributed by it on Citus) routes a statement to one partition (shard) when
every table it names is pinned to one scope: ``t.scope_id = <value>`` among
the conjuncts of its ``WHERE`` or ``JOIN ... ON`` (``scopes`` by ``id`` or
``name``), or ``t.scope_id = u.scope_id`` with ``u`` pinned (also from an
enclosing query, for a correlated subquery). An ``INSERT ... VALUES`` is
pinned when it sets ``scope_id``. :func:`violations` lists what is not.

Tables that hold no scope's rows are exempt: ``meta``, ``migrations``, the
signed form's key table, the delete's session-local ``_del`` (ids of one
scope's messages) and the catalogs. A few statements are store-wide by design
and listed in :data:`STORE_WIDE` with the reason.

``python -m tests.shardable FILE`` checks the statements recorded in FILE
(one JSON string per line; ``SGMEM_TEST_PG_STATEMENTS=FILE`` makes the test
suite record every statement its PostgreSQL tests issue, see tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import BoolExprType, SetOperation
from pglast.visitors import Visitor

__all__ = ["STORE_WIDE", "normalise", "violations"]

#: tables without a scope's rows
EXEMPT = frozenset({"meta", "migrations", "sgmem_scope_keys", "_del"})

#: whole statements that read or write every scope, by design (normalised text -> why)
STORE_WIDE: dict[str, str] = {
    "SELECT name FROM scopes s WHERE EXISTS (SELECT 1 FROM messages m WHERE m.scope_id = s.id) ORDER BY name": (
        "Memory.scopes() and Memory.stats() without a scope list every scope"
    ),
    "SELECT 1 FROM messages LIMIT 1": (
        "whether a store holds any message when it first records its lexical analyzer, once per store "
        "(SQLiteStore.bind_analyzer: a store written before the analyzer was recorded keeps Snowball stems)"
    ),
    "UPDATE sentences SET act = NULL WHERE act IS NOT NULL": (
        "a store whose acts another classifier stored has them cleared, once (SQLiteStore.bind_acts)"
    ),
    "INSERT INTO gate_ivf (scope_id, centroids, n_train) SELECT scope_id, ivf_centroids, ivf_n_train FROM gate_state "
    "WHERE ivf_centroids IS NOT NULL": "migration 0005_gate_ivf, once per store",
    "UPDATE gate_state SET ivf_centroids = NULL, ivf_n_train = 0 WHERE ivf_centroids IS NOT NULL": (
        "migration 0005_gate_ivf, once per store"
    ),
}


def normalise(sql: str) -> str:
    """One line, single spaces, no trailing semicolon."""
    return " ".join(sql.split()).rstrip(";").strip()


def _numbered(sql: str) -> str:
    """psycopg's ``%s`` placeholders as ``$n`` (what the parser reads); ``%%`` back to ``%``."""
    n = 0

    def number(_: Any) -> str:
        nonlocal n
        n += 1
        return f"${n}"

    return re.sub(r"%s", number, sql).replace("%%", "%")


def _exempt(relname: str, schema: str | None) -> bool:
    return relname in EXEMPT or relname.startswith("pg_") or schema in ("pg_catalog", "information_schema")


def _conjuncts(node: Any) -> list[Any]:
    if node is None:
        return []
    if isinstance(node, ast.BoolExpr) and node.boolop == BoolExprType.AND_EXPR:
        return [c for a in node.args for c in _conjuncts(a)]
    return [node]


def _column(node: Any) -> tuple[str, ...] | None:
    if isinstance(node, ast.ColumnRef):
        return tuple(f.sval for f in node.fields if isinstance(f, ast.String))
    return None


def _value(node: Any) -> bool:
    """A parameter or a constant (one value for the whole statement)."""
    if isinstance(node, ast.TypeCast):
        return _value(node.arg)
    return isinstance(node, (ast.ParamRef, ast.A_Const))


def _ranges(items: Iterable[Any] | None) -> tuple[list[tuple[str, str, str | None]], list[Any], list[Any]]:
    """``(alias, table, schema)`` of the tables a FROM list names, its join conditions, its subqueries."""
    rels: list[tuple[str, str, str | None]] = []
    quals: list[Any] = []
    subs: list[Any] = []

    def walk(n: Any) -> None:
        if isinstance(n, ast.RangeVar):
            rels.append((n.alias.aliasname if n.alias else n.relname, n.relname, n.schemaname))
        elif isinstance(n, ast.JoinExpr):
            walk(n.larg)
            walk(n.rarg)
            quals.extend(_conjuncts(n.quals))
        elif isinstance(n, ast.RangeSubselect):
            subs.append(n.subquery)

    for item in items or ():
        walk(item)
    return rels, quals, subs


def _sublinks(tree: Any) -> list[Any]:
    found: list[Any] = []

    class Collect(Visitor):  # type: ignore[misc]
        def visit_SubLink(self, ancestors: Any, node: Any) -> Any:  # noqa: N802 - pglast's naming
            found.append(node.subselect)

    Collect()(tree)
    return found


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def query(self, q: Any, outer: dict[str, str], ctes: frozenset[str]) -> None:
        if isinstance(q, ast.SelectStmt):
            self.select(q, outer, ctes)
        elif isinstance(q, ast.InsertStmt):
            table = q.relation.relname
            cols = [c.name for c in q.cols or ()]
            sel = q.selectStmt
            if isinstance(sel, ast.SelectStmt) and not sel.valuesLists:
                self.select(sel, outer, ctes)
            elif not _exempt(table, q.relation.schemaname) and "scope_id" not in cols:
                if not (table == "scopes" and "name" in cols):
                    self.problems.append(f"INSERT INTO {table} sets no scope_id")
        elif isinstance(q, (ast.UpdateStmt, ast.DeleteStmt)):
            r = q.relation
            rels, quals, subs = _ranges(q.fromClause if isinstance(q, ast.UpdateStmt) else q.usingClause)
            rels = [(r.alias.aliasname if r.alias else r.relname, r.relname, r.schemaname), *rels]
            trees = [q.whereClause, q.targetList] if isinstance(q, ast.UpdateStmt) else [q.whereClause]
            self.level(rels, quals + _conjuncts(q.whereClause), outer, ctes, trees)
            for sub in subs:
                self.query(sub, outer, ctes)

    def select(self, sel: Any, outer: dict[str, str], ctes: frozenset[str]) -> None:
        if sel.op not in (None, SetOperation.SETOP_NONE):
            self.select(sel.larg, outer, ctes)
            self.select(sel.rarg, outer, ctes)
            return
        if sel.withClause:
            names = ctes | {c.ctename for c in sel.withClause.ctes}
            for cte in sel.withClause.ctes:
                self.query(cte.ctequery, outer, names)
            ctes = names
        if sel.valuesLists:
            return
        rels, quals, subs = _ranges(sel.fromClause)
        trees = [sel.whereClause, sel.targetList, sel.fromClause, sel.havingClause]
        self.level(rels, quals + _conjuncts(sel.whereClause), outer, ctes, trees)
        for sub in subs:
            self.query(sub, outer, ctes)

    def level(
        self,
        rels: list[tuple[str, str, str | None]],
        quals: list[Any],
        outer: dict[str, str],
        ctes: frozenset[str],
        trees: list[Any],
    ) -> None:
        scoped = [(a, t) for a, t, s in rels if not _exempt(t, s) and t not in ctes]
        tables = dict(scoped)
        pinned = dict(outer)  # alias -> table, of every alias pinned to the statement's one scope
        pairs = [
            (q.lexpr, q.rexpr)
            for q in quals
            if isinstance(q, ast.A_Expr) and q.name and getattr(q.name[0], "sval", None) == "="
        ]

        def owner(col: tuple[str, ...]) -> str | None:
            if len(col) == 2:
                return col[0]
            return scoped[0][0] if len(col) == 1 and len(scoped) == 1 else None

        def scope_column(alias: str, col: str) -> bool:
            table = tables.get(alias, pinned.get(alias))
            return col in (("id", "name") if table == "scopes" else ("scope_id",))

        changed = True
        while changed:
            changed = False
            for left, right in pairs:
                for x, y in ((left, right), (right, left)):
                    cx = _column(x)
                    a = owner(cx) if cx else None
                    if a is None or a in pinned or a not in tables or not scope_column(a, cx[-1]):  # type: ignore[index]
                        continue
                    cy = _column(y)
                    b = owner(cy) if cy else None
                    if _value(y) or (b in pinned and scope_column(b, cy[-1])):  # type: ignore[index,arg-type]
                        pinned[a] = tables[a]
                        changed = True
        for alias, table in scoped:
            if alias not in pinned:
                self.problems.append(f"{table} ({alias}) is not pinned to one scope")
        for tree in trees:
            if tree is not None:
                for sub in _sublinks(tree):
                    self.query(sub, pinned, ctes)


def violations(sql: str) -> list[str]:
    """Why ``sql`` (psycopg's ``%s`` placeholders) may read or write more than one scope; [] if it does not."""
    text = normalise(sql)
    if text in STORE_WIDE:
        return []
    checker = _Checker()
    for raw in parse_sql(_numbered(text)):
        checker.query(raw.stmt, {}, frozenset())
    return sorted(set(checker.problems))


def _ours(sql: str, sources: str) -> bool:
    """Whether ``sql`` (as sgmem writes it, SQLite's dialect) is one of sgmem's own statements: it is a whole
    string literal of sgmem's source, or its first 60 characters appear there (a test may run its own queries
    through the store's connection)."""
    text = " ".join(sql.split())
    return (text + '"') in sources or (len(text) >= 60 and text[:60] in sources)


def main(argv: list[str]) -> int:
    """Check the statements recorded in ``argv[0]`` (SQLite's dialect, as sgmem's modules write them)."""
    from pathlib import Path

    from sgmem.store.pgsql import to_pg

    root = Path(__file__).resolve().parents[1] / "sgmem"
    sources = " ".join(" ".join(p.read_text(encoding="utf-8").split()) for p in root.rglob("*.py"))
    sources = sources.replace('" "', "").replace('" "', "")  # adjacent string literals, as Python joins them
    seen: dict[str, list[str]] = {}
    with open(argv[0], encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                sql = normalise(json.loads(line))
            except ValueError:  # a line a forked test process wrote over (both flushed the same buffer)
                continue
            if sql not in seen and not sql.upper().startswith("PRAGMA"):  # SQLite's settings: never sent
                seen[sql] = violations(to_pg(sql)[0])
    bad = {s: v for s, v in seen.items() if v}
    ours = {s: v for s, v in bad.items() if _ours(s, sources)}
    for sql, why in sorted(bad.items()):
        print(f"{'sgmem' if sql in ours else 'a test'}: {'; '.join(why)}\n    {sql[:400]}")
    print(
        f"{len(seen)} distinct statements, {len(bad)} not pinned to one scope ({len(ours)} of them sgmem's own, "
        f"{len(bad) - len(ours)} a test's own queries), {len(STORE_WIDE)} store-wide by design"
    )
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
