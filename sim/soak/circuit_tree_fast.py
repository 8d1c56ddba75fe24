"""Soak of the fast circuit tree (:mod:`.messages` has the shape): every node's ``tx_ready``,
``tx_done``, ``tx_reject``, ``rx_valid`` and ``rx_data`` (while valid) checked in every cycle.

Traffic comes in rounds of the benches' phases (:func:`fattree.sim.checks.circuit_tree.
bench_phases`: random, transpose, bit reversal, a random shift, a hot spot), each phase run
until every message is acknowledged and taken, so dropped heads, rejects and resends from the
window happen all the time; the receivers stall at random (``backpressure`` percent of
node-cycles, default the design table's 30), from a seeded generator, so full receive stores
turn heads away too.
"""

from __future__ import annotations

from ..checks.circuit_tree import bench_phases
from ..models.circuit_fast import CircuitFastTreeModel
from .harness import Port
from .messages import MessageSoak

__all__ = ["CircuitTreeFastSoak"]


class CircuitTreeFastSoak(MessageSoak):
    """``messages`` messages on the fast circuit tree of ``params``."""

    def __init__(self, params: dict, *, messages: int, seed: int, backpressure: int = 30):
        super().__init__(messages=messages, seed=seed, backpressure=backpressure)
        self.leaves, self.width, self.length = params["leaves"], params["width"], params["length"]
        self.model = CircuitFastTreeModel(
            self.leaves, self.width, self.length, params["seed"], params["window"]
        )
        self.nodes = self.leaves
        self.dest_bits = self.leaves.bit_length() - 1
        self.data_bits = self.width * self.length
        self.rejects = 0

    def output_ports(self):
        n = self.leaves
        outputs = [
            Port(fmt.format(k), 1)
            for fmt in ("tx__{}__ready", "tx_done__{}", "tx_reject__{}", "rx__{}__valid")
            for k in range(n)
        ] + [Port(f"rx__{k}__payload", self.data_bits) for k in range(n)]
        # The receive payload is not defined while it is not valid (the model leaves it None).
        return outputs, {f"rx__{k}__payload": f"rx__{k}__valid" for k in range(n)}

    def expected(self, out) -> list[int]:
        rx_data = [x if v else 0 for v, x in zip(out.rx_valid, out.rx_data, strict=True)]
        return out.tx_ready + out.tx_done + out.tx_reject + out.rx_valid + rx_data

    def acknowledged(self, out) -> int:
        self.rejects += sum(out.tx_reject)
        return sum(out.tx_done)

    def round(self, messages: int):
        return bench_phases(self.leaves, self.width, self.length, self.rng, messages)

    def summary(self) -> dict:
        return {
            **super().summary(),
            "rejects": self.rejects,
            "receiver_rejects": sum(ni.rx_rejects for ni in self.model.nis),
        }
