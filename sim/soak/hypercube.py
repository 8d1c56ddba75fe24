"""Soak of the Connection Machine hypercube (:mod:`.messages` has the shape): every
processor's ``tx_ready``, ``rx_valid`` and ``rx_data`` (while valid) and every node's
``refer`` checked in every cycle.

Traffic comes in rounds of the bench's phases (:func:`fattree.sim.checks.hypercube.
bench_phases`: random, a random permutation, transpose, bit reversal, a hot spot), each run
until every message is taken by its receiver; buffers fill and messages are referred; the
receivers stall at random (``backpressure`` percent, default the design table's 20).
"""

from __future__ import annotations

from ...spec.hypercube import tx_fields
from ..checks.hypercube import bench_phases
from ..models.hypercube import HypercubeModel
from .harness import Port
from .messages import MessageSoak

__all__ = ["HypercubeSoak"]


class HypercubeSoak(MessageSoak):
    """``messages`` messages on the hypercube of ``params``."""

    def __init__(self, params: dict, *, messages: int, seed: int, backpressure: int = 20):
        super().__init__(messages=messages, seed=seed, backpressure=backpressure)
        self.dim, self.procs = params["dim"], params["procs"]
        self.model = HypercubeModel(self.dim, self.procs, params["buffers"], params["data_bits"])
        self.nodes = self.model.processors
        fields = tx_fields(self.dim, self.procs, params["data_bits"])
        self.dest_bits, self.data_bits = fields["dest"], fields["data"]
        self.referrals = 0

    def output_ports(self):
        n = self.nodes
        outputs = (
            [Port(f"tx__{k}__ready", 1) for k in range(n)]
            + [Port(f"rx__{k}__valid", 1) for k in range(n)]
            + [Port(f"rx__{k}__payload", self.data_bits) for k in range(n)]
            # refer: the node's referrals of the last cycle, 0 .. dim.
            + [Port(f"refer__{k}", self.dim.bit_length()) for k in range(1 << self.dim)]
        )
        # A receive payload means nothing while it is not valid (as in the bench).
        return outputs, {f"rx__{k}__payload": f"rx__{k}__valid" for k in range(n)}

    def expected(self, out) -> list[int]:
        self.referrals += sum(out.refer)
        rx_data = [x if v else 0 for v, x in zip(out.rx_valid, out.rx_data, strict=True)]
        return out.tx_ready + out.rx_valid + rx_data + out.refer

    def round(self, messages: int):
        return bench_phases(self.dim, self.procs, self.data_bits, self.rng, messages)

    def summary(self) -> dict:
        return {**super().summary(), "referrals": self.referrals}
