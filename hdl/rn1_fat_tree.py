"""DeHon's fat-tree of unit-tree stages (DeHon 1993, "Fat-tree composition"), wired from
:func:`fattree.spec.rn1_tree.fat_tree_network`: 2-wide unit trees at the processing nodes,
8-wide above, the links between stages dispersed over the parent's unit trees, and a swallow
element (:class:`fattree.hdl.rn1_swallow.RN1Swallow`) on every link that enters a unit tree
from another, so a route carries one head byte per unit tree crossed
(:meth:`fattree.spec.rn1_tree.FatTreeNetwork.heads`).

Channels, in order (:attr:`FatTreeNetwork.inputs` / ``outputs``): processing node ``e``'s
link ``k`` is channel ``2e + k``, then the root unit trees' top links. ``i[c]`` goes into
the network (``fwd`` in, ``bk`` out), ``o[c]`` comes out of it. The reference is
:class:`fattree.sim.models.rn1.RN1FatTreeModel`. One stage is the 2-wide unit tree
(``rn1-unit-tree``, 52 routers); two stages are 4160 routers and 4096 swallows.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int_range
from ..spec.rn1_tree import WIRED_STAGES, fat_tree_network
from ._validation import validates_parameters
from .rn1 import channel_signature
from .rn1_network import wire_network

__all__ = ["RN1FatTree"]


class RN1FatTree(wiring.Component):
    """The fat-tree.

    Parameters
    ----------
    stages : int
        Unit-tree stages, 1 (64 nodes) or 2 (4096 nodes).
    seed : int
        Seed of the routers' LFSRs (``>= 0``); the wiring is the regular, dispersed one.

    Attributes
    ----------
    i : In(channel_signature()).array(N)
        Into the network: the nodes' links, then the root's top links.
    o : Out(channel_signature()).array(N)
        Out of the network, in the same order.
    """

    @validates_parameters
    def __init__(self, stages: int = 1, seed: int = 1):
        check_int_range("stages", stages, min(WIRED_STAGES), max(WIRED_STAGES))
        self.seed = check_int_range("seed", seed, 0)
        self.stages = stages
        self.net = fat_tree_network(stages, None, seed)
        channel = channel_signature()
        n = len(self.net.inputs)
        super().__init__({"i": In(channel).array(n), "o": Out(channel).array(n)})

    def elaborate(self, platform):
        m = Module()
        net = self.net
        wire_network(
            m, net.routers, net.links, net.inputs, net.outputs, self.i, self.o, net.swallows
        )
        return m
