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

With ``start_lead=1`` the node takes ``start`` one cycle early and registers a copy of it
for each input port's arming and each output port's switch, so that no single register drives
the whole node in the cycle it matters (the tree-wide ``start`` fan-out limits the clock); the
node then behaves exactly as with ``start_lead=0`` and ``start`` one cycle later. With
``start_lead=2`` the copies are made a cycle earlier still, and the arming of each input wire
registers ``armed | start`` itself, which takes one input off the M-bit detection.

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

__all__ = ["FatTreeNode", "start_copy"]


def start_copy(m, start, name: str) -> Signal:
    """A register holding ``start`` one cycle later, kept apart from its siblings.

    Logically its input is ``start``; it is written ``start | (start & copy)`` so that no two
    copies have the same input, which is what Yosys's ``opt_merge`` folds into one flip-flop
    (a ``keep`` on the wire does not stop it). The OR is gone after LUT mapping.
    """
    copy = Signal(name=name)
    m.d.sync += copy.eq(start | (start & copy))
    return copy


class FatTreeNode(wiring.Component):
    """One node at ``level`` of a Leiserson fat-tree.

    Parameters
    ----------
    layout : TreeLayout
        Capacities and concentrator graphs of the whole tree.
    level : int
        The node's level, 0 (root) .. ``layout.levels - 1``.
    start_lead : int
        Cycles ``start`` comes before the delivery cycle it begins: 0; 1 (registered copies per
        port inside the node); 2 (copies per port a cycle early, then a second copy per output
        port's switch, and each input wire's arming register takes its port's early copy).

    Attributes
    ----------
    start : In(1)
        Delivery-cycle start, shared by the whole tree (``start_lead`` cycles early).
    u_i, u_o : In(cap(level)), Out(cap(level))
        The channel to the parent (or the external interface at the root).
    l_i, l_o, r_i, r_o : In(cap(level + 1)), Out(cap(level + 1))
        The channels to the left and right children.
    """

    @validates_parameters
    def __init__(self, layout: TreeLayout, level: int, *, start_lead: int = 0):
        if not isinstance(layout, TreeLayout):
            raise TypeError(f"layout must be a TreeLayout, not {layout!r}")
        check_int_range("level", level, 0, layout.levels - 1)
        self.start_lead = check_int_range("start_lead", start_lead, 0, 2)
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
        lead = self.start_lead

        def early_copy(name):  # `start` one cycle before the delivery cycle (lead 2)
            return start_copy(m, self.start, f"start_{name}_early") if lead == 2 else None

        def start_for(name, early=None):  # `start` in the delivery cycle
            if lead == 0:
                return self.start
            return start_copy(m, early if early is not None else self.start, f"start_{name}")

        inputs = {"U": self.u_i, "L": self.l_i, "R": self.r_i}
        branches: dict[tuple[str, int], list] = {}
        for port, bundle in inputs.items():
            ones, zeros = [], []
            name = f"in_{port.lower()}"
            early = early_copy(name)
            start = None if early is not None else start_for(name)
            for w in range(len(bundle)):
                selector = Selector(1)
                m.submodules[f"sel_{port.lower()}{w}"] = selector
                armed_now = Signal(name=f"armed_now_{port.lower()}{w}")
                if early is not None:
                    # `armed | start` itself registered (from `start` a cycle early): the M-bit
                    # detection is then one register and the wire.
                    m.d.sync += armed_now.eq((armed_now & ~bundle[w]) | early)
                else:
                    armed = Signal(name=f"armed_{port.lower()}{w}")
                    m.d.comb += armed_now.eq(armed | start)
                    m.d.sync += armed.eq(armed_now & ~bundle[w])
                m.d.comb += [selector.start.eq(armed_now & bundle[w]), selector.i.eq(bundle[w])]
                ones.append(selector.one)
                zeros.append(selector.zero)
            branches[(port, 1)], branches[(port, 0)] = ones, zeros
        outputs = {"U": self.u_o, "L": self.l_o, "R": self.r_o}
        for port, switch in self.switches.items():
            m.submodules[f"switch_{port.lower()}"] = switch
            feed = [bit for group in PORT_GROUPS[port] for bit in branches[group]]
            name = f"switch_{port.lower()}"
            m.d.comb += [
                switch.start.eq(start_for(name, early_copy(name))),
                switch.i.eq(Cat(*feed)),
                outputs[port].eq(switch.o),
            ]
        return m
