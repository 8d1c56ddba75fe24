"""Soak of the circuit-switched fat tree (:mod:`.messages` has the shape): every node's
``tx_ready``, ``tx_done``, ``tx_reject``, ``rx_valid`` and ``rx_data`` checked in every cycle.

Traffic comes in rounds of the benches' phases (:func:`fattree.sim.checks.circuit_tree.
bench_phases`: random, transpose, bit reversal, a random shift, a hot spot), each phase run
until every message is acknowledged and taken, so rejects and retries happen all the time;
the receivers stall at random (``backpressure`` percent of node-cycles, default the design
table's 30), from a seeded generator.
"""

from __future__ import annotations

from ..checks.circuit_tree import bench_phases
from ..models.circuit import CircuitTreeModel
from .harness import Port
from .messages import MessageSoak

__all__ = ["CircuitTreeSoak"]


class CircuitTreeSoak(MessageSoak):
    """``messages`` messages on the circuit tree of ``params``."""

    def __init__(self, params: dict, *, messages: int, seed: int, backpressure: int = 30):
        super().__init__(messages=messages, seed=seed, backpressure=backpressure)
        self.leaves, self.width, self.length = params["leaves"], params["width"], params["length"]
        extra = {"faults": params["faults"]} if params.get("faults") else {}
        self.model = CircuitTreeModel(
            self.leaves, self.width, self.length, params["seed"], params["retry"], **extra
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
        return outputs, {}

    def expected(self, out) -> list[int]:
        return out.tx_ready + out.tx_done + out.tx_reject + out.rx_valid + out.rx_data

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
