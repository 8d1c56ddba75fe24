"""The transmit side of a test: each node's queue of messages offered on its transmit stream.
Shared by the models' own runs and the model-versus-design checks of every network whose
nodes send ``(dest, data)`` messages on a stream (the circuit tree, the hypercube)."""

from __future__ import annotations

__all__ = ["Driver"]


class Driver:
    """Offers each node's queued ``(dest, data)`` messages on its transmit stream: the head is
    offered (valid, dest, data) until a cycle with ready high takes it."""

    def __init__(self, queues: list[list[tuple[int, int]]]):
        self.queues = [list(q) for q in queues]
        self.sent: list[tuple[int, int, int]] = []  # (src, dest, data) as taken

    def inputs(self) -> tuple[list[int], list[int], list[int]]:
        valid = [int(bool(q)) for q in self.queues]
        dest = [q[0][0] if q else 0 for q in self.queues]
        data = [q[0][1] if q else 0 for q in self.queues]
        return valid, dest, data

    def taken(self, tx_ready: list[int]) -> None:
        for n, q in enumerate(self.queues):
            if q and tx_ready[n]:
                dest, data = q.pop(0)
                self.sent.append((n, dest, data))

    def pending(self) -> int:
        """Messages not taken yet."""
        return sum(len(q) for q in self.queues)
