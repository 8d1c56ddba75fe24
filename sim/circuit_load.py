"""Open-loop load for the circuit-switched tree: offered load against throughput and latency.

:class:`OpenLoop` is :class:`fattree.sim.network_load.NetworkLoad` on the tree's stream ports
(one beat is one whole message of ``length`` words), with the ports' own calling convention:
``inputs()`` gives per node ``tx`` valid, dest, data and ``rx`` ready; ``observe(tx_ready,
rx_valid, rx_data)`` records this cycle's handshakes. The cycle-exact model
(:func:`run_model_point`, pure Python) and the RTL (the cocotb module
:mod:`fattree.sim.benches.circuit_tree_load`) are driven by it the same way, so both see the
same draws and the same inputs. The traffic, the times and the figures are defined in
:mod:`fattree.sim.network_load` (docs/circuit_tree.md, "Load and latency").
"""

from __future__ import annotations

from .models.circuit import CircuitTreeModel
from .network_load import FIGURES, LOAD_PATTERNS, NetworkLoad, Point, destinations, percentile

__all__ = [
    "LOAD_PATTERNS",
    "FIGURES",
    "Point",
    "destinations",
    "OpenLoop",
    "percentile",
    "run_model_point",
    "min_latency",
]


def min_latency(leaves: int, length: int, turn_level: int = 0) -> int:
    """The fewest cycles from ``tx`` handshake to ``rx`` handshake, with nothing else in the
    network, for a message whose path turns at ``turn_level``: the shortest is 0."""
    model = CircuitTreeModel(leaves, 1, length)
    dest = 1 << turn_level
    for t in range(1000):
        out = model.step(
            [int(t == 0)] + [0] * (leaves - 1), [dest] + [0] * (leaves - 1), [0] * leaves
        )
        if out.rx_valid[dest]:
            return t  # offered (and taken: idle interface) at cycle 0
    raise RuntimeError("no delivery")  # pragma: no cover


class OpenLoop(NetworkLoad):
    """Generates, offers and times the messages of one :class:`Point` on ``leaves`` nodes of
    the tree (messages of ``length`` words of ``width`` bits, one beat each)."""

    def __init__(self, leaves: int, width: int, length: int, point: Point):
        super().__init__(leaves, width * length, 1, point)
        self.leaves = leaves

    def inputs(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """This cycle's inputs: ``tx`` valid, dest, data and ``rx`` ready, per node."""
        tx, ready = super().inputs()
        valid = [int(b is not None) for b in tx]
        dest = [b[0] if b else 0 for b in tx]
        data = [b[1] if b else 0 for b in tx]
        return valid, dest, data, ready

    def observe(self, tx_ready: list[int], rx_valid: list[int], rx_data: list[int]) -> None:
        """This cycle's outputs: record the ``tx`` and ``rx`` handshakes, then advance."""
        rx = [(d, 1) if v else None for v, d in zip(rx_valid, rx_data, strict=True)]
        super().observe(tx_ready, rx)


def run_model_point(
    leaves: int, width: int, length: int, seed: int, retry: str, point: Point
) -> dict:
    """One point on the cycle-exact model alone (pure Python), from reset: its figures."""
    model = CircuitTreeModel(leaves, width, length, seed, retry)
    run = OpenLoop(leaves, width, length, point)
    while not run.finished:
        valid, dest, data, ready = run.inputs()
        out = model.step(valid, dest, data, ready)
        run.observe(out.tx_ready, out.rx_valid, out.rx_data)
    return run.figures()
