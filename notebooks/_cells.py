"""Cell helpers shared by the notebook sources (see build.py)."""

from __future__ import annotations

Cell = tuple[str, str]  # ("md" | "code", source)


def md(text: str) -> Cell:
    return ("md", text.strip("\n"))


def code(text: str) -> Cell:
    return ("code", text.strip("\n"))
