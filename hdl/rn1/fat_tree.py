"""DeHon's fat-tree of unit-tree stages (DeHon 1993, "Fat-tree composition"), wired from
:func:`fattree.spec.rn1_tree.fat_tree_network`: 2-wide unit trees at the processing nodes,
8-wide above, the links between stages dispersed over the parent's unit trees, and a swallow
element (:class:`fattree.hdl.rn1.swallow.RN1Swallow`) on every link that enters a unit tree
from another, so a route carries one head byte per unit tree crossed
(:meth:`fattree.spec.rn1_tree.FatTreeNetwork.heads`).

Channels, in order (:attr:`FatTreeNetwork.inputs` / ``outputs``): processing node ``e``'s
link ``k`` is channel ``2e + k``, then the root unit trees' top links. ``i[c]`` goes into
the network (``fwd`` in, ``bk`` out), ``o[c]`` comes out of it. The reference is
:class:`fattree.sim.models.rn1.RN1FatTreeModel`. One stage is the 2-wide unit tree
(``rn1-unit-tree``, 52 routers); two stages are 4160 routers and 4096 swallows.

:class:`RN1FatTreeStream` (``rn1-fat-tree``) is the one-stage fat-tree with an
:class:`fattree.hdl.rn1.endpoint.RN1Endpoint` of route rule ``"unit-tree"`` on every node:
message streams in and out (docs/dehon.md, section "The 64-node fat-tree with endpoints").
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1_endpoint import RN1_FAT_TREE, endpoint_seed
from ...spec.rn1_tree import RN1_FAT_TREE_NETWORK, SUBTREES, fat_tree_network
from .._validation import validates_parameters
from .endpoint import RN1Endpoint, attach_endpoints, stream_members
from .modules import check_fits, network_modules, network_verilog
from .network import wire_network
from .router import channel_signature

__all__ = ["RN1FatTree", "RN1FatTreeStream", "fat_tree_network_top", "fat_tree_stream_top"]


class RN1FatTree(wiring.Component):
    """The fat-tree.

    Parameters
    ----------
    stages : int
        Unit-tree stages, 1 (64 nodes) or 2 (4096 nodes).
    seed : int
        Seed of the routers' LFSRs (``>= 0``); the wiring is the regular, dispersed one.
    hierarchy : bool
        False: every router a component (amaranth.sim runs it); True: every router and
        swallow an ``Instance`` of a shared module (:mod:`fattree.hdl.rn1.modules`), whose
        Verilog :meth:`verilog_modules` gives; the form two stages export in.

    Attributes
    ----------
    i : In(channel_signature()).array(N)
        Into the network: the nodes' links, then the root's top links.
    o : Out(channel_signature()).array(N)
        Out of the network, in the same order.
    """

    @validates_parameters
    def __init__(self, stages: int = 1, seed: int = 1, hierarchy: bool = False):
        RN1_FAT_TREE_NETWORK.check("stages", stages)
        self.seed = RN1_FAT_TREE_NETWORK.check("seed", seed)
        if not isinstance(hierarchy, bool):
            raise TypeError(f"hierarchy must be True or False, not {hierarchy!r}")
        self.hierarchy = hierarchy
        self.stages = stages
        self.net = fat_tree_network(stages, None, seed)
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
            check_fits(f"the fat-tree of {self.stages} unit-tree stages", net.routers)
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


def fat_tree_network_top(stages: int = 2, seed: int = 1) -> RN1FatTree:
    """The design ``rn1-fat-tree-network``: :class:`RN1FatTree` in its hierarchical form."""
    return RN1FatTree(stages, seed, hierarchy=True)


class RN1FatTreeStream(wiring.Component):
    """DeHon's 64-node fat-tree (one unit-tree stage: the 2-wide unit tree, 52 RN1) with an
    :class:`RN1Endpoint` on every processing node's two links: streams of messages in and
    out.

    Each endpoint makes its head bytes by the route rule ``"unit-tree"`` from its own number
    and the destination (:func:`fattree.spec.rn1_endpoint.unit_tree_head`). The root's 32
    top links each way are tied off idle: every route between two of the 64 nodes turns
    within the unit tree (no head names the up direction at an up router), so nothing ever
    goes out of the top or comes in from it; a second stage above needs the swallows and
    two-byte heads of :class:`RN1FatTree` of two stages instead.

    Parameters
    ----------
    seed : int
        Seed of the routers' LFSRs and the endpoints' (``>= 0``); the wiring is the regular,
        dispersed one.
    retry : str or int
        The endpoints' retry strategy (``"immediate"``, ``"round"``, ``"backoff"``).
    max_bytes : int
        Payload bytes per message at most, ``1 .. 64``.
    hierarchy : bool
        False: every router a component (amaranth.sim runs it); True: the routers are
        ``Instance`` s of the shared modules of :mod:`fattree.hdl.rn1.modules` (one per router
        mode), which the Verilog export appends: a file of the endpoints and three router
        modules instead of 52 copies of the router.

    Attributes
    ----------
    tx : In(tx_signature(64)).array(64)
    rx : Out(rx_signature()).array(64)
    sent, retries, received, dropped : Out(16).array(64)
        Each endpoint's counters (:class:`RN1Endpoint`).

    Notes
    -----
    For ``retry="round"``, every endpoint's ``go`` rises one cycle after a cycle in which no
    endpoint had a transmission under way.
    """

    #: Processing nodes.
    endpoints = SUBTREES

    @validates_parameters
    def __init__(self, seed=1, retry="immediate", max_bytes=8, *, hierarchy=False):
        self.seed = RN1_FAT_TREE.check("seed", seed)
        self.retry = RN1_FAT_TREE.check("retry", retry)
        self.max_bytes = RN1_FAT_TREE.check("max_bytes", max_bytes)
        if not isinstance(hierarchy, bool):
            raise TypeError(f"hierarchy must be True or False, not {hierarchy!r}")
        self.hierarchy = hierarchy
        super().__init__(stream_members(self.endpoints))

    def elaborate(self, platform):
        m = Module()
        n = self.endpoints
        # Unconnected, the top links' inputs stay 0: idle forward words into the top,
        # no status back from above.
        m.submodules.net = net = RN1FatTree(1, self.seed, hierarchy=self.hierarchy)
        endpoints = [
            RN1Endpoint(n, self.retry, endpoint_seed(self.seed, e), self.max_bytes, "unit-tree", e)
            for e in range(n)
        ]
        attach_endpoints(m, self, net, endpoints)
        return m


def fat_tree_stream_top(seed=1, retry="immediate", max_bytes=8) -> RN1FatTreeStream:
    """The design ``rn1-fat-tree``: :class:`RN1FatTreeStream` in its hierarchical form."""
    return RN1FatTreeStream(seed, retry, max_bytes, hierarchy=True)
