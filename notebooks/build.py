"""Source of the tutorial notebooks: ``python notebooks/build.py`` rewrites every ``.ipynb`` here.

The notebooks are stored without outputs; ``tests/notebooks`` executes each
top to bottom (offline, no API key) and checks that the stored files are
exactly what this script writes: edit the cells in ``_cells_intro.py`` (notebooks
01–03), ``_cells_inside.py`` (04) or ``_cells_tools.py`` (05) and rebuild.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

sys.path.insert(0, str(HERE))  # the cell sources live next to this file

from _cells import Cell  # noqa: E402
from _cells_inside import INSIDE  # noqa: E402
from _cells_intro import LANGCHAIN, LLAMA_INDEX, QUICKSTART  # noqa: E402
from _cells_tools import AGENT_TOOLS  # noqa: E402

NOTEBOOKS: dict[str, list[Cell]] = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_langchain_agent.ipynb": LANGCHAIN,
    "03_llamaindex.ipynb": LLAMA_INDEX,
    "04_inside_the_memory.ipynb": INSIDE,
    "05_agent_tools.ipynb": AGENT_TOOLS,
}


def build(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` as it is stored: cells only, no outputs."""
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, source) in enumerate(NOTEBOOKS[name]):
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell["id"] = f"{Path(name).stem[:2]}-{i:02d}"  # stable ids: rebuilding changes nothing
        nb.cells.append(cell)
    return nb


def render(name: str) -> str:
    return nbformat.writes(build(name)) + "\n"


def main() -> int:
    for name in NOTEBOOKS:
        (HERE / name).write_text(render(name), encoding="utf-8")
        print(f"wrote notebooks/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
