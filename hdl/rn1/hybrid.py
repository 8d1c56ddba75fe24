"""DeHon's hybrid fat-tree (DeHon 1993, "Hybrid fat-trees"), wired from
:func:`fattree.spec.rn1_hybrid.hybrid_network`: bidelta leaf clusters of 12, 48 or 192
processing nodes, alone (``stages=1``: one cluster, its links to the tree as channels of
their own) or under one stage of 8-wide unit trees (``stages=2``), with a swallow element
(:class:`fattree.hdl.rn1.swallow.RN1Swallow`) on every link between stacks.

Channels, in order (:attr:`HybridNetwork.inputs` / ``outputs``): node ``e``'s link ``k`` is
channel ``2e + k``, then the top links (of the cluster, or of the root's unit trees).
``i[c]`` goes into the network, ``o[c]`` comes out of it. Routes:
:meth:`HybridNetwork.heads`. The reference is :class:`fattree.sim.models.rn1.RN1HybridModel`.
The 12-node cluster is 7 routers; one stage above it, 656 routers and 1024 swallows: the
design ``rn1-hybrid`` (:func:`hybrid_top`) places them as instances of shared modules.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1_hybrid import RN1_HYBRID, hybrid_network
from .._validation import validates_parameters
from .modules import check_fits, network_modules, network_verilog
from .network import wire_network
from .router import channel_signature

__all__ = ["RN1Hybrid", "hybrid_top"]


class RN1Hybrid(wiring.Component):
    """The hybrid fat-tree.

    Parameters
    ----------
    cluster : int
        Processing nodes per leaf cluster: 12 (7 routers), 48 (40) or 192 (208).
    stages : int
        1: one leaf cluster; 2: 64 clusters under one node of 8-wide unit trees.
    seed : int
        Seed of the routers' LFSRs (``>= 0``); the wiring is the regular, dispersed one.
    hierarchy : bool
        False: every router a component (amaranth.sim runs it); True: every router and
        swallow an ``Instance`` of a shared module (:mod:`fattree.hdl.rn1.modules`), whose
        Verilog :meth:`verilog_modules` gives; the form two stages export in.

    Attributes
    ----------
    i : In(channel_signature()).array(N)
        Into the network: the nodes' links, then the top links.
    o : Out(channel_signature()).array(N)
        Out of the network, in the same order.
    """

    @validates_parameters
    def __init__(self, cluster: int = 12, stages: int = 1, seed: int = 1, hierarchy=False):
        self.cluster = RN1_HYBRID.check("cluster", cluster)
        self.stages = RN1_HYBRID.check("stages", stages)
        self.seed = RN1_HYBRID.check("seed", seed)
        if not isinstance(hierarchy, bool):
            raise TypeError(f"hierarchy must be True or False, not {hierarchy!r}")
        self.hierarchy = hierarchy
        self.net = hybrid_network(cluster, stages, None, seed)
        channel = channel_signature()
        n = len(self.net.inputs)
        super().__init__({"i": In(channel).array(n), "o": Out(channel).array(n)})

    def verilog_modules(self) -> str:
        """The Verilog modules the hierarchical form places ("" for the flat one)."""
        return network_modules(self.net.routers, self.net.swallows) if self.hierarchy else ""

    def structural_verilog(self, name: str) -> str | None:
        """The hierarchical form's whole Verilog: the top, module ``name``, written from the
        link list (:func:`network_verilog`: two stages are too wide for an Amaranth top),
        then the shared modules; None for the flat form (Amaranth exports it)."""
        if not self.hierarchy:
            return None
        self._MustUse__silence = True  # exported without elaboration: used all the same
        net = self.net
        top = network_verilog(name, net.routers, net.links, net.inputs, net.outputs, net.swallows)
        return top + self.verilog_modules()

    def elaborate(self, platform):
        net = self.net
        hierarchy = self.hierarchy
        if hierarchy and platform is not None:
            # Synthesis: its RTLIL holds no shared modules, so flat if it can fit at all.
            check_fits(
                f"the hybrid fat-tree of {self.stages} stages (cluster {self.cluster})", net.routers
            )
            hierarchy = False
        m = Module()
        wire_network(
            m,
            net.routers,
            net.links,
            net.inputs,
            net.outputs,
            self.i,
            self.o,
            net.swallows,
            hierarchy=hierarchy,
        )
        return m


def hybrid_top(cluster: int = 12, stages: int = 2, seed: int = 1) -> RN1Hybrid:
    """The design ``rn1-hybrid``: :class:`RN1Hybrid` in its hierarchical form."""
    return RN1Hybrid(cluster, stages, seed, hierarchy=True)
