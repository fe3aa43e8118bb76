"""The benchmark parts and the file they write: ``benchmarks/results/PART.json`` → ``benchmarks/RESULTS.md``.

A *part* is a module under ``benchmarks/`` with

* ``TITLE`` — its ``## `` heading in RESULTS.md;
* ``run_part(ctx: Context) -> dict`` — measures, returns JSON-serialisable raw results (no Markdown);
* ``render_part(raw: dict) -> str`` — the section's Markdown body from the raw results alone (sub-headings ``###``);
* optionally ``summary_lines(raw: dict) -> list[str]`` — headline bullets for the Summary.

``python -m benchmarks --only PART`` stores each part's raw results with the command, date, machine and git
commit that produced them (:func:`store`); :func:`render_results` turns every stored file into RESULTS.md,
so the file is regenerated whole from what was measured, section by section, with no hand edits.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "PARTS",
    "Context",
    "load",
    "commit",
    "module",
    "record",
    "render_results",
    "run_command",
    "store",
]

HERE = Path(__file__).resolve().parent

#: every part, in RESULTS.md's order; modules are imported only when a part is run or rendered
PARTS: dict[str, str] = {
    "cv": "benchmarks.cv",
    "quality": "benchmarks.quality",
    "chat": "benchmarks.chat",
    "longmemeval": "benchmarks.longmemeval",
    "small": "benchmarks.small",
    "ablation": "benchmarks.ablation",
    "acts": "benchmarks.acts",
    "speed": "benchmarks.speed",
    "knn": "benchmarks.knn_recall",
    "write": "benchmarks.write_cost",
    "gate": "benchmarks.gate",
    "generated": "benchmarks.generated",
    "postgres": "benchmarks.postgres",
    "service": "benchmarks.service",
    "scopes": "benchmarks.scopes",
    "store": "benchmarks.store",
    "cli": "benchmarks.cli_latency",
    "mcp": "benchmarks.mcp_latency",
    "ui": "benchmarks.ui_latency",
}


@dataclass
class Context:
    """What a part's ``run_part`` gets: the command line, the data, the shared embedder, where output goes."""

    args: argparse.Namespace
    locomo: Path
    embedder: Callable[[], Any]
    out: Path
    plots: Path
    progress: Callable[[str], None] = field(default=lambda s: None)


def module(part: str) -> ModuleType | None:
    """The part's module, or None when it is not in this checkout (e.g. a part another branch adds)."""
    try:
        return importlib.import_module(PARTS[part])
    except ModuleNotFoundError as exc:
        if exc.name == PARTS[part]:
            return None
        raise


def run_command(part: str) -> str:
    """The command that (re)measures one part with the default settings."""
    return f"python -m benchmarks --only {part}"


def commit() -> str:
    """The checked-out commit (short), marked when tracked files differ from it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + (" (with uncommitted changes)" if dirty else "")


def record(
    part: str, raw: dict[str, Any], command: str, environment: dict[str, Any], wall_s: float, code: str
) -> dict[str, Any]:
    """One part's stored results: what produced them (``code``: :func:`commit` when the run started) and the raw
    figures."""
    return {
        "part": part,
        "command": command,
        "date": environment["date"],
        "commit": code,
        "environment": environment,
        "wall_s": round(wall_s, 1),
        "raw": raw,
    }


def _plain(obj: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def store(directory: Path, rec: dict[str, Any]) -> Path:
    """Write ``directory/results/PART.json`` (keys in the order the part wrote them: labels depend on it)."""
    path = directory / "results" / f"{rec['part']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1, ensure_ascii=False, default=_plain) + "\n", encoding="utf-8")
    return path


def load(directory: Path) -> dict[str, dict[str, Any]]:
    """Every stored part under ``directory/results``, by part name."""
    out = {}
    for part in PARTS:
        path = directory / "results" / f"{part}.json"
        if path.exists():
            out[part] = json.loads(path.read_text(encoding="utf-8"))
    return out


def _provenance(rec: dict[str, Any]) -> str:
    env = rec["environment"]
    load = env.get("load")
    busy = bool(load) and load[0] > (env.get("cores") or 1)
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items() if v != "not installed")
    return "\n".join(
        [
            f"*Measured {rec['date']} by `{rec['command']}` (commit {rec['commit']}, {rec['wall_s'] / 60:.1f} min).*",
            f"*Machine: {env['cpu']}, {env['cores']} CPUs, {env.get('ram_gb')} GiB RAM, {env['os']}; load average at "
            f"start {' / '.join(map(str, load)) if load else 'n/a'}"
            + (
                " (busy: other work shared the CPUs, so absolute timings are pessimistic; ratios come from the same run)"
                if busy
                else ""
            )
            + f"; Python {env['python']}, {versions}.*",
        ]
    )


INTRO = (
    "What sgmem costs and what it finds, each figure measured against the memories a user would pick instead "
    "(in the same run, with the same embedder) and reported as a ratio. Every section below is written by "
    "`python -m benchmarks` from the raw results it stored in [`results/`](results/) and names the command, "
    "date and machine that produced it; `python -m benchmarks --only PART` remeasures one part, "
    "`python -m benchmarks report` rewrites this file from the stored results. How each part measures, and "
    "against which baseline: [`README.md`](README.md)."
)


def render_results(records: dict[str, dict[str, Any]], title: str = "sgmem benchmarks") -> str:
    """RESULTS.md from the stored records: a Summary of every part's headline, then one section per part."""
    summary: list[str] = []
    sections: list[str] = []
    for part in PARTS:
        mod = module(part)
        rec = records.get(part)
        heading = getattr(mod, "TITLE", part) if mod else part
        if rec is None or mod is None:
            why = "" if mod else " (this part's module is not in this checkout)"
            sections += [f"## {heading}", "", f"Not run yet: `{run_command(part)}`{why}.", ""]
            continue
        lines = getattr(mod, "summary_lines", None)
        if lines:
            summary += lines(rec["raw"])
        sections += [f"## {heading}", "", _provenance(rec), "", mod.render_part(rec["raw"]).strip(), ""]
    head = [f"# {title}", "", INTRO, ""]
    if summary:
        head += [
            "## Summary",
            "",
            *summary,
            "",
            "Each line is taken from the section below that measured it, which names its command and date.",
            "",
        ]
    return "\n".join(head + sections).rstrip() + "\n"
