"""Imports with the grain: engine modules never reach up into the command line or the evaluation layer.

These are read from the source (``ast``), so an import hidden inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sgmem

ROOT = Path(sgmem.__file__).resolve().parent


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Absolute module names a file imports (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    out: set[str] = set()
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def test_the_gate_imports_neither_the_command_line_nor_the_eval_layer() -> None:
    files = sorted((ROOT / "gate").glob("*.py"))
    assert files
    for f in files:
        bad = {m for m in _imports(f) if m.startswith(("sgmem.cli", "sgmem.eval"))}
        assert not bad, f"{f.name} imports {sorted(bad)}"


def test_the_stores_read_the_version_without_importing_the_package_face() -> None:
    for name in ("sqlite.py", "postgres.py"):
        mods = _imports(ROOT / "store" / name)
        assert "sgmem.__version__" not in mods, f"store/{name} imports sgmem.__version__ from the package's face"
        assert "sgmem._version.__version__" in mods


def test_the_checker_catches_an_import_hidden_in_a_function() -> None:
    src = "def f():\n    from ..cli import load\n    from ..eval.corpus import corpus_streams\n"
    mods = _imports(ROOT / "gate" / "calibrate.py", src)
    assert {"sgmem.cli", "sgmem.eval.corpus"} <= mods


def test_one_version_everywhere() -> None:
    from importlib.metadata import version

    from sgmem._version import __version__

    assert sgmem.__version__ == __version__ == version("sgmem")
