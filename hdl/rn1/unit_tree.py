"""One DeHon unit tree of RN1 routers (DeHon 1993), wired from
:func:`fattree.spec.rn1_tree.unit_tree`: three down layers and one up layer with lateral
crossovers, 64 subtrees of ``width`` links each way, ``16 width`` links each way at the top.
The 2-wide unit tree is a whole fat-tree of one stage: 64 processing nodes with two network
inputs and two outputs each.

Channels, in order (:meth:`fattree.spec.rn1_tree.UnitTree.inputs` / ``outputs``): subtree
``t``'s link ``k`` is channel ``width * t + k``, then the top links. ``i[c]`` goes into the
tree (``fwd`` in, ``bk`` out), ``o[c]`` comes out of it. A head names the up router's
crossover level (or 3: out of the top) and then the destination's digits
(:meth:`UnitTree.route`). The reference is :class:`fattree.sim.models.rn1.RN1UnitTreeModel`.
"""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...spec.rn1_tree import RN1_UNIT_TREE, unit_tree
from .._validation import validates_parameters
from .modules import network_modules, network_verilog
from .network import wire_network
from .router import channel_signature

__all__ = ["RN1UnitTree"]


class RN1UnitTree(wiring.Component):
    """The unit tree.

    Parameters
    ----------
    width : int
        Links per subtree and direction: 2 (52 routers) or 8 (208 routers).
    seed : int
        Seed of every router's LFSR (``>= 0``); the wiring is the regular one.

    Attributes
    ----------
    i : In(channel_signature()).array(80 * width)
        Into the tree: the subtrees' up links, then the top's down links.
    o : Out(channel_signature()).array(80 * width)
        Out of the tree: the subtrees' down links, then the top's up links.
    """

    @validates_parameters
    def __init__(self, width: int = 2, seed: int = 1):
        self.width = RN1_UNIT_TREE.check("width", width)
        self.seed = RN1_UNIT_TREE.check("seed", seed)
        self.tree = unit_tree(width)
        channel = channel_signature()
        n = len(self.tree.inputs())
        super().__init__({"i": In(channel).array(n), "o": Out(channel).array(n)})

    def structural_verilog(self, name: str) -> str:
        """The tree's Verilog (``fattree verilog rn1-unit-tree``), module ``name``: written
        from the link list over one shared module per router mode, the seeds on ports
        (:mod:`fattree.hdl.rn1.modules`), so the 8-wide tree's 208 routers export in seconds;
        amaranth.sim and synthesis elaborate the routers as components."""
        self._MustUse__silence = True  # exported without elaboration: used all the same
        tree = self.tree
        routers = tree.router_modes(self.seed)
        top = network_verilog(name, routers, tree.links, tree.inputs(), tree.outputs())
        return top + network_modules(routers)

    def elaborate(self, platform):
        m = Module()
        tree = self.tree
        wire_network(
            m,
            tree.router_modes(self.seed),
            tree.links,
            tree.inputs(),
            tree.outputs(),
            self.i,
            self.o,
        )
        return m
