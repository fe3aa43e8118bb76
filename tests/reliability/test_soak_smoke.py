"""A reduced soak (``benchmarks/soak.py``): in a steady state — the store's size held fixed
while adds, deletes, searches and context calls keep coming — resident memory must plateau.

The full 50,000-turn soak is ``python -m benchmarks.soak`` (minutes); this run checks the same
property at 1,000 turns and that the script still writes its JSON and plot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import record_figure

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.benchmark]


def test_rss_plateaus_in_a_steady_state(tmp_path: Path) -> None:
    pytest.importorskip("psutil")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.soak",
        "--turns",
        "1000",
        "--steady",
        "1500",
        "--per-add",
        "10",
        "--delete-every",
        "25",
        "--sample",
        "250",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "soak-rss.json").read_text())
    steady = [r for r in result["samples"] if r["phase"] == "steady"]
    grow = [r for r in result["samples"] if r["phase"] == "grow"]
    assert len(steady) >= 4 and grow
    assert all(r["turns_stored"] <= 1000 + 25 * 10 for r in steady)
    first_half = max(r["rss_mb"] for r in steady[: len(steady) // 2])
    second_half = max(r["rss_mb"] for r in steady[len(steady) // 2 :])
    # a leak of even 1 KiB per call would add ~2 MiB here; allow allocator noise
    assert second_half <= first_half * 1.10 + 5, result["samples"]
    assert (out / "soak-rss.png").read_bytes()[:4] == b"\x89PNG"
    record_figure(
        "soak smoke (1,000 turns, then 1,500 steady)",
        f"RSS end of grow {grow[-1]['rss_mb']} MiB; steady first half max {first_half} MiB, second half max "
        f"{second_half} MiB; steady slope {result['steady_mb_per_10k_turns']} MiB/10k turns",
    )
