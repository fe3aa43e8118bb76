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


#: the tools, the inspector and saved adapter state: they call the facade and tell store targets apart by text
#: (sgmem.targets), and never reach into a store's modules for it
FACES = ("saved.py", "tools.py", "mcp.py", "ui/__init__.py", "ui/app.py", "ui/guard.py", "ui/graph.py")


def test_the_tools_and_the_inspector_import_no_store_module() -> None:
    for name in FACES:
        bad = {m for m in _imports(ROOT / name) if m == "sgmem.store" or m.startswith("sgmem.store.")}
        assert not bad, f"{name} imports {sorted(bad)}"


def test_store_targets_are_read_without_any_sgmem_module() -> None:
    mods = _imports(ROOT / "targets.py")
    assert not {m for m in mods if m.startswith("sgmem")}, sorted(mods)
    # the faces that take a store's URL use these helpers, not copies of their own
    for name in ("saved.py", "ui/__init__.py"):
        assert "sgmem.targets.is_postgres_target" in _imports(ROOT / name), name


def test_the_checker_catches_an_import_hidden_in_a_function() -> None:
    src = "def f():\n    from ..cli import load\n    from ..eval.corpus import corpus_streams\n"
    mods = _imports(ROOT / "gate" / "calibrate.py", src)
    assert {"sgmem.cli", "sgmem.eval.corpus"} <= mods
    # the faces' check too: the way saved state and the inspector reached the store's URL helpers before
    src = "from .store.conninfo import redact\nfrom .store.postgres import is_postgres_target\n"
    assert {"sgmem.store.conninfo", "sgmem.store.postgres"} <= _imports(ROOT / "saved.py", src)


def test_one_version_everywhere() -> None:
    from importlib.metadata import version

    from sgmem._version import __version__

    assert sgmem.__version__ == __version__ == version("sgmem")
