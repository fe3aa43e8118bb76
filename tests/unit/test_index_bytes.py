"""What a loaded scope's index holds in memory, part by part: a store reopened keeps no room for appends."""

from __future__ import annotations

from pathlib import Path

import sgmem


def test_a_reopened_index_holds_its_turn_columns_without_slack(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    msgs = [
        {"role": "user" if i % 2 else "assistant", "content": f"Day {i}: I walked {i} km by the river."}
        for i in range(37)
    ]
    with sgmem.Memory(tmp_path / "m", embedder=embedder) as mem:
        mem.add(msgs, scope="s", thread="t")
    with sgmem.Memory(tmp_path / "m", embedder=embedder) as mem:
        mem.search("walks", scope="s")
        idx = next(iter(mem._indexes.values()))
        parts = idx.nbytes_parts()
        assert sum(parts.values()) == idx.nbytes()
        assert parts["vectors"] == 4 * idx.dim * idx.n_sentences
        # ids, round ids, times (8 B each), tokens, previous and next turn (4 B each), the tool flag (1 B)
        assert parts["turn_columns"] == 37 * idx.n_turns
        assert parts["sentence_columns"] == 16 * idx.n_sentences
