"""A small two-thread store the inspector's tests open, and the question whose answer it holds."""

from __future__ import annotations

import socket
from pathlib import Path

import sgmem

QUESTION = "What is my cat called?"
ANSWER = "I adopted a grey cat named Miso."
CHATS = {
    "chat-1": [
        {
            "role": "user",
            "name": "Alice",
            "content": "Hi there! I adopted a grey cat named Miso. Do you like cats?",
            "at": "2024-03-02T10:00:00Z",
            "id": "c1-1",
        },
        {
            "role": "assistant",
            "content": "Thanks for telling me. How old is Miso?",
            "at": "2024-03-02T10:01:00Z",
            "id": "c1-2",
        },
        {
            "role": "user",
            "name": "Alice",
            "content": "Two years old. She loves sleeping on the balcony.",
            "at": "2024-03-02T10:02:00Z",
            "id": "c1-3",
        },
    ],
    "chat-2": [
        {
            "role": "user",
            "name": "Alice",
            "content": "I went hiking in the Alps last summer with my brother.",
            "at": "2024-05-20T18:00:00Z",
            "id": "c2-1",
        },
        {
            "role": "assistant",
            "content": "That sounds wonderful. Which trail did you take?",
            "at": "2024-05-20T18:01:00Z",
            "id": "c2-2",
        },
    ],
}
OTHER = [
    {
        "role": "user",
        "name": "Bob",
        "content": "My dog Rex chews every shoe in the house.",
        "at": "2024-04-01T09:00:00Z",
        "id": "b-1",
    }
]


def fill(memory: sgmem.Memory) -> sgmem.Memory:
    """``memory`` with Alice's two threads and Bob's one message (another scope)."""
    for thread, msgs in CHATS.items():
        memory.add(msgs, scope="alice", thread=thread)
    memory.add(OTHER, scope="bob", thread="pets")
    return memory


def make_store(path: Path, embedder: sgmem.Embedder) -> Path:
    """A store directory holding :func:`fill`'s messages, closed again."""
    with sgmem.Memory(path, embedder=embedder) as memory:
        fill(memory)
    return path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server the test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
