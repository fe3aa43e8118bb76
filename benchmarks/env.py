"""What a benchmark ran on: machine, versions, command, and resource probes."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import sys
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "command_line", "dir_bytes", "environment", "render_environment", "rss_bytes"]

#: Distributions whose versions are printed with every result.
PACKAGES = (
    "sgmem",
    "numpy",
    "faiss-cpu",
    "torch",
    "sentence-transformers",
    "bm25s",
    "tiktoken",
    "langchain-core",
    "llama-index-core",
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, Any]:
    """Machine, OS, Python and package versions, load average and date (UTC)."""
    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in PACKAGES},
    }
    try:
        import psutil

        info["ram_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        info["ram_gb"] = None
    try:
        info["load"] = tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        info["load"] = None
    return info


def command_line(module: str, argv: list[str] | None = None) -> str:
    """The command that reproduces this run."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module, *args]).strip()


def render_environment(info: dict[str, Any], command: str) -> str:
    """Markdown lines stating where and how the figures were measured."""
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    load = info.get("load")
    lines = [
        f"- Date: {info['date']}",
        f"- Machine: {info['cpu']}, {info['cores']} CPUs, {info.get('ram_gb')} GiB RAM, {info['os']}",
        f"- Load average at start (1/5/15 min): {' / '.join(map(str, load)) if load else 'n/a'}"
        + (" — **the machine was busy: absolute timings are not representative**" if load and load[0] > (info["cores"] or 1) else ""),
        f"- Python {info['python']}; {versions}",
        f"- Command: `{command}`",
    ]
    return "\n".join(lines)


def rss_bytes() -> int:
    """Resident set size of this process (psutil), 0 if psutil is missing."""
    try:
        import psutil
    except ImportError:
        return 0
    return int(psutil.Process().memory_info().rss)


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
