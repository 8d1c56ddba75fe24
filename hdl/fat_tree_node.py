"""Leiserson's fat-tree node (Fat-Trees, 1985, Fig. 3): three input ports, three output ports.

Every input wire is fanned out to the two opposite output ports by a
:class:`~fattree.hdl.selector.Selector` (one per wire, so that every wire is timed by its own
M bit), and every output port is a :class:`~fattree.hdl.concentrator.ConcentratorSwitch` fed
by the selector branches of the two other inputs, in the order of
:data:`fattree.spec.capacities.PORT_GROUPS`. Address bits: on ``l_i`` and ``r_i``, 1 = up,
0 = across; on ``u_i``, 1 = right (``r_o``), 0 = left (``l_o``).

``start`` begins a delivery cycle. It arms each input wire's M-bit detector: the first 1 an
armed wire carries is an M bit and becomes the selector's ``start`` for that wire; later
1s are address, decision and data bits. It also releases every concentrator path.

Latency of a message's M bit through a node: 2 cycles in the selector, then b + 1 cycles per
concentrator stage of the output port (b decision bits each); its other bits follow on
consecutive cycles (see :mod:`fattree.sim.models.leiserson_tree`).
"""

from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int_range
from ..spec.capacities import PORT_GROUPS, TreeLayout
from ._validation import validates_parameters
from .concentrator import ConcentratorSwitch
from .selector import Selector

__all__ = ["FatTreeNode"]


class FatTreeNode(wiring.Component):
    """One node at ``level`` of a Leiserson fat-tree.

    Parameters
    ----------
    layout : TreeLayout
        Capacities and concentrator graphs of the whole tree.
    level : int
        The node's level, 0 (root) .. ``layout.levels - 1``.

    Attributes
    ----------
    start : In(1)
        Delivery-cycle start, shared by the whole tree.
    u_i, u_o : In(cap(level)), Out(cap(level))
        The channel to the parent (or the external interface at the root).
    l_i, l_o, r_i, r_o : In(cap(level + 1)), Out(cap(level + 1))
        The channels to the left and right children.
    """

    @validates_parameters
    def __init__(self, layout: TreeLayout, level: int):
        if not isinstance(layout, TreeLayout):
            raise TypeError(f"layout must be a TreeLayout, not {layout!r}")
        check_int_range("level", level, 0, layout.levels - 1)
        self.layout, self.level = layout, level
        up, down = layout.cap(level), layout.cap(level + 1)
        self.switches = {p: ConcentratorSwitch(layout.cascade(level, p)) for p in "ULR"}
        super().__init__(
            {
                "start": In(1),
                "u_i": In(up),
                "l_i": In(down),
                "r_i": In(down),
                "u_o": Out(up),
                "l_o": Out(down),
                "r_o": Out(down),
            }
        )

    def elaborate(self, platform):
        m = Module()
        inputs = {"U": self.u_i, "L": self.l_i, "R": self.r_i}
        branches: dict[tuple[str, int], list] = {}
        for port, bundle in inputs.items():
            ones, zeros = [], []
            for w in range(len(bundle)):
                selector = Selector(1)
                m.submodules[f"sel_{port.lower()}{w}"] = selector
                armed = Signal(name=f"armed_{port.lower()}{w}")
                armed_now = armed | self.start
                m.d.sync += armed.eq(armed_now & ~bundle[w])
                m.d.comb += [selector.start.eq(armed_now & bundle[w]), selector.i.eq(bundle[w])]
                ones.append(selector.one)
                zeros.append(selector.zero)
            branches[(port, 1)], branches[(port, 0)] = ones, zeros
        outputs = {"U": self.u_o, "L": self.l_o, "R": self.r_o}
        for port, switch in self.switches.items():
            m.submodules[f"switch_{port.lower()}"] = switch
            feed = [bit for group in PORT_GROUPS[port] for bit in branches[group]]
            m.d.comb += [
                switch.start.eq(self.start),
                switch.i.eq(Cat(*feed)),
                outputs[port].eq(switch.o),
            ]
        return m
