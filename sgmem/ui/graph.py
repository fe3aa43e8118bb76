"""The graph page's drawing: where each sentence and link of :meth:`sgmem.Memory.neighbours` goes in the SVG.

The message's sentences are stacked in the middle column; the sentences they
link to by similarity sit in the side columns, the previous turn above and the
next turn below. Only coordinates and short labels are computed here; the
template writes the SVG (Jinja escapes every text).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..types import SentenceLink

__all__ = ["layout"]

WIDTH = 960
BOX_W, BOX_H, GAP = 280, 34, 22
SIDE_W = 250
LABEL_CHARS = 40


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def layout(links: Sequence[SentenceLink]) -> dict[str, Any]:
    """Boxes ``{x, y, w, h, text, label, kind}`` and edges ``{x1, y1, x2, y2, lx, ly, label, kind}`` of the drawing."""
    own: dict[int, str] = {}
    for link in links:
        own.setdefault(link.position, link.sentence)
    positions = sorted(own)
    top = BOX_H + 2 * GAP  # room for the previous turn
    mid_x = (WIDTH - BOX_W) // 2
    boxes: list[dict[str, Any]] = []
    centre: dict[int, dict[str, Any]] = {}
    for i, p in enumerate(positions):
        box: dict[str, Any] = {
            "x": mid_x,
            "y": top + i * (BOX_H + GAP),
            "w": BOX_W,
            "h": BOX_H,
            "text": own[p],
            "kind": "own",
        }
        centre[p] = box
        boxes.append(box)
    others: dict[tuple[str, str], dict[str, Any]] = {}
    sides = [0, 0]  # boxes placed in the left and right columns
    chrono: dict[str, dict[str, Any]] = {}
    for link in links:
        key = (link.message_id, link.text)
        if key in others or (link.kind == "same turn"):
            continue
        if link.kind == "chronological" and link.direction in ("previous", "next"):
            chrono[str(link.direction)] = others[key] = {"w": BOX_W, "h": BOX_H, "text": link.text, "kind": "chrono"}
            continue
        side = 0 if sides[0] <= sides[1] else 1
        y = top + sides[side] * (BOX_H + GAP)
        sides[side] += 1
        x = 10 if side == 0 else WIDTH - SIDE_W - 10
        others[key] = {"x": x, "y": y, "w": SIDE_W, "h": BOX_H, "text": link.text, "kind": "similar"}
    bottom = top + max(len(positions), *sides) * (BOX_H + GAP)
    if "previous" in chrono:
        chrono["previous"].update(x=mid_x, y=GAP // 2)
    if "next" in chrono:
        chrono["next"].update(x=mid_x, y=bottom + GAP)
    boxes += list(others.values())
    edges: list[dict[str, Any]] = []
    for link in links:
        a = centre[link.position]
        if link.kind == "same turn":
            b = next((centre[p] for p in positions if p > link.position), None)
        else:
            b = others.get((link.message_id, link.text))
        if b is None or b is a:
            continue
        x1, y1 = a["x"] + a["w"] / 2, a["y"] + a["h"] / 2
        x2, y2 = b["x"] + b["w"] / 2, b["y"] + b["h"] / 2
        if b["kind"] == "similar":  # from the side of the middle box to the near side of the other
            x1 = a["x"] if b["x"] < a["x"] else a["x"] + a["w"]
            x2 = b["x"] + b["w"] if b["x"] < a["x"] else b["x"]
        else:
            y1 = a["y"] if y2 < y1 else a["y"] + a["h"]
            y2 = b["y"] + b["h"] if y2 < a["y"] else b["y"]
        label = f"{link.cosine:.2f}" if link.kind == "similarity" else link.kind
        edges.append(
            {
                "x1": x1,
                "y1": y1,
                "x2": x2,
                "y2": y2,
                "lx": (x1 + x2) / 2,
                "ly": (y1 + y2) / 2 - 3,
                "label": label,
                "kind": link.kind.replace(" ", "-"),
            }
        )
    for box in boxes:
        box["label"] = _short(box["text"])
    height = bottom + (2 * GAP + BOX_H if "next" in chrono else GAP)
    return {"width": WIDTH, "height": height, "boxes": boxes, "edges": edges}
