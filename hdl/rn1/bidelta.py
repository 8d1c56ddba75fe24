"""The Transit bidelta network of RN1 routers (DeHon 1993; Knight 1989), wired from
:func:`fattree.spec.rn1_bidelta.bidelta`: ``log4 N`` stages of ``N / 4`` routers, randomly
wired redundant paths (seeded), the last stage in the dual-crossbar mode, every endpoint with
two ways in and two ways out.

Network channel ``2e + k`` is endpoint ``e``'s link ``k``: ``i[2e + k]`` into the network
(``fwd`` in, ``bk`` out: statuses and answers), ``o[2e + k]`` out of it. The protocol is one
RN1's (docs/dehon.md): a head names the stages' directions (:meth:`Bidelta.head`), a
transmission is delivered on one of the destination's two inputs or discarded and answered
BLOCKED; one cycle per stage each way. The reference is
:class:`fattree.sim.models.rn1.RN1BideltaModel`.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1 import router_seed
from ...spec.rn1_bidelta import ENDPOINT_LINKS, RN1_BIDELTA, bidelta
from .._validation import validates_parameters
from .network import wire_network
from .router import channel_signature

__all__ = ["RN1Bidelta"]


class RN1Bidelta(wiring.Component):
    """The whole network.

    Parameters
    ----------
    endpoints : int
        4, 16, 64 or 256.
    seed : int
        Seed of the wiring and of every router's LFSR (``>= 0``).

    Attributes
    ----------
    i : In(channel_signature()).array(2 * endpoints)
        Into the network.
    o : Out(channel_signature()).array(2 * endpoints)
        Out of the network.
    """

    @validates_parameters
    def __init__(self, endpoints: int = 16, seed: int = 1):
        self.endpoints = RN1_BIDELTA.check("endpoints", endpoints)
        self.seed = RN1_BIDELTA.check("seed", seed)
        self.net = bidelta(endpoints, seed)
        channel = channel_signature()
        n = ENDPOINT_LINKS * endpoints
        super().__init__({"i": In(channel).array(n), "o": Out(channel).array(n)})

    def elaborate(self, platform):
        m = Module()
        net = self.net
        routers = {
            (j, r): (net.mode(j), router_seed(self.seed, j, r))
            for j in range(net.stages)
            for r in range(net.routers_per_stage)
        }
        ends = [(e, k) for e in range(net.endpoints) for k in range(ENDPOINT_LINKS)]
        wire_network(
            m,
            routers,
            net.links,
            [("ep_out", e, k) for e, k in ends],
            [("ep_in", e, k) for e, k in ends],
            self.i,
            self.o,
        )
        return m
