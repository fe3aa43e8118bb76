"""``python -m tests.mutants [--only NAME ...] [--list] [--report PATH]``: see :mod:`tests.mutants`."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from .catalog import MUTANTS
from .runner import DEFAULT_TIMEOUT_S, render, run_all

ROOT = Path(__file__).resolve().parents[2]
REPORT = Path(__file__).resolve().parent / "REPORT.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__)
    p.add_argument("--only", nargs="+", metavar="NAME", help="these mutants only (default: all)")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--report", default=str(REPORT), help=f"where to write the report (default {REPORT})")
    p.add_argument("--no-report", action="store_true", help="print the results only")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per mutant's tests")
    p.add_argument("--no-baseline", action="store_true", help="skip running each test selection unmutated first")
    args = p.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTANTS}
    if unknown:
        p.error(f"no such mutant: {', '.join(sorted(unknown))} (--list shows them)")
    if args.list:
        for m in chosen:
            print(f"{m.name}\t{m.path}\t{m.check}")
        return 0
    results = run_all(
        chosen,
        ROOT,
        timeout_s=args.timeout,
        baseline=not args.no_baseline,
        progress=lambda line: print(line, flush=True),
    )
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=ROOT, capture_output=True, text=True
    )
    command = "python -m tests.mutants" + (f" --only {' '.join(args.only)}" if args.only else "")
    text = render(results, command, commit.stdout.strip() or "?")
    if not args.no_report:
        Path(args.report).write_text(text, encoding="utf-8")
        print(f"report: {args.report}")
    survivors = [r.mutant.name for r in results if r.outcome != "caught"]
    print(
        f"{len(results) - len(survivors)} of {len(results)} caught"
        + (f"; not: {', '.join(survivors)}" if survivors else "")
    )
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
